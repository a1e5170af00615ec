"""The default search back-end: exact search, or faiss's where the
vocabulary is too large for it.

Below `faiss_from` names (a million) every name is scored (ExactIndex); at
or above it, as for UMLS, the names' vectors go into faiss's IVF4096,SQ8
(a byte per dimension: 4M MiniLM names in 1.5 GiB instead of 6), which kept
exact search's Acc@1 within 0.13 points on 4M names (docs/benchmarks.md,
Scale). The choice is made when the index is built, from the names'
count, and saved with it (`kind.json`), so a pipeline loads the back-end it
was built with whatever its size. The exact back-end saves its vectors in
`vector_precision` (index.py); faiss's keep their own codes.
"""
import importlib.util
import warnings
from pathlib import Path
from typing import Optional, Tuple, Union

import numpy as np
import srsly
from scipy import sparse

from ..errors import SavedStateError
from ..files.storage import read_saved_json
from ..names import LARGE_VOCABULARY_NAMES
from ..parts import SIZED_INDEX, SIZED_INDEX_V1, SIZED_INDEX_V2, registry
from ..ty import NameVectors
from .index import ExactIndex, VectorPrecision, check_held_precision, check_vector_precision
from .index_base import estimated_bytes

_KIND_FILE = "kind.json"


@registry.misc(SIZED_INDEX)
class SizedIndex:
    def __init__(
        self,
        faiss_from: int = LARGE_VOCABULARY_NAMES,
        factory: str = "IVF4096,SQ8",
        nprobe: int = 64,
        sparse_dims: int = 64,
        sparse_factory: str = "IVF1024,SQ8",
        vector_precision: VectorPrecision = "int16",
        held_precision: VectorPrecision = "float32",
    ):
        if faiss_from < 1:
            raise ValueError(f"faiss_from must be positive, got {faiss_from}")
        check_vector_precision(vector_precision)
        check_held_precision(held_precision, vector_precision)
        self.faiss_from = faiss_from
        self.factory = factory
        self.nprobe = nprobe
        self.sparse_dims = sparse_dims
        self.sparse_factory = sparse_factory
        self.vector_precision = vector_precision
        self.held_precision = held_precision
        self.inner = self._exact()

    @property
    def kind(self) -> str:
        return "exact" if isinstance(self.inner, ExactIndex) else "faiss"

    def _exact(self) -> ExactIndex:
        return ExactIndex(vector_precision=self.vector_precision, held_precision=self.held_precision)

    def _faiss(self):
        from .faiss_index import FaissIndex

        return FaissIndex(self.factory, nprobe=self.nprobe, sparse_dims=self.sparse_dims,
                          sparse_factory=self.sparse_factory)

    def uses_faiss(self, n_names: int) -> bool:
        """Whether `n_names` names get faiss's back-end: enough of them, and faiss installed."""
        return n_names >= self.faiss_from and importlib.util.find_spec("faiss") is not None

    def planned_bytes(self, n_names: int, dim: int, sparse_nnz: int) -> Tuple[str, int]:
        """The back-end `n_names` names of `dim` dimensions get, and about how
        many bytes it will hold (vectors and tf-idf rows)."""
        faiss = self.uses_faiss(n_names)
        kind = "faiss " + self.factory if faiss else "exact"
        return kind, estimated_bytes(n_names, dim, sparse_nnz, bytes_per_dimension=1 if faiss else 4)

    builds_from_chunks = True

    def build(self, vectors: Union[np.ndarray, NameVectors], sparse_vectors: sparse.csr_matrix) -> "SizedIndex":
        faiss = self.uses_faiss(len(vectors))
        if len(vectors) >= self.faiss_from and not faiss:
            warnings.warn(
                f"{len(vectors):,} names are searched exactly, in float32 vectors, because faiss is not installed: "
                'pip install "spacy-biosyn[faiss]" for an index a quarter of the size',
                UserWarning,
                stacklevel=3,
            )
        self.inner = self._faiss() if faiss else self._exact()
        self._warn_if_held_precision_unused()
        self.inner.build(vectors, sparse_vectors)
        return self

    def to_disk(self, path: Union[str, Path], *, idf: Optional[np.ndarray] = None) -> None:
        self.inner.to_disk(path, idf=idf)
        srsly.write_json(Path(path) / _KIND_FILE, {"kind": self.kind})

    def from_disk(self, path: Union[str, Path]) -> "SizedIndex":
        file = Path(path) / _KIND_FILE
        kind = read_saved_json(file, expect=dict).get("kind") if file.is_file() else "exact"
        if kind not in ("exact", "faiss"):
            raise SavedStateError(f"{file}: kind must be exact or faiss, found {kind!r}")
        self.inner = self._exact() if kind == "exact" else self._faiss()
        self._warn_if_held_precision_unused()
        self.inner.from_disk(path)
        return self

    def _warn_if_held_precision_unused(self) -> None:
        if self.held_precision != "float32" and self.kind == "faiss":
            warnings.warn(
                f"held_precision = {self.held_precision!r} is the exact index's setting; these names are searched "
                f"by faiss's {self.factory}, which holds its own codes (faiss_from = {self.faiss_from:,} names)",
                UserWarning,
                stacklevel=3,
            )

    # The rest is the chosen back-end's.
    def __len__(self) -> int:
        return len(self.inner)

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def vectors(self) -> np.ndarray:
        """The exact back-end's name vectors (faiss's hold codes: reconstruct())."""
        return self.inner.vectors

    @property
    def sparse_vectors(self) -> sparse.csr_matrix:
        return self.inner.sparse_vectors

    @property
    def holds_exact_vectors(self) -> bool:
        return self.inner.holds_exact_vectors

    def add(self, vectors: np.ndarray, sparse_vectors: sparse.csr_matrix) -> None:
        self.inner.add(vectors, sparse_vectors)

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        return self.inner.reconstruct(ids)

    def search(self, dense_queries, sparse_queries, sparse_weight: float, k: int):
        return self.inner.search(dense_queries, sparse_queries, sparse_weight, k)


@registry.misc(SIZED_INDEX_V2)
def sized_index_v2(
    faiss_from: int = LARGE_VOCABULARY_NAMES,
    factory: str = "IVF4096,SQ8",
    nprobe: int = 64,
    sparse_dims: int = 64,
    sparse_factory: str = "IVF1024,SQ8",
    vector_precision: VectorPrecision = "int16",
) -> SizedIndex:
    """What pipelines saved before v3 name: float32 vectors in memory."""
    return SizedIndex(faiss_from, factory, nprobe, sparse_dims, sparse_factory, vector_precision)


@registry.misc(SIZED_INDEX_V1)
def sized_index_v1(
    faiss_from: int = LARGE_VOCABULARY_NAMES,
    factory: str = "IVF4096,SQ8",
    nprobe: int = 64,
    sparse_dims: int = 64,
    sparse_factory: str = "IVF1024,SQ8",
) -> SizedIndex:
    """What pipelines saved before v2 name: float32 vectors on disk."""
    return SizedIndex(faiss_from, factory, nprobe, sparse_dims, sparse_factory, vector_precision="float32")
