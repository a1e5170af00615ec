"""The morphological view: tf-idf over character uni- and bi-grams (BioSyn).

Rows are L2-normalized, so S_sparse = inner product of two rows lies in [0, 1]
(scoring.py computes it).
The state (n-gram vocabulary and idf weights) is saved as JSON: loading it runs
no code, unlike a pickled vectorizer.
"""
from pathlib import Path
from typing import Sequence, Union

import numpy as np
import srsly
from scipy import sparse
from sklearn.feature_extraction.text import TfidfVectorizer

from ..storage import read_saved_json

NGRAM_RANGE = (1, 2)


class SparseEncoder:
    def __init__(self) -> None:
        self._vectorizer = _vectorizer()

    @property
    def is_fitted(self) -> bool:
        return hasattr(self._vectorizer, "idf_")

    def fit(self, names: Sequence[str]) -> "SparseEncoder":
        self._vectorizer = _vectorizer().fit(names)
        return self

    def transform(self, texts: Sequence[str]) -> sparse.csr_matrix:
        if not self.is_fitted:
            raise RuntimeError("SparseEncoder.transform called before fit or from_disk")
        return self._vectorizer.transform(texts).tocsr()

    def to_disk(self, path: Union[str, Path]) -> None:
        vocabulary = {gram: int(i) for gram, i in self._vectorizer.vocabulary_.items()}
        srsly.write_json(path, {"vocabulary": vocabulary, "idf": self._vectorizer.idf_.tolist()})

    @property
    def n_features(self) -> int:
        return len(self._vectorizer.vocabulary_)

    def from_disk(self, path: Union[str, Path]) -> "SparseEncoder":
        state = read_saved_json(path)
        vectorizer = _vectorizer(vocabulary=state["vocabulary"])
        vectorizer.idf_ = np.asarray(state["idf"], dtype=np.float32)
        self._vectorizer = vectorizer
        return self


def _vectorizer(**kwargs) -> TfidfVectorizer:
    # Texts arrive normalized, so no lower-casing here: one normalization only.
    return TfidfVectorizer(
        analyzer="char", ngram_range=NGRAM_RANGE, lowercase=False, dtype=np.float32, **kwargs
    )
