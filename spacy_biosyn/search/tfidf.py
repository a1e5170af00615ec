"""The morphological view: tf-idf over character uni- and bi-grams (BioSyn).

Rows are L2-normalized, so S_sparse = inner product of two rows lies in [0, 1]
(search/scoring.py computes it).
The state (n-gram vocabulary and idf weights) is saved as JSON: loading it runs
no code, unlike a pickled vectorizer. It is fitted and applied here as
scikit-learn's TfidfVectorizer fits and applies it, byte for byte
(`_char_ngrams`, smooth idf in float32, counts times idf, rows over their L2
norm), without importing it: the import took 0.74 s of a fresh process's
first linked text, and its fit_transform held a UMLS-size vocabulary's rows
three times over (docs/record.md).
"""
import re
from collections import Counter
from itertools import chain
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import srsly
from scipy import sparse
from tqdm import tqdm

from ..encoders.base import PROGRESS_MIN_TEXTS
from ..errors import SavedStateError
from ..files.spill import rows_writer
from ..files.storage import read_saved_json

NGRAM_RANGE = (1, 2)
# counts_behind: a ratio this close to a whole number (relative past 1,000)
# may be a count (float32 values are good to 1e-7), and the largest smallest
# count of a row it tries.
_WHOLE = 1e-3
_MOST_TRIED = 255
# Entries that weigh and counts_behind take at a time: their float64 steps
# over all of MEDIC's rows at once held 60 MB.
_WEIGHED_AT_ONCE = 1 << 18
# Names analysed at a time: each chunk's rows pass through Python lists.
_CHUNK = 65_536
# scikit-learn's char analyzer folds each run of two or more white space
# characters into one space before taking n-grams.
_WHITE_SPACE_RUNS = re.compile(r"\s\s+")


