"""Name vectors as 16-bit integers with a scale per name: half float32's
bytes on disk, and back to float32 in one vectorized pass (a tenth of a
second less than float16's conversion for MEDIC's 72k x 384 on an AVX2 CPU,
whose NumPy converts float16 one value at a time). Each name's largest
component gets +-32767, so a component is off by at most half a step:
1.4e-5 on MiniLM's unit vectors, where float16 is off by up to 2.4e-4."""
from pathlib import Path
from typing import Tuple

import numpy as np

from ..errors import SavedStateError
from ..files.storage import read_npy_header
from .name_vectors import check_finite

_LARGEST = 32767
# Dimensions read and decoded at a time at load (MEDIC: 32 x 72k codes, 4.6 MB).
_COLUMNS_AT_ONCE = 32


def int16_codes(vectors: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(codes, scales) of float32 `vectors`: codes[i] * scales[i] ~ vectors[i]."""
    check_finite(vectors)
    scales = (np.abs(vectors).max(axis=1) / _LARGEST).astype(np.float32)
    scales[scales == 0] = 1  # a zero vector stays zero
    codes = np.rint(vectors / scales[:, None]).astype(np.int16)
    return codes, scales


def from_int16(codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The float32 vectors, column-major as the search reads them."""
    return decode_into(np.empty(codes.shape, dtype=np.float32, order="F"), codes, scales)


def decode_into(out: np.ndarray, codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """`out`, float32, filled with the vectors of `codes`: the one decoding
    of the load and of a search over codes held as they are saved."""
    out[...] = codes
    out *= scales[:, None]
    return out


def read_int16(file: Path, codes: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """from_int16 of the codes saved in the .npy `file`, whose memory map
    `codes` was checked, read a few dimensions at a time: a mapped file's
    pages stay resident until it is unmapped, and decoding MEDIC's whole
    map held its 53 MiB beside the 105 of the vectors at the load's peak."""
    if not codes.flags.f_contiguous:  # saved row-major: the map as it is
        return from_int16(codes, scales)
    n_names, dim = codes.shape
    vectors = np.empty((n_names, dim), dtype=np.float32, order="F")
    block = np.empty(n_names * min(_COLUMNS_AT_ONCE, dim), dtype=np.int16)
    try:
        with open(file, "rb") as f:
            _check_length(f, file, codes)
            for first in range(0, dim, _COLUMNS_AT_ONCE):
                last = min(first + _COLUMNS_AT_ONCE, dim)
                part = block[: n_names * (last - first)]
                if f.readinto(part) != part.nbytes:
                    raise SavedStateError(f"{file} changed while it was read; load the pipeline again")
                # Column-major: the file holds each dimension's codes for all names in turn.
                np.multiply(part.reshape(last - first, n_names).T, scales[:, None], out=vectors[:, first:last])
    except OSError as error:
        raise SavedStateError(f"{file} cannot be read ({error}); load the pipeline again") from None
    return vectors


def checked_map(file: Path, codes: np.ndarray) -> np.ndarray:
    """The memory map `codes` of the .npy `file`, held as it is, once the
    file is found to hold no more bytes than its header says."""
    try:
        with open(file, "rb") as f:
            _check_length(f, file, codes)
    except OSError as error:
        raise SavedStateError(f"{file} cannot be read ({error}); load the pipeline again") from None
    return codes


def _check_length(f, file: Path, codes: np.ndarray) -> None:
    """Leaves `f` at the codes, after its header (np.load checked it)."""
    read_npy_header(f)
    start = f.tell()
    size = f.seek(0, 2)
    if size - start != codes.nbytes:
        raise SavedStateError(f"{file} holds {size - start:,} bytes after its header, which says "
                              f"{codes.nbytes:,}; save or build the pipeline again")
    f.seek(start)
