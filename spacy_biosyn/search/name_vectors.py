"""The names' dense vectors as an index is built from them: a chunk at a
time (`chunks`), or some rows for training (`take`). A build from the
encoder gives them so (encoders/vector_cache.py's EncodedNames), and faiss's
back-end is filled as they come, without holding them all; an array of
vectors, as the trainer and tests give, is wrapped here."""
from typing import Iterator, Union

import numpy as np

from ..ty import NameVectors


class ArrayVectors:
    """Vectors already held as one array: NameVectors over it."""

    def __init__(self, vectors: np.ndarray):
        self.array = np.ascontiguousarray(vectors, dtype=np.float32)
        if self.array.ndim != 2:
            raise ValueError(f"name vectors must be a matrix, one row a name; got shape {self.array.shape}")

    def __len__(self) -> int:
        return len(self.array)

    @property
    def dim(self) -> int:
        return self.array.shape[1]

    def take(self, rows: np.ndarray) -> np.ndarray:
        return self.array[rows]

    def chunks(self) -> Iterator[np.ndarray]:
        # One chunk: held already, and an HNSW graph is built as one add() builds it.
        yield self.array

    def whole(self) -> np.ndarray:
        return self.array


def check_finite(vectors: np.ndarray) -> np.ndarray:
    """`vectors`, refused if any component is NaN or infinite: an index would
    hold them without a word, and rank those names at random."""
    if not np.isfinite(vectors).all():
        raise ValueError("name vectors hold NaN or infinity: the encoder gave no usable vector for some name")
    return vectors


def name_vectors(vectors: Union[np.ndarray, NameVectors]) -> NameVectors:
    """`vectors` as NameVectors: taken as they are where they give chunks,
    else read as an array (a list of rows, a tensor on the CPU)."""
    return vectors if hasattr(vectors, "chunks") else ArrayVectors(np.asarray(vectors))
