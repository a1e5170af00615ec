"""The morphological view: tf-idf over character uni- and bi-grams (BioSyn).

Rows are L2-normalized, so S_sparse = inner product of two rows lies in [0, 1]
(search/scoring.py computes it).
The state (n-gram vocabulary and idf weights) is saved as JSON: loading it runs
no code, unlike a pickled vectorizer. scikit-learn's vectorizer is built from
it on the first transform only: importing scikit-learn took about a second
of every `spacy.load`, and a linker whose mentions are all dictionary names
takes their rows from the index and never needs it.
"""
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

import numpy as np
import srsly
from scipy import sparse
from tqdm import tqdm

from ..encoders.base import PROGRESS_MIN_TEXTS
from ..files.storage import read_saved_json

NGRAM_RANGE = (1, 2)


class SparseEncoder:
    def __init__(self) -> None:
        self._vocabulary: Optional[Dict[str, int]] = None
        self._idf: Optional[np.ndarray] = None
        self._vectorizer = None

    @property
    def is_fitted(self) -> bool:
        return self._idf is not None

    @property
    def vocabulary(self) -> Dict[str, int]:
        """Each character n-gram's column."""
        self._check_fitted("vocabulary")
        return self._vocabulary

    @property
    def n_features(self) -> int:
        return len(self.vocabulary)

    def fit(self, names: Sequence[str]) -> "SparseEncoder":
        return self._fitted(_vectorizer().fit(names))

    def fit_transform(self, names: Sequence[str]) -> sparse.csr_matrix:
        """`fit(names).transform(names)`, with each name analysed once
        instead of twice: the tf-idf step of a build takes half the time."""
        vectorizer = _vectorizer()
        # scikit-learn reads the names once, in order: the bar's rate and time left are the step's.
        bar = tqdm(names, desc="tf-idf", unit="name", disable=len(names) < PROGRESS_MIN_TEXTS, leave=False)
        rows = vectorizer.fit_transform(bar)
        self._fitted(vectorizer)
        return rows.tocsr().sorted_indices()

    def _fitted(self, vectorizer) -> "SparseEncoder":
        self._vectorizer = vectorizer
        self._vocabulary = {gram: int(i) for gram, i in vectorizer.vocabulary_.items()}
        self._idf = vectorizer.idf_.astype(np.float32)
        return self

    def transform(self, texts: Sequence[str]) -> sparse.csr_matrix:
        self._check_fitted("transform")
        if self._vectorizer is None:
            self._vectorizer = _vectorizer(vocabulary=self._vocabulary)
            self._vectorizer.idf_ = self._idf
        return self._vectorizer.transform(texts).tocsr()

    def to_disk(self, path: Union[str, Path]) -> None:
        srsly.write_json(path, {"vocabulary": self.vocabulary, "idf": self._idf.tolist()})

    def from_disk(self, path: Union[str, Path]) -> "SparseEncoder":
        state = read_saved_json(path)
        self._vocabulary = state["vocabulary"]
        self._idf = np.asarray(state["idf"], dtype=np.float32)
        self._vectorizer = None
        return self

    def _check_fitted(self, what: str) -> None:
        if not self.is_fitted:
            raise RuntimeError(f"SparseEncoder.{what} called before fit or from_disk")


def _vectorizer(**kwargs):
    from sklearn.feature_extraction.text import TfidfVectorizer

    # Texts arrive normalized, so no lower-casing here: one normalization only.
    return TfidfVectorizer(
        analyzer="char", ngram_range=NGRAM_RANGE, lowercase=False, dtype=np.float32, **kwargs
    )
