"""Search: the k dictionary names with the highest S = dense + lambda * sparse.

Every back-end takes a pool of candidates per mention, the best names by
dense score from faiss and the best by sparse score (a sparse-dense product
over all names, or for FaissIndex with `sparse_dims` a second faiss index),
and computes S on their union.

The exact index never materialises a (mentions x names) dense score matrix.
faiss returns each mention's `pool_size` best names by dense score; the sparse
scores of all names are cheap (a sparse-dense product), so their `pool_size`
best join the candidates, and S is computed exactly on that union. Any name
outside faiss's pool scores at most (the pool's lowest dense score) + (its own
lambda * sparse score), so when the k-th candidate beats that bound the
ranking is provably the ranking over all names; when it does not, that
mention falls back to scoring every name. Either way the result equals brute
force.

`FaissIndex` trades that guarantee for memory and speed on dictionaries of
millions of names: the dense pool comes from any faiss index (HNSW, IVF-PQ,
fp16 or int8 storage, by faiss's factory string), and S is computed with the
vectors that index stores.
"""
from pathlib import Path
from typing import Optional, Tuple, Union

import faiss
import numpy as np
from scipy import sparse
from sklearn.decomposition import TruncatedSVD
from spacy.util import registry

from .sparse import pooled_sparse_scores, sparse_scores

# A margin for float rounding between faiss's and numpy's inner products:
# near-ties fall back to the full computation instead of being guessed.
_BOUND_EPS = 1e-5
# The names' tf-idf rows, in every back-end's folder; the linker checksums it.
SPARSE_FILE = "sparse.npz"


class SearchIndex:
    """Name vectors in a faiss index and tf-idf rows in a CSR matrix, searched
    in chunks of mentions; both are saved without pickle."""

    def __init__(self, pool_size: int, chunk_size: int):
        if pool_size < 1:
            raise ValueError(f"pool_size must be positive, got {pool_size}")
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be positive, got {chunk_size}")
        self.pool_size = pool_size
        self.chunk_size = chunk_size
        self._dense: Optional[faiss.Index] = None
        self._sparse: Optional[sparse.csr_matrix] = None

    def __len__(self) -> int:
        return 0 if self._dense is None else self._dense.ntotal

    @property
    def dim(self) -> int:
        return self._dense.d

    @property
    def sparse_vectors(self) -> sparse.csr_matrix:
        return self._sparse

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        """The stored vectors of names `ids` (any shape), as the index holds them."""
        ids = np.asarray(ids, dtype=np.int64)
        return self._dense.reconstruct_batch(ids.ravel()).reshape(*ids.shape, self.dim)

    def build(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix):
        if vectors.shape[0] != sparse_vectors.shape[0]:
            raise ValueError(
                f"{vectors.shape[0]} dense but {sparse_vectors.shape[0]} sparse name vectors"
            )
        self._dense = self._make_dense(np.ascontiguousarray(vectors, dtype=np.float32))
        self._sparse = sparse.csr_matrix(sparse_vectors, dtype=np.float32)
        return self

    def add(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> None:
        """Index more names after the built ones (synonyms added at search
        time): rows already indexed keep their ids."""
        if vectors.shape[0] != sparse_vectors.shape[0]:
            raise ValueError(
                f"{vectors.shape[0]} dense but {sparse_vectors.shape[0]} sparse name vectors"
            )
        if len(vectors):
            self._dense.add(np.ascontiguousarray(vectors, dtype=np.float32))
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
        for start in range(0, n_queries, self.chunk_size):
            rows = slice(start, start + self.chunk_size)
            scores[rows], ids[rows] = self._search_chunk(
                dense_queries[rows], sparse_queries[rows], sparse_weight, k
            )
        return scores, ids

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        *_, top_scores, top_ids = self._search_every_sparse(dense_q, sparse_q, weight, k)
        return top_scores, top_ids

    def _pool(self, k: int) -> int:
        return min(max(self.pool_size, k), len(self))

    def _search_every_sparse(self, dense_q, sparse_q, weight, k):
        """The sparse pool from every name's tf-idf score: lambda * S_sparse
        of every name, and what `_rescore_pool` returns."""
        weighted_sparse = weight * sparse_scores(self._sparse, sparse_q)
        pool = self._pool(k)
        sparse_pool = np.argpartition(-weighted_sparse, pool - 1, axis=1)[:, :pool]
        return (weighted_sparse,) + self._rescore_pool(
            dense_q,
            sparse_pool,
            lambda pooled: np.take_along_axis(weighted_sparse, pooled, axis=1),
            k,
        )

    def _rescore_pool(self, dense_q, sparse_pool, weighted_sparse_of, k):
        """S on the union of faiss's dense pool and `sparse_pool`, with
        `weighted_sparse_of(ids)` giving lambda * S_sparse of pooled names:
        the dense pool's scores and ids, and the k best (scores, ids)."""
        dense_pool_scores, dense_pool = self._dense.search(dense_q, self._pool(k))
        candidates = np.concatenate([dense_pool, sparse_pool], axis=1)
        # An approximate index may find fewer names than asked (id -1): those
        # slots repeat a found name and drop out as duplicates below.
        candidates = np.where(candidates < 0, candidates.max(axis=1, keepdims=True), candidates)
        candidates.sort(axis=1)
        totals = np.einsum("bd,bcd->bc", dense_q, self.reconstruct(candidates))
        totals += weighted_sparse_of(candidates)
        totals[:, 1:][candidates[:, 1:] == candidates[:, :-1]] = -np.inf  # duplicates
        order = np.argsort(-totals, axis=1, kind="stable")[:, :k]
        top_scores = np.take_along_axis(totals, order, axis=1)
        top_ids = np.take_along_axis(candidates, order, axis=1)
        return dense_pool_scores, dense_pool, top_scores, top_ids

    def _make_dense(self, vectors: np.ndarray) -> faiss.Index:
        raise NotImplementedError

    def _prepare(self) -> None:
        """Set search-time parameters on a built or loaded faiss index."""

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self._dense, str(path / "dense.faiss"))
        sparse.save_npz(path / SPARSE_FILE, self._sparse)

    def from_disk(self, path: Union[str, Path]):
        path = Path(path)
        self._dense = faiss.read_index(str(path / "dense.faiss"))
        self._sparse = sparse.load_npz(path / SPARSE_FILE).tocsr()  # allow_pickle=False
        self._prepare()
        return self


