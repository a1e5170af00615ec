"""Acc@k under BioSyn's protocol, so numbers compare with the published ones.

A query's mention field may hold several mentions joined by `|` or `+` (the
parts of a composite mention); each is ranked on its own, and the query is
right at k only when every part has, among its k best names, a name sharing a
CUI with the gold field. As in BioSyn's evaluation, the gold field's IDs form
one set that each part is matched against. IDs are compared without a
namespace prefix: the raw NCBI corpus writes OMIM:217000 where the
dictionaries write 217000.
"""
from typing import Callable, Collection, Dict, Iterable, List, Optional, Sequence

from spacy.tokens import Doc

from .corpus import Query
from .dictionary import split_cuis
from .linker import Candidate

Ranker = Callable[[List[str]], List[List[Candidate]]]

# Gold CUI fields of mentions that cannot be scored (CUI-less), as BioSyn drops them.
UNSCORED_CUIS = {"", "-1"}


def evaluate(rank: Ranker, queries: Sequence[Query], max_k: int = 5) -> Dict[str, float]:
    """Acc@k of a ranker on `.concept` queries, whose mention fields hold
    the parts of a composite already split (by BioSyn, with the gold CUIs).
    Returns {"acc@1": ..., "acc@max_k": ..., "n": ..., "scale": "percent"}."""
    parts = [q.mention.replace("+", "|").split("|") for q in queries]
    ranked = iter(rank([p for query_parts in parts for p in query_parts]))
    predictions = [[next(ranked) for _ in query_parts] for query_parts in parts]
    return accuracy(predictions, [q.cui for q in queries], max_k)


def evaluate_docs(
    docs: Iterable[Doc], max_k: int = 5, labels: Optional[Collection[str]] = None
) -> Dict[str, float]:
    """Acc@k of linked Docs whose entities (of `labels`, if given) carry
    their gold CUIs as kb_id (corpus.pubtator_to_doc), with the parts the
    pipeline split itself. CUI-less entities are not scored; their number is
    reported."""
    predictions, golds, unscored = [], [], 0
    for doc in docs:
        for span in doc.ents:
            if labels is not None and span.label_ not in labels:
                continue
            if span.kb_id_ in UNSCORED_CUIS:
                unscored += 1
                continue
            predictions.append([part.candidates for part in span._.parts])
            golds.append(span.kb_id_)
    metrics = accuracy(predictions, golds, max_k)
    metrics["unscored"] = unscored
    return metrics


def accuracy(
    predictions: Sequence[List[List[Candidate]]], golds: Sequence[str], max_k: int
) -> Dict[str, float]:
    """Acc@1..max_k from each mention's per-part candidate lists and its gold
    CUI field. A mention with no parts (only punctuation) is a miss."""
    if not predictions:
        raise ValueError("no mentions to evaluate")
    hits = [0] * max_k
    for parts, gold_field in zip(predictions, golds):
        rank = hit_rank(parts, gold_field)
        for k in range(1, max_k + 1):
            hits[k - 1] += rank is not None and rank < k
    metrics: Dict[str, float] = {
        f"acc@{k}": 100.0 * hits[k - 1] / len(predictions) for k in range(1, max_k + 1)
    }
    metrics.update(n=len(predictions), scale="percent")
    return metrics


def hit_rank(parts: List[List[Candidate]], gold_field: str) -> Optional[int]:
    """The smallest k - 1 at which a mention is right (every part has a
    gold CUI among its k best), or None if no k is."""
    gold = {_bare(cui) for cui in split_cuis(gold_field)}
    first_hits = [_first_hit(candidates, gold) for candidates in parts]
    if not parts or None in first_hits:
        return None
    return max(first_hits)


def _first_hit(candidates: List[Candidate], gold: set):
    """Rank (0-based) of the first candidate with a gold CUI, or None."""
    for rank, candidate in enumerate(candidates):
        if gold.intersection(map(_bare, candidate.cuis)):
            return rank
    return None


def _bare(cui: str) -> str:
    return cui.rpartition(":")[2]
