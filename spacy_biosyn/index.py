"""Search: the k dictionary names with the highest S = dense + lambda * sparse.

The exact index never materialises a (mentions x names) dense score matrix.
faiss returns each mention's `pool_size` best names by dense score; the sparse
scores of all names are cheap (a sparse-dense product), so their `pool_size`
best join the candidates, and S is computed exactly on that union. Any name
outside faiss's pool scores at most (the pool's lowest dense score) + (its own
lambda * sparse score), so when the k-th candidate beats that bound the
ranking is provably the ranking over all names; when it does not, that
mention falls back to scoring every name. Either way the result equals brute
force.
"""
from pathlib import Path
from typing import Tuple, Union

import faiss
import numpy as np
from scipy import sparse
from spacy.util import registry

from .sparse import sparse_scores

# A margin for float rounding between faiss's and numpy's inner products:
# near-ties fall back to the full computation instead of being guessed.
_BOUND_EPS = 1e-5


@registry.misc("spacy_biosyn.ExactIndex.v1")
class ExactIndex:
    def __init__(self, pool_size: int = 64, chunk_size: int = 128):
        if pool_size < 1:
            raise ValueError(f"pool_size must be positive, got {pool_size}")
        self.pool_size = pool_size
        self.chunk_size = chunk_size
        self._dense: faiss.IndexFlatIP = None
        self._sparse: sparse.csr_matrix = None

    def __len__(self) -> int:
        return 0 if self._dense is None else self._dense.ntotal

    @property
    def dim(self) -> int:
        return self._dense.d

    @property
    def vectors(self) -> np.ndarray:
        """The stored name vectors, a view into faiss's memory (no copy)."""
        n, d = self._dense.ntotal, self._dense.d
        return faiss.rev_swig_ptr(self._dense.get_xb(), n * d).reshape(n, d)

    @property
    def sparse_vectors(self) -> sparse.csr_matrix:
        return self._sparse

    def build(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> "ExactIndex":
        if vectors.shape[0] != sparse_vectors.shape[0]:
            raise ValueError(
                f"{vectors.shape[0]} dense but {sparse_vectors.shape[0]} sparse name vectors"
            )
        self._dense = faiss.IndexFlatIP(vectors.shape[1])
        self._dense.add(np.ascontiguousarray(vectors, dtype=np.float32))
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
        pool = min(max(self.pool_size, k), len(self))
        dense_pool_scores, dense_pool = self._dense.search(dense_q, pool)
        sparse_pool = np.argpartition(-weighted_sparse, pool - 1, axis=1)[:, :pool]
        candidates = np.sort(np.concatenate([dense_pool, sparse_pool], axis=1), axis=1)
        totals = np.einsum("bd,bcd->bc", dense_q, self.vectors[candidates])
        totals += np.take_along_axis(weighted_sparse, candidates, axis=1)
        totals[:, 1:][candidates[:, 1:] == candidates[:, :-1]] = -np.inf  # duplicates
        order = np.argsort(-totals, axis=1, kind="stable")[:, :k]
        top_scores = np.take_along_axis(totals, order, axis=1)
        top_ids = np.take_along_axis(candidates, order, axis=1)

        outside = weighted_sparse.copy()
        np.put_along_axis(outside, dense_pool, -np.inf, axis=1)
        bound = dense_pool_scores[:, -1] + outside.max(axis=1)
        for row in np.flatnonzero(top_scores[:, -1] < bound + _BOUND_EPS):
            every_name = self.vectors @ dense_q[row] + weighted_sparse[row]
            best = np.argpartition(-every_name, k - 1)[:k]
            best = best[np.lexsort((best, -every_name[best]))]  # by score, then id
            top_scores[row], top_ids[row] = every_name[best], best
        return top_scores, top_ids

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        faiss.write_index(self._dense, str(path / "dense.faiss"))
        sparse.save_npz(path / "sparse.npz", self._sparse)

    def from_disk(self, path: Union[str, Path]) -> "ExactIndex":
        path = Path(path)
        self._dense = faiss.read_index(str(path / "dense.faiss"))
        self._sparse = sparse.load_npz(path / "sparse.npz").tocsr()  # allow_pickle=False
        return self