class SparseEncoder:
    def __init__(self) -> None:
        self._vocabulary: Optional[Dict[str, int]] = None
        self._idf: Optional[np.ndarray] = None

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
        """Each n-gram's column (alphabetical, as scikit-learn orders them) and
        idf weight, from the names' document frequencies."""
        self._fit(names)
        return self

    def fit_transform(self, names: Sequence[str]) -> sparse.csr_matrix:
        """`fit(names).transform(names)`, the rows written a chunk of names
        at a time into arrays sized by the fit: scikit-learn's fit_transform
        held a UMLS-size vocabulary's rows three times over at its peak
        (docs/record.md). A large vocabulary's are written to a file in the
        cache folder and mapped (files/spill.py)."""
        nnz = self._fit(names)
        written = rows_writer(len(names), self.n_features, nnz)
        with _bar(len(names), "tf-idf rows") as bar:
            for start in range(0, len(names), _CHUNK):
                rows = self.transform(names[start : start + _CHUNK])
                written.add(rows)
                bar.update(rows.shape[0])
        return written.rows()

    def _fit(self, names: Sequence[str]) -> int:
        """Fit as scikit-learn's TfidfVectorizer (smooth idf, in float32) fits;
        the number of entries the names' rows will hold."""
        if isinstance(names, str):
            raise TypeError(f"fit takes a list of names, not the str {names!r:.60}")
        frequencies: Counter = Counter()
        with _bar(len(names), "tf-idf n-grams") as bar:
            for start in range(0, len(names), _CHUNK):
                chunk = names[start : start + _CHUNK]
                frequencies.update(chain.from_iterable(set(_char_ngrams(name)) for name in chunk))
                bar.update(len(chunk))
        if not frequencies:
            raise ValueError("no character n-grams to fit the tf-idf on: every name is empty")
        grams = sorted(frequencies)
        self._vocabulary = {gram: column for column, gram in enumerate(grams)}
        counts = np.array([frequencies[gram] for gram in grams], dtype=np.int64)
        # scikit-learn's arithmetic, step by step in float32, so that the weights are its own.
        idf = np.full(len(grams), len(names) + 1, dtype=np.float32)
        idf /= counts.astype(np.float32) + np.float32(1)
        np.log(idf, out=idf)
        idf += np.float32(1)
        self._idf = idf
        return int(counts.sum())

    @property
    def idf(self) -> np.ndarray:
        """Each column's idf weight (float32)."""
        self._check_fitted("idf")
        return self._idf

    def transform(self, texts: Sequence[str]) -> sparse.csr_matrix:
        """The texts' tf-idf rows (CSR, float32), unit or empty."""
        self._check_fitted("transform")
        if isinstance(texts, str):  # as scikit-learn refuses it: each character would be a text
            raise TypeError(f"transform takes a list of texts, not the str {texts!r:.60}")
        texts = list(texts)
        columns: List[int] = []
        counts: List[int] = []
        indptr = [0]
        column_of = self._vocabulary.get
        for text in texts:
            # Counted by column, unknown n-grams under None: the loops stay in C.
            found = Counter(map(column_of, _char_ngrams(text)))
            found.pop(None, None)
            columns.extend(found)
            counts.extend(found.values())
            indptr.append(len(columns))
        counted = sparse.csr_matrix(
            (np.array(counts, dtype=np.float32), np.array(columns, dtype=np.int32), np.array(indptr, dtype=np.int64)),
            shape=(len(texts), self.n_features),
        )
        counted.sort_indices()
        return weigh(counted, self._idf)

    def to_disk(self, path: Union[str, Path]) -> None:
        srsly.write_json(path, {"vocabulary": self.vocabulary, "idf": self._idf.tolist()})

    def from_disk(self, path: Union[str, Path]) -> "SparseEncoder":
        state = read_saved_json(path, expect=dict)
        vocabulary, idf = state.get("vocabulary"), state.get("idf")
        # Each n-gram's column indexes the idf weights: a column out of their
        # range, or a weight that is not a positive number, would score wrong.
        valid = (
            isinstance(vocabulary, dict) and isinstance(idf, list) and len(idf) == len(vocabulary)
            and all(type(weight) in (int, float) for weight in idf)
            and all(type(column) is int for column in vocabulary.values())
            and sorted(vocabulary.values()) == list(range(len(vocabulary)))
        )
        # Checked as float32 holds them: 1e39 would be infinite there, 1e-50 zero.
        with np.errstate(over="ignore"):  # an overflow is refused below, not warned of
            weights = np.asarray(idf, dtype=np.float32) if valid else None
        if not valid or not (np.isfinite(weights).all() and (weights > 0).all()):
            raise SavedStateError(
                f"{path} does not hold a tf-idf vocabulary (each n-gram's column, 0 to n-1) and one positive "
                "idf weight per column: the file was edited, or is not this package's; build the linker again"
            )
        self._vocabulary = vocabulary
        self._idf = weights
        return self

    def _check_fitted(self, what: str) -> None:
        if not self.is_fitted:
            raise RuntimeError(f"SparseEncoder.{what} called before fit or from_disk")


def weigh(counts: sparse.csr_matrix, idf: np.ndarray) -> sparse.csr_matrix:
    """Rows of n-gram counts as tf-idf rows: counts times idf over each
    row's L2 norm, in scikit-learn's arithmetic (squares in float32, summed
    in the row's order and divided in float64), so that rows weighed again
    from saved counts are the very float32 values that were saved."""
    data = np.empty(counts.nnz, dtype=np.float32)
    for first, last in _row_spans(counts.indptr, _WEIGHED_AT_ONCE):
        indptr = counts.indptr[first : last + 1]
        entries = slice(indptr[0], indptr[-1])
        part = counts.data[entries].astype(np.float32, copy=False) * idf[counts.indices[entries]]
        lengths = np.diff(indptr)
        norms = np.zeros(len(lengths))
        filled = lengths > 0
        if filled.any():
            norms[filled] = np.sqrt(np.add.reduceat((part * part).astype(np.float64), (indptr[:-1] - indptr[0])[filled]))
        data[entries] = part / np.repeat(norms, lengths)
    return sparse.csr_matrix((data, counts.indices, counts.indptr), shape=counts.shape)