@registry.misc("spacy_biosyn.ExactIndex.v1")
class ExactIndex(SearchIndex):
    def __init__(self, pool_size: int = 64, chunk_size: int = 128):
        super().__init__(pool_size, chunk_size)

    @property
    def vectors(self) -> np.ndarray:
        """The stored name vectors, a view into faiss's memory (no copy)."""
        n, d = self._dense.ntotal, self._dense.d
        return faiss.rev_swig_ptr(self._dense.get_xb(), n * d).reshape(n, d)

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        return self.vectors[ids]

    def _make_dense(self, vectors: np.ndarray) -> faiss.Index:
        dense = faiss.IndexFlatIP(vectors.shape[1])
        dense.add(vectors)
        return dense

    def from_disk(self, path: Union[str, Path]) -> "ExactIndex":
        super().from_disk(path)
        dense = faiss.downcast_index(self._dense)
        if not isinstance(dense, faiss.IndexFlat):
            raise ValueError(
                f"{Path(path) / 'dense.faiss'} is a faiss {type(dense).__name__}, not the flat "
                "index of spacy_biosyn.ExactIndex.v1: configure the spacy_biosyn.FaissIndex.v1 "
                "back-end that built it"
            )
        return self

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        weighted_sparse, dense_pool_scores, dense_pool, top_scores, top_ids = (
            self._search_every_sparse(dense_q, sparse_q, weight, k)
        )
        outside = weighted_sparse.copy()
        np.put_along_axis(outside, dense_pool, -np.inf, axis=1)
        bound = dense_pool_scores[:, -1] + outside.max(axis=1)
        for row in np.flatnonzero(top_scores[:, -1] < bound + _BOUND_EPS):
            every_name = self.vectors @ dense_q[row] + weighted_sparse[row]
            best = np.argpartition(-every_name, k - 1)[:k]
            best = best[np.lexsort((best, -every_name[best]))]  # by score, then id
            top_scores[row], top_ids[row] = every_name[best], best
        return top_scores, top_ids


@registry.misc("spacy_biosyn.FaissIndex.v1")
class FaissIndex(SearchIndex):
    """Approximate search for large dictionaries. `factory` is a faiss
    index_factory string for the name vectors: "HNSW32" (graph, fp32),
    "HNSW32,SQfp16" or "HNSW32,SQ8" (graph over fp16 / int8 vectors),
    "IVF4096,PQ48" (inverted lists over product-quantized vectors).
    `ef_search` and `nprobe` trade speed for recall where the index has them.

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
        # Small chunks: scoring every name's tf-idf takes (chunk x names) floats.
        super().__init__(pool_size, chunk_size)
        self.factory = factory
        self.ef_search = ef_search
        self.nprobe = nprobe
        self.sparse_dims = sparse_dims
        self.sparse_factory = sparse_factory
        self.max_training_names = max_training_names
        self.seed = seed
        self._projection: Optional[np.ndarray] = None  # tf-idf vocabulary x sparse_dims
        self._sparse_index: Optional[faiss.Index] = None

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

    def _project(self, sparse_rows: sparse.csr_matrix) -> np.ndarray:
        return np.ascontiguousarray(sparse_rows @ self._projection, dtype=np.float32)

    def _make_dense(self, vectors: np.ndarray) -> faiss.Index:
        return self._faiss(self.factory, vectors)

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

    def _prepare(self) -> None:
        for index in (self._dense, self._sparse_index):
            if index is not None:
                _set_search_parameters(index, self.ef_search, self.nprobe)

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        if not self.sparse_dims:
            return super()._search_chunk(dense_q, sparse_q, weight, k)
        _, sparse_pool = self._sparse_index.search(self._project(sparse_q), self._pool(k))
        *_, top_scores, top_ids = self._rescore_pool(
            dense_q,
            sparse_pool,
            lambda pooled: weight * pooled_sparse_scores(self._sparse, sparse_q, pooled),
            k,
        )
        return top_scores, top_ids

    def to_disk(self, path: Union[str, Path]) -> None:
        super().to_disk(path)
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
        return super().from_disk(path)


def _set_search_parameters(index: faiss.Index, ef_search: int, nprobe: int) -> None:
    ivf = faiss.try_extract_index_ivf(index)
    if ivf is not None:
        ivf.nprobe = nprobe
        ivf.make_direct_map()  # reconstruct() of IVF names
    hnsw = getattr(faiss.downcast_index(index), "hnsw", None)
    if hnsw is not None:
        hnsw.efSearch = ef_search
