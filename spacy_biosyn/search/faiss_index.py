"""Approximate search for dictionaries of millions of names, with faiss.

Each mention's candidates are the best names by dense score from any faiss
index (HNSW, IVF-PQ, fp16 or int8 storage, by faiss's factory string) and
the best by sparse score, and S is computed on their union with the vectors
that index stores. A module of its own: faiss is imported only by pipelines
that use it.
"""
from __future__ import annotations  # faiss's types name faiss, which may be missing

import os
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, Optional, Tuple, Union

import numpy as np
from scipy import sparse
from sklearn.decomposition import TruncatedSVD

from ..files.spill import drop_pages
from ..files.storage import replaced_file
from ..parts import FAISS_INDEX, registry
from ..ty import NameVectors
from .index_base import FAISS_FILE, IndexBase, import_faiss, save_array
from .name_vectors import check_finite
from .scoring import biosyn_scores, pooled_sparse_scores, sparse_scores, top_k

try:
    import faiss
except ImportError:
    # The name must still enumerate and resolve where the extra is missing
    # (catalogue imports every entry point): the constructor says what to install.
    faiss = None

# Names' tf-idf rows projected and added at a time.
_ADD_CHUNK = 65_536


@registry.misc(FAISS_INDEX)
class FaissIndex(IndexBase):
    """Approximate search for large dictionaries. `factory` is a faiss
    index_factory string for the name vectors: "HNSW32" (graph, fp32),
    "HNSW32,SQfp16" or "HNSW32,SQ8" (graph over fp16 / int8 vectors),
    "IVF4096,PQ48" (inverted lists over product-quantized vectors).
    `ef_search` and `nprobe` trade speed for recall where the index has them.

    Each mention's candidates are the `pool_size` best names by dense score
    and the `pool_size` best by sparse score; S is computed on their union.
    With `sparse_dims` > 0 the sparse pool comes from a second faiss index
    (`sparse_factory`) over the tf-idf rows projected to that many dimensions
    by a truncated SVD, and tf-idf is computed for the pooled names only;
    with 0 every name's tf-idf is scored, which grows with the dictionary.
    """

    def __init__(
        self,
        factory: str = "HNSW32,SQfp16",
        pool_size: int = 64,
        ef_search: int = 128,
        nprobe: int = 32,
        sparse_dims: int = 0,
        sparse_factory: str = "HNSW32",
        max_training_names: int = 200_000,
        chunk_size: int = 16,
        seed: int = 0,
    ):
        if pool_size < 1:
            raise ValueError(f"pool_size must be positive, got {pool_size}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        super().__init__()
        import_faiss(FAISS_INDEX)
        self.factory = factory
        self.pool_size = pool_size
        self.ef_search = ef_search
        self.nprobe = nprobe
        self.sparse_dims = sparse_dims
        self.sparse_factory = sparse_factory
        self.max_training_names = max_training_names
        # Small chunks: scoring every name's tf-idf takes (chunk x names) floats.
        self.chunk_size = chunk_size
        self.seed = seed
        self._dense: Optional[faiss.Index] = None
        self._projection: Optional[np.ndarray] = None  # tf-idf vocabulary x sparse_dims
        self._sparse_index: Optional[faiss.Index] = None
        # "dense", "sparse": the file each index is mapped from, where from_disk mapped it.
        self._mapped_from: Dict[str, Optional[_Source]] = {}

    @property
    def dim(self) -> int:
        return self._dense.d

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        return self._dense.reconstruct_batch(ids.ravel()).reshape(*ids.shape, self.dim)

    @property
    def holds_exact_vectors(self) -> bool:
        # float32 storage ("Flat", "HNSW32"); SQ and PQ codes decode to approximations
        index = faiss.downcast_index(self._dense)
        storage = faiss.downcast_index(index.storage) if isinstance(index, faiss.IndexHNSW) else index
        return isinstance(storage, faiss.IndexFlat)

    def _index_sparse(self) -> None:
        if not self.sparse_dims:
            return
        rows = self._sparse
        dims = min(self.sparse_dims, rows.shape[1] - 1)
        sample = rows[self._training_rows(rows.shape[0])]
        drop_pages(rows)
        svd = TruncatedSVD(dims, random_state=self.seed).fit(sample)
        self._projection = np.ascontiguousarray(svd.components_.T, dtype=np.float32)
        self._sparse_index = self._filled(self.sparse_factory, dims, lambda: self._project(sample), self._projected_chunks())

    def _projected_chunks(self) -> Iterator[np.ndarray]:
        # A chunk at a time (4M names' rows at once took a GiB), each chunk's
        # pages given back where the rows are mapped from a file.
        for start in range(0, len(self), _ADD_CHUNK):
            yield self._project(self._sparse[start : start + _ADD_CHUNK])
            drop_pages(self._sparse)

    def add(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> None:
        if any(self._mapped_from.values()) and len(vectors):
            # faiss aborts the process when an index mapped from its file grows.
            self._dense = _in_memory(self._dense, self._mapped_from.get("dense"), self)
            if self._sparse_index is not None:
                self._sparse_index = _in_memory(self._sparse_index, self._mapped_from.get("sparse"), self)
            self._mapped_from = {}
        super().add(vectors, sparse_vectors)
        if self.sparse_dims and sparse_vectors.shape[0]:
            self._sparse_index.add(self._project(sparse_vectors))

    def _build_dense(self, vectors: NameVectors) -> None:
        # Trained on a sample, then filled a chunk at a time as the names are encoded.
        self._dense = self._filled(self.factory, vectors.dim, lambda: vectors.take(self._training_rows(len(vectors))),
                                   vectors.chunks())
        self._mapped_from = {}  # both indexes built in memory

    def _add_dense(self, vectors: np.ndarray) -> None:
        self._dense.add(check_finite(vectors))

    def _project(self, sparse_rows: sparse.csr_matrix) -> np.ndarray:
        return np.ascontiguousarray(sparse_rows @ self._projection, dtype=np.float32)

    def _filled(
        self, factory: str, dim: int, sample: Callable[[], np.ndarray], chunks: Iterable[np.ndarray]
    ) -> faiss.Index:
        """A faiss index trained on `sample()` where it needs training (the
        sample, 200k names' vectors: 0.29 GiB, is freed before the fill),
        then filled with each chunk as it comes."""
        try:
            index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as error:
            raise ValueError(f"FaissIndex: faiss cannot build {factory!r}: {error}") from None
        if not index.is_trained:
            index.train(check_finite(sample()))
        for chunk in chunks:
            index.add(check_finite(chunk))
        _set_search_parameters(index, self.ef_search, self.nprobe)
        return index

    def _training_rows(self, n_rows: int) -> np.ndarray:
        # A fixed sample keeps builds reproducible and bounds k-means' and SVD's time.
        if n_rows <= self.max_training_names:
            return np.arange(n_rows)
        return np.sort(np.random.default_rng(self.seed).choice(n_rows, self.max_training_names, replace=False))

    def _chunk_size(self) -> int:
        return self.chunk_size

    def _pool(self, k: int) -> int:
        return min(max(self.pool_size, k), len(self))

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        pool = self._pool(k)
        if self.sparse_dims:
            _, sparse_pool = self._sparse_index.search(self._project(sparse_q), pool)
            sparse_of = lambda pooled: pooled_sparse_scores(self._sparse, sparse_q, pooled)  # noqa: E731
        else:
            every_name = sparse_scores(self._sparse, sparse_q)
            sparse_pool = top_k(weight * every_name, pool)
            sparse_of = lambda pooled: np.take_along_axis(every_name, pooled, axis=1)  # noqa: E731
        _, dense_pool = self._dense.search(dense_q, pool)
        candidates = np.concatenate([dense_pool, sparse_pool], axis=1)
        # An approximate index may find fewer names than asked (id -1): those
        # slots repeat a found name and drop out as duplicates below.
        candidates = np.where(candidates < 0, candidates.max(axis=1, keepdims=True), candidates)
        candidates.sort(axis=1)  # so that top_k's column order is id order
        dense = np.einsum("bd,bcd->bc", dense_q, self.reconstruct(candidates))
        totals = biosyn_scores(dense, sparse_of(candidates), weight)
        totals[:, 1:][candidates[:, 1:] == candidates[:, :-1]] = -np.inf  # duplicates
        order = top_k(totals, k)
        return np.take_along_axis(totals, order, axis=1), np.take_along_axis(candidates, order, axis=1)

    def to_disk(self, path: Union[str, Path], *, idf: Optional[np.ndarray] = None) -> None:
        super().to_disk(path, idf=idf)
        path = Path(path)
        _write(self._dense, path / FAISS_FILE)
        if self.sparse_dims:
            _write(self._sparse_index, path / "sparse.faiss")
            save_array(path / "sparse_projection.npy", self._projection)

    def from_disk(self, path: Union[str, Path]) -> "FaissIndex":
        path = Path(path)
        if self.sparse_dims and not (path / "sparse.faiss").exists():
            raise ValueError(
                f"{path} has no sparse.faiss: it was built with sparse_dims = 0, "
                f"not {self.sparse_dims}; configure the index as it was built"
            )
        if not (path / FAISS_FILE).exists():
            raise ValueError(
                f"{path} has no {FAISS_FILE}: it was saved by spacy_biosyn.ExactIndex; "
                "configure that back-end, or build this one"
            )
        # Read whole before any is taken: a load that fails midway leaves the index as it was.
        dense, dense_source = _read(path / FAISS_FILE)
        sparse_index = sparse_source = projection = None
        if self.sparse_dims:
            sparse_index, sparse_source = _read(path / "sparse.faiss")
            projection = np.load(path / "sparse_projection.npy", allow_pickle=False)
        for index in (dense, sparse_index):
            if index is not None:
                _set_search_parameters(index, self.ef_search, self.nprobe)
        super().from_disk(path)
        self._dense, self._sparse_index, self._projection = dense, sparse_index, projection
        self._mapped_from = {"dense": dense_source, "sparse": sparse_source}
        return self


def _set_search_parameters(index: faiss.Index, ef_search: int, nprobe: int) -> None:
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.nprobe = nprobe
        ivf.make_direct_map()  # reconstruct() of IVF names
    hnsw = getattr(faiss.downcast_index(index), "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = ef_search


# faiss >= 1.11 maps an index's codes from its file. Not on Windows, where
# the map would lock the file against a save that replaces it.
_MAP_FLAG = getattr(faiss, "IO_FLAG_MMAP_IFC", None) if os.name == "posix" else None
# A file an index is mapped from, and its (device, inode) then.
_Source = Tuple[Path, Tuple[int, int]]


def _read(file: Path) -> Tuple[faiss.Index, Optional[_Source]]:
    """The index saved in `file`, its codes and inverted lists mapped from
    the file where faiss can map them, and then the file and its identity:
    a search reads the lists it probes, the rest stay on disk (a UMLS-size
    IVF index: 1.3 GB), and processes linking with one index share its pages."""
    if _MAP_FLAG is not None:
        identity = _identity(file)
        try:
            index = faiss.read_index(str(file), _MAP_FLAG)
        except RuntimeError:  # a layout faiss cannot map, or no map here (macOS)
            pass
        else:
            return index, (file, identity)
    return faiss.read_index(str(file)), None


def _in_memory(index: faiss.Index, source: Optional[_Source], settings: FaissIndex) -> faiss.Index:
    """`index` held in memory, where it can grow: read again from the file
    it is mapped from while that is still the same file (one copy in
    memory), else copied through a serialized one (two for a moment)."""
    if source is None:
        return index
    file, identity = source
    copy = None
    try:
        if _identity(file) == identity:
            copy = faiss.read_index(str(file))
            copy = copy if _identity(file) == identity else None
    except (OSError, RuntimeError):  # gone or replaced meanwhile
        copy = None
    if copy is None:
        copy = faiss.deserialize_index(faiss.serialize_index(index))
    _set_search_parameters(copy, settings.ef_search, settings.nprobe)
    return copy


def _identity(file: Path) -> Tuple[int, int]:
    stat = file.stat()
    return stat.st_dev, stat.st_ino


def _write(index: faiss.Index, file: Path) -> None:
    # Into a new file: `index` may be mapped from `file` (storage.replaced_file).
    with replaced_file(file) as written:
        faiss.write_index(index, str(written))