def counts_behind(rows: sparse.csr_matrix, idf: np.ndarray) -> Optional[np.ndarray]:
    """The n-gram counts (uint8, or uint16 past 255) that float32 tf-idf
    rows were weighed from with `idf`, entry by entry; None where some row's
    counts that `weigh` gives back bit for bit are not found (rows of
    another tf-idf, or edited). A few rows at a time, as `weigh`."""
    if len(idf) != rows.shape[1] or rows.data.dtype != np.float32 or not (rows.data > 0).all():
        return None
    counts = np.empty(rows.nnz, dtype=np.uint16)
    for first, last in _row_spans(rows.indptr, _WEIGHED_AT_ONCE):
        span = rows[first:last]
        found = _span_counts(span, idf)
        if found is None:
            return None
        counts[rows.indptr[first] : rows.indptr[last]] = found
    return counts.astype(np.uint8) if rows.nnz == 0 or counts.max() <= 255 else counts


def _span_counts(rows: sparse.csr_matrix, idf: np.ndarray) -> Optional[np.ndarray]:
    """counts_behind for a few rows. A row's values over their idf are its
    counts over its norm, so its ratios to its smallest are its counts over
    the smallest count: whole where an n-gram occurs once (all of MEDIC's
    rows but four: "aaa" has 3 and 2), else whole times 2, 3, ... Each
    multiple is tried on the rows not yet found, and a row's counts are
    taken once they weigh back to its values bit for bit."""
    lengths = np.diff(rows.indptr)
    filled = lengths > 0
    counts = np.zeros(rows.nnz, dtype=np.uint16)
    if not filled.any():
        return counts
    per_count = rows.data / idf[rows.indices].astype(np.float64)
    ratios = per_count / np.repeat(np.minimum.reduceat(per_count, rows.indptr[:-1][filled]), lengths[filled])
    row_of = np.repeat(np.arange(rows.shape[0]), lengths)
    pending = np.flatnonzero(filled)
    for least in range(1, _MOST_TRIED + 1):
        # Only the rows not yet found are tried and weighed again.
        tried_rows = np.zeros(rows.shape[0], dtype=bool)
        tried_rows[pending] = True
        entries = np.flatnonzero(tried_rows[row_of])
        guesses = ratios[entries] * least
        whole = np.rint(guesses)
        # Rounding past a count of 65,535 would wrap; far from whole is no count.
        stray = (whole > np.iinfo(np.uint16).max) | (np.abs(guesses - whole) > _WHOLE * np.maximum(1, guesses / 1000))
        tried = np.where(stray, 0, whole).astype(np.uint16)
        starts = np.concatenate(([0], np.cumsum(lengths[pending])))
        with np.errstate(divide="ignore", invalid="ignore"):  # a row of strays only: 0 over 0, never taken
            again = weigh(sparse.csr_matrix((tried, rows.indices[entries], starts), shape=(len(pending), rows.shape[1])), idf)
        wrong = stray | (again.data.view(np.uint32) != rows.data[entries].view(np.uint32))
        differs = np.zeros(rows.shape[0], dtype=bool)
        differs[row_of[entries[wrong]]] = True
        taken = ~differs[row_of[entries]]
        counts[entries[taken]] = tried[taken]
        pending = pending[differs[pending]]
        if not len(pending):
            return counts
    return None


def _row_spans(indptr: np.ndarray, entries: int) -> Iterator[Tuple[int, int]]:
    """(first, last) rows, consecutive, of about `entries` entries each."""
    ends = np.searchsorted(indptr, np.arange(entries, indptr[-1], entries), side="right")
    bounds = np.unique(np.concatenate(([0], ends, [len(indptr) - 1])))
    return zip(bounds[:-1].tolist(), bounds[1:].tolist())


def _bar(total: int, desc: str) -> tqdm:
    return tqdm(total=total, desc=desc, unit="name", disable=total < PROGRESS_MIN_TEXTS, leave=False)


def _char_ngrams(text: str) -> List[str]:
    """The n-grams of NGRAM_RANGE that scikit-learn's char analyzer takes."""
    text = _WHITE_SPACE_RUNS.sub(" ", text)
    low, high = NGRAM_RANGE
    return [text[i : i + n] for n in range(low, high + 1) for i in range(len(text) - n + 1)]
