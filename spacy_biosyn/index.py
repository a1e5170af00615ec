"""Search: the k dictionary names with the highest S = dense + lambda * sparse.

Every back-end takes a pool of candidates per mention, the best names by
dense score from faiss and the best by sparse score (a sparse-dense product
over all names), and computes S on their union.

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
from spacy.util import registry

from .sparse import sparse_scores

# A margin for float rounding between faiss's and numpy's inner products:
# near-ties fall back to the full computation instead of being guessed.
_BOUND_EPS = 1e-5


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
        weighted_sparse = weight * sparse_scores(self._sparse, sparse_q)
        *_, top_scores, top_ids = self._rescore_pool(dense_q, weighted_sparse, k)
        return top_scores, top_ids

    def _rescore_pool(self, dense_q, weighted_sparse, k):
        """S on the union of the dense and sparse pools: the dense pool's
        scores and ids, and the k best (scores, ids)."""
        pool = min(max(self.pool_size, k), len(self))
        dense_pool_scores, dense_pool = self._dense.search(dense_q, pool)
        sparse_pool = np.argpartition(-weighted_sparse, pool - 1, axis=1)[:, :pool]
        candidates = np.concatenate([dense_pool, sparse_pool], axis=1)
        # An approximate index may find fewer than `pool` names (id -1): those
        # slots repeat a sparse candidate and drop out as duplicates below.
        candidates = np.where(candidates < 0, sparse_pool[:, :1], candidates)
        candidates.sort(axis=1)
        totals = np.einsum("bd,bcd->bc", dense_q, self.reconstruct(candidates))
        totals += np.take_along_axis(weighted_sparse, candidates, axis=1)
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
        sparse.save_npz(path / "sparse.npz", self._sparse)

    def from_disk(self, path: Union[str, Path]):
        path = Path(path)
        self._dense = faiss.read_index(str(path / "dense.faiss"))
        self._sparse = sparse.load_npz(path / "sparse.npz").tocsr()  # allow_pickle=False
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
        weighted_sparse = weight * sparse_scores(self._sparse, sparse_q)
        dense_pool_scores, dense_pool, top_scores, top_ids = self._rescore_pool(
            dense_q, weighted_sparse, k
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
    """Approximate dense search for large dictionaries. `factory` is a faiss
    index_factory string: "HNSW32" (graph, fp32), "HNSW32,SQfp16" or
    "HNSW32,SQ8" (graph over fp16 / int8 vectors), "IVF4096,PQ48" (inverted
    lists over product-quantized vectors). `ef_search` and `nprobe` trade
    speed for recall where the index has them."""

    def __init__(
        self,
        factory: str = "HNSW32,SQfp16",
        pool_size: int = 64,
        ef_search: int = 128,
        nprobe: int = 32,
        max_training_names: int = 200_000,
        chunk_size: int = 16,
        seed: int = 0,
    ):
        # Small chunks: the sparse scores of a chunk are (chunk x names) floats.
        super().__init__(pool_size, chunk_size)
        self.factory = factory
        self.ef_search = ef_search
        self.nprobe = nprobe
        self.max_training_names = max_training_names
        self.seed = seed

    def _make_dense(self, vectors: np.ndarray) -> faiss.Index:
        try:
            dense = faiss.index_factory(vectors.shape[1], self.factory, faiss.METRIC_INNER_PRODUCT)
        except RuntimeError as error:
            raise ValueError(f"FaissIndex: faiss cannot build {self.factory!r}: {error}") from None
        if not dense.is_trained:
            # A fixed sample keeps builds reproducible and bounds k-means' time.
            rng = np.random.default_rng(self.seed)
            n = min(len(vectors), self.max_training_names)
            dense.train(vectors[np.sort(rng.choice(len(vectors), n, replace=False))])
        dense.add(vectors)
        self._dense = dense
        self._prepare()
        return dense

    def _prepare(self) -> None:
        ivf = faiss.try_extract_index_ivf(self._dense)
        if ivf is not None:
            ivf.nprobe = self.nprobe
            ivf.make_direct_map()  # reconstruct() of IVF names
        hnsw = getattr(faiss.downcast_index(self._dense), "hnsw", None)
        if hnsw is not None:
            hnsw.efSearch = self.ef_search
