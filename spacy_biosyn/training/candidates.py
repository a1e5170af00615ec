"""Each training mention's k candidate names (BioSyn's iterative retrieval).

k - floor(alpha * k) candidates come from the sparse score and never change;
the rest come from the dense score of the current encoder and are recomputed
every epoch, so the negatives get harder as the model learns. When the two
lists overlap, more dense names fill the gap: always k distinct names.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
from scipy import sparse

from ..corpora.readers import Query
from ..kb.dictionary import Dictionary
from ..kb.ids import split_cuis
from ..preprocess.text import normalize
from ..search.scoring import sparse_scores, top_k

_CHUNK = 256  # queries scored at once: a (chunk x names) float32 block


def training_pairs(queries: Sequence[Query]) -> List[Tuple[str, str]]:
    """(normalized mention, CUI) pairs to train on, as BioSyn selects them:
    composite mentions (several gold IDs) and CUI-less ones (-1) dropped,
    duplicates removed, first-seen order kept."""
    pairs = {}
    for query in queries:
        ids = split_cuis(query.cui)
        text = normalize(query.mention)
        if len(ids) == 1 and ids[0] != "-1" and text:
            pairs[(text, ids[0])] = None
    return list(pairs)


def own_rows(base: Dictionary, merged: Dictionary, pairs: Sequence[Tuple[str, str]]) -> np.ndarray:
    """For each pair, the row of `merged` that the pair itself made positive
    (its text, added or given its CUI by the training mentions), else -1.

    Training must not offer a mention its own text as a candidate: that
    positive would be found by string identity and teach nothing. Names the
    base dictionary already had with that CUI stay, as they would at test
    time, and so does everything when no mention was merged in.
    """
    base_cuis: Dict[str, Tuple[str, ...]] = dict(zip(base.names, base.cuis))
    row = {name: i for i, name in enumerate(merged.names)}
    own = []
    for text, cui in pairs:
        i = row.get(text, -1)
        made_by_mention = i >= 0 and cui in merged.cuis[i] and cui not in base_cuis.get(text, ())
        own.append(i if made_by_mention else -1)
    return np.array(own, dtype=np.int64)


def sparse_top_k(
    queries: sparse.csr_matrix, names: sparse.csr_matrix, k: int, exclude: Optional[np.ndarray] = None
) -> np.ndarray:
    """(n_queries, k) name rows with the highest tf-idf inner product."""
    return _top_k(lambda rows: sparse_scores(names, queries[rows]), queries.shape[0], k, exclude)


def dense_top_k(
    queries: np.ndarray, names: np.ndarray, k: int, exclude: Optional[np.ndarray] = None
) -> np.ndarray:
    """(n_queries, k) name rows with the highest dense inner product."""
    return _top_k(lambda rows: queries[rows] @ names.T, len(queries), k, exclude)


def _top_k(score_rows, n_queries: int, k: int, exclude: Optional[np.ndarray]) -> np.ndarray:
    out = np.empty((n_queries, k), dtype=np.int64)
    for start in range(0, n_queries, _CHUNK):
        rows = np.arange(start, min(start + _CHUNK, n_queries))
        scores = score_rows(rows)
        if exclude is not None:
            hidden = exclude[rows] >= 0
            scores[hidden, exclude[rows][hidden]] = -np.inf
        out[rows] = top_k(scores, k)
    return out


def mix_candidates(sparse_ids: np.ndarray, dense_ids: np.ndarray, k: int, dense_ratio: float) -> np.ndarray:
    """(n, k) distinct rows: the first k - floor(dense_ratio * k) sparse
    candidates, then dense ones in rank order, skipping names already in.

    `dense_ids` must hold k candidates per row (sparse_ids at least the
    sparse share), so that k distinct names always exist.
    """
    n_sparse = k - int(dense_ratio * k)
    if dense_ids.shape[1] < k or sparse_ids.shape[1] < n_sparse:
        raise ValueError(f"need {k} dense and {n_sparse} sparse candidates per mention")
    mixed = np.empty((len(dense_ids), k), dtype=np.int64)
    for i, (sparse_row, dense_row) in enumerate(zip(sparse_ids.tolist(), dense_ids.tolist())):
        chosen = dict.fromkeys(sparse_row[:n_sparse])
        for row in dense_row:
            if len(chosen) == k:
                break
            chosen.setdefault(row)
        mixed[i] = list(chosen)
    return mixed


def positive_mask(candidates: np.ndarray, gold: Sequence[str], dictionary: Dictionary) -> np.ndarray:
    """(n, k) bool: the candidate name has the mention's gold CUI."""
    cuis = dictionary.cuis
    return np.array(
        [[cui in cuis[row] for row in rows] for rows, cui in zip(candidates.tolist(), gold)],
        dtype=bool,
    )

