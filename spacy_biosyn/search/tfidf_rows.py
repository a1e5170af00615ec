"""The names' tf-idf rows on disk (an index's sparse.npz), in one of two
layouts, both numpy archives read without pickle:

- counts: each entry's n-gram count (uint8, uint16 past 255) and column
  (uint16, int32 past 65,536 columns), the row starts and the idf weights,
  deflated. Loading weighs them again (tfidf.weigh) into the very float32
  rows that were saved. MEDIC's 2.6M entries take 1.7 MB instead of 21.0,
  and about 50 ms to read and weigh in a warm process.
  Rows up to COUNTS_UP_TO_BYTES are saved so, where the idf is given and
  every row's counts are found (tfidf.counts_behind); else all of them are
  saved as float32.
- float32: scipy's uncompressed CSR, memory-mapped at load, so that a
  search reads only the rows it scores: a UMLS-size vocabulary's 1.2 GiB
  of rows stay on disk.
"""
import zipfile
import zlib
from pathlib import Path
from typing import Optional, Union

import numpy as np
from scipy import sparse

from ..errors import SavedStateError
from ..files.spill import save_rows
from ..files.storage import mapped_npz, replaced_file
from .tfidf import counts_behind, weigh

# float32 rows (a value and a column per entry) of this many bytes or
# fewer are saved as counts: MEDIC's take 21 MB. Larger ones would be
# held whole once weighed, where mapped they stay on disk until searched.
COUNTS_UP_TO_BYTES = 1 << 26
_COUNTS_FORMAT = b"tfidf-counts"


def save_tfidf_rows(path: Union[str, Path], rows: sparse.csr_matrix, idf: Optional[np.ndarray] = None) -> None:
    """Save `rows` into a new file that replaces `path`: as counts where
    `idf` is the weights they were made with and they are small enough,
    else as float32 (they may be mapped from `path`)."""
    counts = None
    if idf is not None and rows.nnz * 8 <= COUNTS_UP_TO_BYTES:
        counts = counts_behind(rows, idf)
    if counts is None:
        save_rows(path, rows)
        return
    columns = rows.indices.astype(np.uint16 if rows.shape[1] <= 1 << 16 else np.int32)
    with replaced_file(path) as written, written.open("wb") as f:
        np.savez_compressed(f, format=np.array(_COUNTS_FORMAT), shape=np.array(rows.shape), counts=counts,
                            columns=columns, indptr=rows.indptr, idf=np.asarray(idf, dtype=np.float32))


def load_tfidf_rows(path: Union[str, Path]) -> sparse.csr_matrix:
    """The rows saved at `path`, in either layout, or in scipy's compressed
    save_npz (earlier versions); SavedStateError naming the file where it
    holds neither, or a member that does not unpack."""
    try:
        return _loaded_rows(path)
    except SavedStateError:
        raise
    # a compressed member read lazily: its data cut or flipped
    except (ValueError, OSError, EOFError, NotImplementedError, zipfile.BadZipFile, zlib.error) as error:
        raise SavedStateError(f"{path} does not unpack ({error}); save or build the pipeline again") from None


def _loaded_rows(path: Union[str, Path]) -> sparse.csr_matrix:
    try:
        arrays = mapped_npz(path)
        kind = arrays["format"].item() if "format" in arrays else None
    except SavedStateError:
        raise
    except (ValueError, zipfile.BadZipFile) as error:  # objects, cut short, not a zip, a format of many values
        raise SavedStateError(f"{path} does not hold tf-idf rows ({error}); save or build the pipeline again") from None
    if kind == _COUNTS_FORMAT:
        return _weighed(path, arrays)
    if kind != b"csr" or "shape" not in arrays:
        raise SavedStateError(f"{path} does not hold a CSR matrix of tf-idf rows")
    return _checked_csr(path, arrays)


def _checked_csr(path: Union[str, Path], arrays: dict) -> sparse.csr_matrix:
    """The float32 layout's rows, every array checked before scipy's
    kernels read them: their C code trusts the column indices and row
    starts, and a saved file edited to hold negative columns freed memory
    twice (double free, the process killed), columns past the width read
    past the end of an array, and NaN weights made every search's order
    meaningless. A UMLS-size file is read once whole for this (its pages
    stay mapped, not held)."""
    shape, data, indices, indptr = (arrays.get(key) for key in ("shape", "data", "indices", "indptr"))
    valid = (
        all(isinstance(a, np.ndarray) and a.ndim == 1 for a in (shape, data, indices, indptr))
        and len(shape) == 2 and shape.dtype.kind in "ui" and indices.dtype.kind in "ui"
        and indptr.dtype.kind in "ui" and data.dtype.kind == "f" and len(data) == len(indices)
    )
    if valid:
        n_rows, n_columns = (int(n) for n in shape)
        valid = n_rows >= 0 and n_columns >= 0 and len(indptr) == n_rows + 1
    if valid:
        starts = np.asarray(indptr, dtype=np.int64)
        valid = (
            starts[0] == 0 and starts[-1] == len(indices) and bool((starts[1:] >= starts[:-1]).all())
            and (len(indices) == 0 or (int(indices.min()) >= 0 and int(indices.max()) < n_columns))
            and bool(np.isfinite(data).all()) and bool((data >= 0).all())
        )
    if not valid:
        raise SavedStateError(
            f"{path} does not hold tf-idf rows scipy can read safely (real weights, finite and not negative; "
            "row starts in order; each column within the width): the file was edited, or is not this "
            "package's; build the linker again"
        )
    return sparse.csr_matrix((data, indices, indptr), shape=(n_rows, n_columns))


def _weighed(path: Union[str, Path], arrays: dict) -> sparse.csr_matrix:
    """Saved counts as float32 rows, each array checked first: a column past
    the idf, or row starts out of order, would score wrong or crash."""
    shape, counts, columns, indptr, idf = (arrays.get(key) for key in ("shape", "counts", "columns", "indptr", "idf"))
    arrays_present = all(isinstance(a, np.ndarray) and a.ndim == 1 for a in (shape, counts, columns, indptr, idf))
    valid = (
        arrays_present and len(shape) == 2 and shape.dtype.kind in "ui" and indptr.dtype.kind in "ui"
        and counts.dtype in (np.uint8, np.uint16) and columns.dtype in (np.uint16, np.int32) and idf.dtype == np.float32
    )
    if valid:
        n_rows, n_columns = (int(n) for n in shape)
        starts = indptr.astype(np.int64)
        valid = (
            n_rows >= 0 and len(idf) == n_columns and len(indptr) == n_rows + 1 and len(columns) == len(counts)
            and starts[0] == 0 and starts[-1] == len(counts) and (starts[1:] >= starts[:-1]).all()
            and (counts >= 1).all() and (len(columns) == 0 or (columns.min() >= 0 and columns.max() < n_columns))
            and np.isfinite(idf).all() and (idf > 0).all()
        )
    if valid:
        index = np.int32 if len(counts) < 2**31 else np.int64
        counted = sparse.csr_matrix((counts, columns.astype(index), starts.astype(index)), shape=(n_rows, n_columns))
        with np.errstate(over="ignore", invalid="ignore"):  # refused below, not warned of
            rows = weigh(counted, idf)
        valid = np.isfinite(rows.data).all()  # an idf past float32's squares
    if not valid:
        raise SavedStateError(
            f"{path} does not hold tf-idf counts (row starts in order, each entry's column within the "
            "idf weights and a count of 1 or more): the file was edited, or is not this package's; build the linker again"
        )
    return rows
