"""Search: the k dictionary names with the highest S = dense + lambda * sparse.

`ExactIndex` (the default) scores every name: one matrix product with the
name vectors (BLAS), one sparse-dense product with the names' tf-idf rows,
and a top-k, over chunks of mentions sized to bound memory. That is brute
force by construction, and on MEDIC's 72k names it is about four times
faster than faiss's flat search of a candidate pool, which spent its time
keeping heaps. The vectors are saved as a .npy file and memory-mapped at
load, so loading reads no vector until a search needs it.

`FaissIndex` trades exactness for memory and speed on dictionaries of
millions of names: each mention's candidates are the best names by dense
score from any faiss index (HNSW, IVF-PQ, fp16 or int8 storage, by faiss's
factory string) and the best by sparse score, and S is computed on their
union with the vectors that index stores.
"""
from pathlib import Path
from typing import Optional, Tuple, Union

import faiss
import numpy as np
from scipy import sparse
from sklearn.decomposition import TruncatedSVD
from spacy.util import registry

from .sparse import pooled_sparse_scores, sparse_scores

# Float rounding between two ways of computing one score: near-ties are
# scored in full instead of being ruled out.
_BOUND_EPS = 1e-5
# The names' tf-idf rows, in every back-end's folder; the linker checksums it.
SPARSE_FILE = "sparse.npz"
VECTORS_FILE = "vectors.npy"
# What ExactIndex saved before v2; still read.
FAISS_FILE = "dense.faiss"


