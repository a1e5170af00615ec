"""BioSyn's evaluation: Acc@k of a ranker on `.concept` queries
(`accuracy`'s rules), without spaCy: the trainer's dev check ranks with it."""
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from ..corpora.readers import Query
from ..kb.namespaces import UNSCORED_CUIS
from ..pipeline.accuracy import accuracy
from ..ty import Candidate

Ranker = Callable[..., List[List[Candidate]]]


def evaluate(
    rank: Ranker, queries: Sequence[Query], max_k: int = 5, contexts: Optional[Sequence[Any]] = None,
    id_namespaces: Optional[Mapping[str, str]] = None,
) -> Dict[str, float]:
    """Acc@k of a ranker on `.concept` queries, whose mention fields hold
    the parts of a composite already split (by BioSyn, with the gold CUIs).
    CUI-less queries (-1) are not scored, as in `link_scores`; their number
    is reported. With `contexts` (one per query, such as the re-ranker's
    MentionInContext), the ranker is called as rank(texts, contexts), each
    part with its query's context. IDs compare through `id_namespaces`
    (the ranking pipe's), as `accuracy` says. Returns fractions, {"link_acc_1": ...,
    "link_acc_<max_k>": ..., "n": ..., "unscored": ...}."""
    if contexts is not None and len(contexts) != len(queries):
        raise ValueError(f"{len(queries)} queries but {len(contexts)} contexts")
    scored = [i for i, q in enumerate(queries) if q.cui.strip() not in UNSCORED_CUIS]
    parts = [queries[i].mention.replace("+", "|").split("|") for i in scored]
    texts = [p for query_parts in parts for p in query_parts]
    if contexts is None:
        ranked = iter(rank(texts))
    else:
        ranked = iter(rank(texts, [contexts[i] for i, query_parts in zip(scored, parts) for _ in query_parts]))
    predictions = [[next(ranked) for _ in query_parts] for query_parts in parts]
    metrics = accuracy(predictions, [queries[i].cui for i in scored], max_k, id_namespaces)
    metrics["unscored"] = len(queries) - len(scored)
    return metrics
