"""What every index of the names holds and does: the names' tf-idf rows
(a CSR matrix, saved without pickle) and the search loop over chunks of
mentions, for ExactIndex (index.py) and FaissIndex (faiss_index.py), which
hold the name vectors each its own way; and the files they share."""
from pathlib import Path
from typing import Optional, Tuple, Union

import numpy as np
from scipy import sparse

from ..errors import BiosynError
from ..files.storage import replaced_file
from ..ty import NameVectors
from .name_vectors import name_vectors
from .tfidf_rows import load_tfidf_rows, save_tfidf_rows

# The names' tf-idf rows, in every back-end's folder; the linker checksums it.
SPARSE_FILE = "sparse.npz"
# A faiss index: FaissIndex's vectors, and what ExactIndex saved before v2 (still read).
FAISS_FILE = "dense.faiss"


class IndexBase:
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

    @property
    def holds_exact_vectors(self) -> bool:
        """Whether reconstruct() gives the vectors as they were built, not
        compressed ones: then a mention that is a name can take its vector."""
        raise NotImplementedError

    # NameRanker gives build() the names' vectors as they are encoded (NameVectors).
    builds_from_chunks = True

    def build(self, vectors: Union[np.ndarray, NameVectors], sparse_vectors: sparse.csr_matrix):
        vectors = name_vectors(vectors)
        _check_rows(vectors, sparse_vectors)
        # The names are encoded as the index fills: a failure there (NaN, the
        # encoder, Ctrl-C) leaves the index as it was, not half replaced.
        before = dict(vars(self))
        try:
            self._sparse = sparse.csr_matrix(sparse_vectors, dtype=np.float32)
            self._index_sparse()
            self._build_dense(vectors)
        except BaseException:
            vars(self).clear()
            vars(self).update(before)
            raise
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
        broken = np.flatnonzero(~np.isfinite(dense_queries).all(axis=1))
        if len(broken):
            raise BiosynError(
                f"{len(broken)} of {n_queries} mention vectors hold NaN or infinity (the first: row {broken[0]}): "
                "the encoder's weights or its input are broken, and no name can be ranked against them"
            )
        # As many chunks as the budget needs, of even sizes: a last chunk of
        # a few mentions would cost a whole pass over the names.
        n_chunks = -(-n_queries // self._chunk_size())
        bounds = [n_queries * i // n_chunks for i in range(n_chunks + 1)] if n_chunks else []
        for start, stop in zip(bounds, bounds[1:]):
            rows = slice(start, stop)
            scores[rows], ids[rows] = self._search_chunk(
                dense_queries[rows], sparse_queries[rows], sparse_weight, k
            )
        return scores, ids

    def _chunk_size(self) -> int:
        raise NotImplementedError

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        raise NotImplementedError

    def _index_sparse(self) -> None:
        """Index the tf-idf rows beyond holding them, before the vectors come."""

    def _build_dense(self, vectors: NameVectors) -> None:
        raise NotImplementedError

    def _add_dense(self, vectors: np.ndarray) -> None:
        raise NotImplementedError

    def to_disk(self, path: Union[str, Path], *, idf: Optional[np.ndarray] = None) -> None:
        """Save the index; `idf`, the weights of the tf-idf that made its
        rows, lets them be saved as counts (tfidf_rows.py)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        save_tfidf_rows(path / SPARSE_FILE, self._sparse, idf)

    def from_disk(self, path: Union[str, Path]):
        self._sparse = load_tfidf_rows(Path(path) / SPARSE_FILE)
        return self


def estimated_bytes(n_names: int, dim: int, sparse_nnz: int, bytes_per_dimension: int = 4) -> int:
    """About what an index of `n_names` vectors of `dim` dimensions (float32,
    or 1 byte for int8 codes) and tf-idf rows of `sparse_nnz` entries holds."""
    return n_names * dim * bytes_per_dimension + sparse_nnz * 8  # a float32 value and an int32 column per entry


def import_faiss(needed_by: str):
    """faiss, an optional dependency, or ImportError saying which extra brings it."""
    try:
        import faiss
    except ImportError:
        raise ImportError(f'{needed_by} needs faiss: pip install "spacy-biosyn[faiss]"') from None
    return faiss


def _check_rows(vectors, sparse_vectors: sparse.csr_matrix) -> None:
    if len(vectors) != sparse_vectors.shape[0]:
        raise ValueError(f"{len(vectors)} dense but {sparse_vectors.shape[0]} sparse name vectors")


def save_array(path: Path, array: np.ndarray) -> None:
    """np.save into a new file that replaces `path`: the array a loaded
    index searches may be mapped from it (storage.replaced_file)."""
    with replaced_file(path) as written, written.open("wb") as f:
        np.save(f, array, allow_pickle=False)