class SearchIndex:
    """The names' tf-idf rows (a CSR matrix, saved without pickle) and the
    search loop over chunks of mentions; subclasses hold the name vectors."""

    def __init__(self) -> None:
        self._sparse: Optional[sparse.csr_matrix] = None

    def __len__(self) -> int:
        return 0 if self._sparse is None else self._sparse.shape[0]

    @property
    def dim(self) -> int:
        raise NotImplementedError

    @property
    def sparse_vectors(self) -> sparse.csr_matrix:
        return self._sparse

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of names `ids` (any shape), as the index holds them."""
        raise NotImplementedError

    def build(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix):
        _check_rows(vectors, sparse_vectors)
        self._build_dense(np.ascontiguousarray(vectors, dtype=np.float32))
        self._sparse = sparse.csr_matrix(sparse_vectors, dtype=np.float32)
        return self

    def add(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> None:
        """Index more names after the built ones (synonyms added at search
        time): rows already indexed keep their ids."""
        _check_rows(vectors, sparse_vectors)
        if len(vectors):
            self._add_dense(np.ascontiguousarray(vectors, dtype=np.float32))
            self._sparse = sparse.vstack([self._sparse, sparse_vectors], format="csr", dtype=np.float32)

    def search(
        self,
        dense_queries: np.ndarray,
        sparse_queries: sparse.csr_matrix,
        sparse_weight: float,
        k: int,
    ) -> Tuple[np.ndarray, np.ndarray]:
        """(scores, ids), each (n_queries, min(k, len(self))), best first."""
        k = min(k, len(self))
        n_queries = dense_queries.shape[0]
        if sparse_queries.shape[0] != n_queries:
            raise ValueError(f"{n_queries} dense but {sparse_queries.shape[0]} sparse query vectors")
        scores = np.empty((n_queries, k), dtype=np.float32)
        ids = np.empty((n_queries, k), dtype=np.int64)
        dense_queries = np.ascontiguousarray(dense_queries, dtype=np.float32)
        chunk = self._chunk_size()
        for start in range(0, n_queries, chunk):
            rows = slice(start, start + chunk)
            scores[rows], ids[rows] = self._search_chunk(
                dense_queries[rows], sparse_queries[rows], sparse_weight, k
            )
        return scores, ids

    def _chunk_size(self) -> int:
        raise NotImplementedError

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        raise NotImplementedError

    def _build_dense(self, vectors: np.ndarray) -> None:
        raise NotImplementedError

    def _add_dense(self, vectors: np.ndarray) -> None:
        raise NotImplementedError

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        sparse.save_npz(path / SPARSE_FILE, self._sparse)

    def from_disk(self, path: Union[str, Path]):
        self._sparse = sparse.load_npz(Path(path) / SPARSE_FILE).tocsr()  # allow_pickle=False
        return self


@registry.misc("spacy_biosyn.ExactIndex.v2")
class ExactIndex(SearchIndex):
    """Exact search: S of every name for every mention. `chunk_scores` is
    how many (mention, name) scores one chunk holds, which bounds the
    search's memory (three float32 arrays of that size) whatever the
    dictionary's size."""

    def __init__(self, chunk_scores: int = 2**23):
        if isinstance(chunk_scores, bool) or not isinstance(chunk_scores, int) or chunk_scores < 1:
            raise ValueError(f"chunk_scores must be a whole number >= 1, got {chunk_scores!r}")
        super().__init__()
        self.chunk_scores = chunk_scores
        self._vectors: Optional[np.ndarray] = None

    @property
    def dim(self) -> int:
        return self._vectors.shape[1]

    @property
    def vectors(self) -> np.ndarray:
        """The name vectors (n_names x dim); read-only when memory-mapped."""
        return self._vectors

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        return self._vectors[np.asarray(ids, dtype=np.int64)]

    def _build_dense(self, vectors: np.ndarray) -> None:
        self._vectors = vectors

    def _add_dense(self, vectors: np.ndarray) -> None:
        self._vectors = np.concatenate([self._vectors, vectors])

    def _chunk_size(self) -> int:
        return max(1, self.chunk_scores // max(1, len(self)))

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        dense = dense_q @ self._vectors.T
        # tf-idf rows are unit and non-negative, so S_sparse lies in [0, 1] and
        # no name's S exceeds its dense score + max(lambda, 0). The k best
        # names by dense score give a k-th S that the true k-th S is at least;
        # only names whose dense score comes within that headroom of it can
        # rank, and only they are scored in full: usually a few hundred of
        # MEDIC's 72k, where a sparse product with every name took a third
        # of the search.
        headroom = max(weight, 0.0) + _BOUND_EPS
        seeds = _top_k(dense, k)
        queries = sparse_q.toarray()
        scores = np.empty((len(dense), k), dtype=np.float32)
        ids = np.empty((len(dense), k), dtype=np.int64)
        for row, (row_dense, query) in enumerate(zip(dense, queries)):
            seed_totals = row_dense[seeds[row]] + weight * (self._sparse[seeds[row]] @ query)
            candidates = np.flatnonzero(row_dense >= seed_totals.min() - headroom)
            totals = row_dense[candidates] + weight * (self._sparse[candidates] @ query)
            best = np.argsort(-totals, kind="stable")[:k]  # equal S in id order
            scores[row], ids[row] = totals[best], candidates[best]
        return scores, ids

    def to_disk(self, path: Union[str, Path]) -> None:
        super().to_disk(path)
        np.save(Path(path) / VECTORS_FILE, self._vectors, allow_pickle=False)

    def from_disk(self, path: Union[str, Path]) -> "ExactIndex":
        path = Path(path)
        super().from_disk(path)
        if (path / VECTORS_FILE).exists():
            vectors = np.asarray(np.load(path / VECTORS_FILE, mmap_mode="r", allow_pickle=False))
        elif (path / FAISS_FILE).exists():
            vectors = _flat_vectors(path / FAISS_FILE)
        else:
            raise ValueError(f"{path} holds no name vectors ({VECTORS_FILE})")
        if vectors.ndim != 2 or vectors.dtype != np.float32:
            raise ValueError(
                f"{path / VECTORS_FILE} holds {vectors.dtype} of shape {vectors.shape}, "
                "not a float32 matrix of name vectors"
            )
        self._vectors = vectors
        return self


@registry.misc("spacy_biosyn.ExactIndex.v1")
def exact_index_v1(pool_size: int = 64, chunk_size: int = 128) -> ExactIndex:
    """What pipelines saved before v2 name. v1 searched a faiss pool under a
    bound; v2 returns the same exact ranking by scoring every name, so
    these settings have nothing left to set."""
    return ExactIndex()


def _top_k(scores: np.ndarray, k: int, block: int = 64) -> np.ndarray:
    """The ids of each row's k highest scores, best first and equal scores
    in id order, as a stable sort of the whole row gives them. Sorting every
    row costs many times torch.topk; instead the k-th highest block maximum
    bounds each row's k-th score from below (k blocks reach it), and only
    the few scores at or above that bound are sorted."""
    n_rows, n = scores.shape
    if n < 4 * k * block:
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    block_max = scores[:, : n // block * block].reshape(n_rows, -1, block).max(axis=2)
    bound = -np.partition(-block_max, k - 1, axis=1)[:, k - 1]
    ids = np.empty((n_rows, k), dtype=np.int64)
    for row in range(n_rows):
        above = np.flatnonzero(scores[row] >= bound[row])
        ids[row] = above[np.argsort(-scores[row, above], kind="stable")[:k]]
    return ids


def _flat_vectors(path: Path) -> np.ndarray:
    index = faiss.read_index(str(path))
    dense = faiss.downcast_index(index)  # a view: `index` must outlive it
    if not isinstance(dense, faiss.IndexFlat):
        raise ValueError(
            f"{path} is a faiss {type(dense).__name__}, not the flat "
            "index of spacy_biosyn.ExactIndex: configure the spacy_biosyn.FaissIndex.v1 "
            "back-end that built it"
        )
    return dense.reconstruct_batch(np.arange(dense.ntotal, dtype=np.int64))


def _check_rows(vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> None:
    if vectors.shape[0] != sparse_vectors.shape[0]:
        raise ValueError(f"{vectors.shape[0]} dense but {sparse_vectors.shape[0]} sparse name vectors")


@registry.misc("spacy_biosyn.FaissIndex.v1")
class FaissIndex(SearchIndex):
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

    @property
    def dim(self) -> int:
        return self._dense.d

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        return self._dense.reconstruct_batch(ids.ravel()).reshape(*ids.shape, self.dim)

    def build(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> "FaissIndex":
        super().build(vectors, sparse_vectors)
        if self.sparse_dims:
            dims = min(self.sparse_dims, self._sparse.shape[1] - 1)
            sample = self._training_sample(self._sparse)
            svd = TruncatedSVD(dims, random_state=self.seed).fit(sample)
            self._projection = np.ascontiguousarray(svd.components_.T, dtype=np.float32)
            self._sparse_index = self._faiss(self.sparse_factory, self._project(self._sparse))
        return self

    def add(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> None:
        super().add(vectors, sparse_vectors)
        if self.sparse_dims and sparse_vectors.shape[0]:
            self._sparse_index.add(self._project(sparse_vectors))

    def _build_dense(self, vectors: np.ndarray) -> None:
        self._dense = self._faiss(self.factory, vectors)

    def _add_dense(self, vectors: np.ndarray) -> None:
        self._dense.add(vectors)

    def _project(self, sparse_rows: sparse.csr_matrix) -> np.ndarray:
        return np.ascontiguousarray(sparse_rows @ self._projection, dtype=np.float32)

    def _faiss(self, factory: str, vectors: np.ndarray) -> faiss.Index:
        try:
            index = faiss.index_factory(vectors.shape[1], factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as error:
            raise ValueError(f"FaissIndex: faiss cannot build {factory!r}: {error}") from None
        if not index.is_trained:
            index.train(self._training_sample(vectors))
        index.add(vectors)
        _set_search_parameters(index, self.ef_search, self.nprobe)
        return index

    def _training_sample(self, rows):
        # A fixed sample keeps builds reproducible and bounds k-means' and SVD's time.
        if rows.shape[0] <= self.max_training_names:
            return rows
        rng = np.random.default_rng(self.seed)
        return rows[np.sort(rng.choice(rows.shape[0], self.max_training_names, replace=False))]

    def _chunk_size(self) -> int:
        return self.chunk_size

    def _pool(self, k: int) -> int:
        return min(max(self.pool_size, k), len(self))

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        pool = self._pool(k)
        if self.sparse_dims:
            _, sparse_pool = self._sparse_index.search(self._project(sparse_q), pool)
            weighted_sparse_of = lambda pooled: weight * pooled_sparse_scores(self._sparse, sparse_q, pooled)  # noqa: E731
        else:
            every_name = weight * sparse_scores(self._sparse, sparse_q)
            sparse_pool = np.argpartition(-every_name, pool - 1, axis=1)[:, :pool]
            weighted_sparse_of = lambda pooled: np.take_along_axis(every_name, pooled, axis=1)  # noqa: E731
        _, dense_pool = self._dense.search(dense_q, pool)
        candidates = np.concatenate([dense_pool, sparse_pool], axis=1)
        # An approximate index may find fewer names than asked (id -1): those
        # slots repeat a found name and drop out as duplicates below.
        candidates = np.where(candidates < 0, candidates.max(axis=1, keepdims=True), candidates)
        candidates.sort(axis=1)
        totals = np.einsum("bd,bcd->bc", dense_q, self.reconstruct(candidates))
        totals += weighted_sparse_of(candidates)
        totals[:, 1:][candidates[:, 1:] == candidates[:, :-1]] = -np.inf  # duplicates
        order = np.argsort(-totals, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(totals, order, axis=1), np.take_along_axis(candidates, order, axis=1)

    def to_disk(self, path: Union[str, Path]) -> None:
        super().to_disk(path)
        faiss.write_index(self._dense, str(Path(path) / FAISS_FILE))
        if self.sparse_dims:
            faiss.write_index(self._sparse_index, str(Path(path) / "sparse.faiss"))
            np.save(Path(path) / "sparse_projection.npy", self._projection)

    def from_disk(self, path: Union[str, Path]) -> "FaissIndex":
        path = Path(path)
        if self.sparse_dims:
            if not (path / "sparse.faiss").exists():
                raise ValueError(
                    f"{path} has no sparse.faiss: it was built with sparse_dims = 0, "
                    f"not {self.sparse_dims}; configure the index as it was built"
                )
            self._sparse_index = faiss.read_index(str(path / "sparse.faiss"))
            self._projection = np.load(path / "sparse_projection.npy", allow_pickle=False)
        if not (path / FAISS_FILE).exists():
            raise ValueError(
                f"{path} has no {FAISS_FILE}: it was saved by spacy_biosyn.ExactIndex; "
                "configure that back-end, or build this one"
            )
        super().from_disk(path)
        self._dense = faiss.read_index(str(path / FAISS_FILE))
        for index in (self._dense, self._sparse_index):
            if index is not None:
                _set_search_parameters(index, self.ef_search, self.nprobe)
        return self


def _set_search_parameters(index: faiss.Index, ef_search: int, nprobe: int) -> None:
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.nprobe = nprobe
        ivf.make_direct_map()  # reconstruct() of IVF names
    hnsw = getattr(faiss.downcast_index(index), "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = ef_search
