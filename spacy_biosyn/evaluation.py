"""Acc@k under BioSyn's protocol, so numbers compare with the published ones.

A query's mention field may hold several mentions joined by `|` or `+` (the
parts of a composite mention); each is ranked on its own, and the query is
right at k only when every part has, among its k best names, a name sharing a
CUI with the gold field. As in BioSyn's evaluation, the gold field's IDs form
one set that each part is matched against.
"""
from typing import Callable, Dict, List, Sequence

from .corpus import Query
from .dictionary import split_cuis
from .linker import Candidate

Ranker = Callable[[List[str]], List[List[Candidate]]]


def evaluate(rank: Ranker, queries: Sequence[Query], max_k: int = 5) -> Dict[str, float]:
    """{"acc@1": ..., "acc@max_k": ..., "n": ..., "scale": "percent"}."""
    if not queries:
        raise ValueError("no queries to evaluate")
    parts = [q.mention.replace("+", "|").split("|") for q in queries]
    ranked = iter(rank([p for query_parts in parts for p in query_parts]))
    hits = [0] * max_k
    for query, query_parts in zip(queries, parts):
        gold = set(split_cuis(query.cui))
        first_hits = [_first_hit(next(ranked), gold) for _ in query_parts]
        for k in range(1, max_k + 1):
            hits[k - 1] += all(h is not None and h < k for h in first_hits)
    metrics: Dict[str, float] = {
        f"acc@{k}": 100.0 * hits[k - 1] / len(queries) for k in range(1, max_k + 1)
    }
    metrics.update(n=len(queries), scale="percent")
    return metrics


def _first_hit(candidates: List[Candidate], gold: set):
    """Rank (0-based) of the first candidate with a gold CUI, or None."""
    for rank, candidate in enumerate(candidates):
        if gold.intersection(candidate.cuis):
            return rank
    return None
