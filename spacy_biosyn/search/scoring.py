"""The score, its scale and the ranking rule, written once for search,
training, concept scoring, NIL thresholds and saved pipelines.

BioSyn scores a (mention, name) pair S = S_dense + lambda * S_sparse: the
inner product of their encoder vectors plus lambda times the inner product
of their tf-idf rows. Ranking keeps the k best, and scores within float32
rounding of each other (SCORE_ROUNDING) in id order, so that every
back-end, precision and CPU agree on ties.

Users read, and threshold, S on the unit scale: S over the S of a name
written as the mention (|m|^2 + lambda), which then scores 1.0. Pipelines
saved before the unit scale hold thresholds on S itself.
"""
from typing import Tuple

import numpy as np
from scipy import sparse


def biosyn_scores(dense, sparse_scores, sparse_weight):
    """S = S_dense + lambda * S_sparse, for numbers, numpy arrays or torch
    tensors alike (the trainer's loss takes its gradient)."""
    return dense + sparse_weight * sparse_scores


# How far two computations of one score may differ by float32 rounding:
# another CPU's BLAS kernels (AVX2 against AVX-512), int16-held vectors
# decoded or not, a batch of another size (relative to the score, past 1).
# Names this close are a tie, which vocabulary order breaks (tie_order):
# without that, which of them wins would depend on the machine.
SCORE_ROUNDING = 1e-5
def tie_order(scores: np.ndarray, ids: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """Each row's (scores, ids), ranked best first, reordered so that names
    within SCORE_ROUNDING of the one before them (a run of ties) come in id
    order, the vocabulary's: the same order on every CPU, back-end and
    precision, where float32 sums would order a tie by their last bits."""
    if scores.shape[-1] < 2:
        return scores, ids
    gaps = scores[:, :-1] - scores[:, 1:]
    ties = gaps <= SCORE_ROUNDING * np.maximum(1.0, np.abs(scores[:, :-1]))
    runs = np.concatenate([np.zeros((len(scores), 1), dtype=np.int64), np.cumsum(~ties, axis=1)], axis=1)
    order = np.lexsort((ids, runs), axis=-1)
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)


# tf-idf rows are unit and non-negative: S_sparse lies in [0, 1].
MAX_SPARSE_SCORE = 1.0
# What a saved threshold's scale is called; saves without it are on S itself.
UNIT_SCALE = "unit"


def max_sparse_gain(sparse_weight: float, tolerance: float = 1e-5) -> float:
    """How far a name's S can lie above its dense score (lambda x the
    largest S_sparse), with a float32 tolerance: the exact index scores in
    full only names whose dense score comes within this of the k-th S."""
    return max(sparse_weight, 0.0) * MAX_SPARSE_SCORE + tolerance


def perfect_score(query: np.ndarray, sparse_weight: float) -> float:
    """The S of a name written exactly as the mention: |m|^2 + lambda
    (1 + lambda for cosine encoders' unit vectors)."""
    return float(query @ query) + sparse_weight * MAX_SPARSE_SCORE


def unit_score(score: float, perfect: float) -> float:
    """S on the unit scale, clipped to [0, 1] (float32 sums stray 1e-6)."""
    return 0.0 if perfect <= 0 else min(1.0, max(0.0, score / perfect))


def name_score(name: str, mention: str, score: float, perfect: float) -> float:
    """A name's S on the unit scale as users read it: a name written as the
    normalized mention scores 1.0 exactly (float32 sums would give
    0.9999...), any other unit_score."""
    return 1.0 if name == mention and perfect > 0 else unit_score(score, perfect)


def is_on_unit_scale(threshold: float) -> bool:
    """Whether a threshold lies where unit scores lie."""
    return 0.0 <= threshold <= 1.0


def unit_from_old_scale(threshold: float, sparse_weight: float) -> float:
    """A threshold saved when scores were S, on the unit scale: S / (1 +
    lambda), exact for cosine scores."""
    return round(threshold / old_scale_factor(sparse_weight), 6)


def old_scale_factor(sparse_weight: float) -> float:
    """What S was over unit scores for cosine encoders (1 + lambda): a
    re-ranker's first_stage_weight grows by it, so that its scores stay."""
    return 1.0 + sparse_weight * MAX_SPARSE_SCORE


def sparse_scores(names: sparse.csr_matrix, queries: sparse.csr_matrix) -> np.ndarray:
    """S_sparse of every (query, name) pair as a dense (queries x names) array.

    names (N x V, sparse) times queries (V x b, dense) is one pass over the
    names' non-zeros; a sparse x sparse product would come out nearly dense
    anyway, since every name shares some character with every query.
    """
    return np.ascontiguousarray((names @ queries.toarray().T).T)


def pooled_sparse_scores(names: sparse.csr_matrix, queries: sparse.csr_matrix, ids: np.ndarray) -> np.ndarray:
    """S_sparse of each query with the names of its row of `ids` (queries x
    pool): only the pooled names are touched, whatever the dictionary's size."""
    n_queries, pool = ids.shape
    pooled = names[ids.ravel()].multiply(queries[np.repeat(np.arange(n_queries), pool)])
    return np.asarray(pooled.sum(axis=1), dtype=np.float32).reshape(n_queries, pool)


# Scores a row's groups hold in top_k: the search asks sorts_by_group_bound
# with this same size, so the two cannot drift apart.
BLOCK = 64


def sorts_by_group_bound(n: int, k: int, block: int = BLOCK) -> bool:
    """Whether top_k of k among n scores a row sorts only those above its
    group bound; with fewer it sorts the whole row."""
    return n >= 4 * k * block


def top_k(scores: np.ndarray, k: int, block: int = BLOCK) -> np.ndarray:
    """The column ids of each row's k highest scores, best first and equal
    scores in id order, as a stable sort of the whole row gives them.

    Sorting every row costs many times torch.topk; instead the row's scores
    are dealt into groups of `block` (every n // block-th score together)
    and the k-th highest group maximum bounds its k-th score from below (k
    groups reach it); only the few scores at or above that bound are
    sorted. Groups of strided scores make the maxima one elementwise pass,
    seven times faster than maxima of adjacent blocks (docs/record.md).
    """
    n_rows, n = scores.shape
    k = min(k, n)
    if not sorts_by_group_bound(n, k, block):
        return np.argsort(-scores, axis=1, kind="stable")[:, :k]
    groups = n // block
    group_max = scores[:, : groups * block].reshape(n_rows, block, groups).max(axis=1)
    bound = -np.partition(-group_max, k - 1, axis=1)[:, k - 1]
    ids = np.empty((n_rows, k), dtype=np.int64)
    for row in range(n_rows):
        above = np.flatnonzero(scores[row] >= bound[row])
        ids[row] = above[np.argsort(-scores[row, above], kind="stable")[:k]]
    return ids
