"""tf-idf rows of a large vocabulary kept in a file, not in memory.

A UMLS-size vocabulary's rows take 1.2 GiB (3.26M names). A build held them
beside faiss's codes, which brought its peak over 4 GB, although the saved
index memory-maps them anyway. So a large vocabulary's rows are written to
an unnamed file (gone when closed, even after a crash) in the cache folder
as they are computed, and mapped back: on disk, not in /tmp (a tmpfs there
is memory); smaller ones are written into arrays sized for them. A pass
over every row gives its pages back as it goes (`drop_pages`), and
`save_rows` writes rows a chunk at a time. Memory a build freed is given
back to the system too (`give_back_freed_memory`).
"""
import ctypes
import ctypes.util
import mmap
import os
import tempfile
import warnings
import zipfile
from pathlib import Path
from typing import Tuple, Union

import numpy as np
from scipy import sparse

from .storage import cache_folder
from .storage import replaced_file

# Rows' bytes from which they are kept in a file: above MeSH's or MEDIC's
# (tens of MB), under a million names' (about 300 MB).
FILE_FROM_BYTES = 1 << 28
# Bytes written at a time by save_rows.
_SAVE_CHUNK = 1 << 24


class _RowsWriter:
    """CSR rows of known size, given in order a chunk at a time (`add`),
    then the whole matrix (`rows`)."""

    def __init__(self, n_rows: int, n_columns: int, nnz: int):
        self._shape = (n_rows, n_columns)
        self._nnz = nnz
        # Columns and row starts of one type, as scipy keeps them: a search
        # on mixed types would convert every column to int64 each time.
        self._index = np.dtype(np.int32 if nnz < 2**31 and n_columns < 2**31 else np.int64)
        self._filled_rows = 0
        self._filled = 0

    def add(self, rows: sparse.csr_matrix) -> None:
        if self._filled + rows.nnz > self._nnz or self._filled_rows + rows.shape[0] > self._shape[0]:
            raise ValueError(f"rows beyond the {self._shape[0]:,} rows and {self._nnz:,} entries planned")
        self._put(rows.data.astype(np.float32, copy=False), rows.indices.astype(self._index, copy=False),
                  rows.indptr[1:].astype(self._index) + self._filled)
        self._filled += rows.nnz
        self._filled_rows += rows.shape[0]

    def rows(self) -> sparse.csr_matrix:
        if (self._filled_rows, self._filled) != (self._shape[0], self._nnz):
            raise ValueError(f"{self._filled_rows:,} rows of {self._shape[0]:,} written")
        return sparse.csr_matrix(self._arrays(), shape=self._shape)

    def _put(self, data: np.ndarray, indices: np.ndarray, starts: np.ndarray) -> None:
        """Write the next rows' values, columns and row ends."""
        raise NotImplementedError

    def _arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        raise NotImplementedError


class RowsInMemory(_RowsWriter):
    """Rows written into arrays sized for them."""

    def __init__(self, n_rows: int, n_columns: int, nnz: int):
        super().__init__(n_rows, n_columns, nnz)
        self._data = np.empty(nnz, dtype=np.float32)
        self._indices = np.empty(nnz, dtype=self._index)
        self._indptr = np.zeros(n_rows + 1, dtype=self._index)

    def _put(self, data: np.ndarray, indices: np.ndarray, starts: np.ndarray) -> None:
        at, row = self._filled, self._filled_rows
        self._data[at : at + len(data)] = data
        self._indices[at : at + len(indices)] = indices
        self._indptr[row + 1 : row + 1 + len(starts)] = starts

    def _arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        return self._data, self._indices, self._indptr


class RowsFile(_RowsWriter):
    """Rows written to an unnamed file, then mapped back read-only: each
    page is read when a search touches it."""

    def __init__(self, folder: Union[str, Path], n_rows: int, n_columns: int, nnz: int):
        if not hasattr(os, "pwrite"):  # Windows: the rows stay in memory
            raise OSError("this system has no positioned writes (os.pwrite)")
        super().__init__(n_rows, n_columns, nnz)
        Path(folder).mkdir(parents=True, exist_ok=True)
        self._file = tempfile.TemporaryFile(dir=folder)
        self._indices_at = nnz * 4  # float32 values first, then the columns, then the row starts
        self._indptr_at = self._indices_at + nnz * self._index.itemsize
        os.pwrite(self._file.fileno(), np.zeros(1, dtype=self._index).tobytes(), self._indptr_at)

    def _put(self, data: np.ndarray, indices: np.ndarray, starts: np.ndarray) -> None:
        fd, size = self._file.fileno(), self._index.itemsize
        os.pwrite(fd, data.tobytes(), self._filled * 4)
        os.pwrite(fd, indices.tobytes(), self._indices_at + self._filled * size)
        os.pwrite(fd, starts.tobytes(), self._indptr_at + (self._filled_rows + 1) * size)

    def _arrays(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        self._file.flush()
        return tuple(
            np.memmap(self._file, dtype=dtype, mode="r", offset=offset, shape=(count,))
            for dtype, offset, count in ((np.float32, 0, self._nnz), (self._index, self._indices_at, self._nnz),
                                         (self._index, self._indptr_at, self._shape[0] + 1))
        )


def rows_writer(n_rows: int, n_columns: int, nnz: int) -> _RowsWriter:
    """Where a build's rows go: a file in the cache folder from
    FILE_FROM_BYTES on, else memory, as where no file can be made there (a
    folder that cannot be written costs memory, not the build)."""
    if nnz * 8 >= FILE_FROM_BYTES:
        try:
            return RowsFile(cache_folder() / "spill", n_rows, n_columns, nnz)
        except OSError as error:
            warnings.warn(f"the tf-idf rows are kept in memory: {error}", UserWarning)
    return RowsInMemory(n_rows, n_columns, nnz)


def drop_pages(rows: sparse.csr_matrix) -> None:
    """Give back the pages of `rows`' memory maps that this process has read
    (they stay in the page cache, and a later read maps them again); rows
    in memory are left as they are."""
    for part in (rows.data, rows.indices, rows.indptr):
        while part is not None and not isinstance(part, np.memmap):
            part = part.base
        region = getattr(part, "_mmap", None)
        if region is not None and hasattr(region, "madvise"):  # not on Windows
            region.madvise(mmap.MADV_DONTNEED)


def give_back_freed_memory() -> None:
    """Return the C heap's free pages to the system (glibc's malloc_trim;
    elsewhere nothing): memory that faiss freed among blocks still in use
    stayed resident, 1.5 GiB of a UMLS-size index once it was mapped from
    its file instead."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c")).malloc_trim
    except (OSError, AttributeError, TypeError):  # no C library found, or not glibc's
        return
    trim(0)


def save_rows(path: Union[str, Path], rows: sparse.csr_matrix) -> None:
    """`rows` as scipy's save_npz(compressed=False) saves them, written a
    chunk at a time with their mapped pages given back as it goes (saving a
    UMLS-size index read its 1.2 GiB of rows into memory), into a new file
    that then replaces `path`: `rows` may be mapped from it."""
    members = {"indices": rows.indices, "indptr": rows.indptr, "format": np.array(b"csr"),
               "shape": np.array(rows.shape), "data": rows.data}
    with replaced_file(path) as written, zipfile.ZipFile(written, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in members.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array_header_2_0(member, np.lib.format.header_data_from_array_1_0(array))
                flat = array.reshape(-1)
                step = max(1, _SAVE_CHUNK // max(1, array.itemsize))
                for start in range(0, len(flat), step):
                    member.write(np.ascontiguousarray(flat[start : start + step]).tobytes())
                    drop_pages(rows)
