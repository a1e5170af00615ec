"""From a mention's chosen parts to what a span says, with no span: the
parts' concepts as candidates, kb_ents, cui and concept_ids, under the
NIL threshold (`SpanLinks`); the pipe copies them onto the span."""
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from ..ty import Candidate, Concept, LinkedPart


class SpanLinks(NamedTuple):
    """What a linked mention says: span._.parts, candidates, kb_ents, cui
    and concept_ids; cui and concept_ids None for NIL."""

    parts: List[LinkedPart]
    candidates: List[Candidate]
    kb_ents: List[Tuple[str, float]]
    cui: Optional[str]
    concept_ids: Optional[List[Concept]]


def link_score(parts: List[LinkedPart]) -> Optional[float]:
    """What `nil_threshold` is compared with: the mean of the parts' best
    scores (a simple mention's is kb_ents[0][1]); None when a part has no
    candidates."""
    if not parts or not all(part.candidates for part in parts):
        return None
    return sum(part.candidates[0].score for part in parts) / len(parts)


def is_linked(parts: List[LinkedPart], nil_threshold: Optional[float]) -> bool:
    """Whether linked parts earn their span an ID: every part has
    candidates, and the link score is not below `nil_threshold`."""
    score = link_score(parts)
    return score is not None and (nil_threshold is None or score >= nil_threshold)


def span_links(
    parts: List[LinkedPart], limit: int, nil_threshold: Optional[float],
    namespaced: Optional[Callable[[str], str]] = None,
) -> SpanLinks:
    """A span's linking attributes from its linked parts, ranked as
    deep as the linker searched: up to `limit` concepts per part in
    kb_ents, and in candidates the names down to the best name of the
    last of them (at least `limit`); cui None (NIL) when the link score
    is below `nil_threshold`. `namespaced` rewrites the IDs of cui,
    kb_ents and concept_ids (kb.namespaces.IdNamespaces); candidates keep
    the dictionary's. Under `nil_threshold` a concept leaves kb_ents."""
    ranked = [_concepts(part.candidates, limit) for part in parts]
    per_part = [concepts for concepts, _ in ranked]
    if namespaced is not None:
        per_part = [[(tuple(map(namespaced, ids)), score) for ids, score in concepts] for concepts in per_part]
    shown = [part._replace(candidates=part.candidates[:depth]) for part, (_, depth) in zip(parts, ranked)]
    linked = is_linked(parts, nil_threshold)
    # As scispaCy's threshold: a concept scored under nil_threshold leaves
    # kb_ents (its names stay in candidates), so kb_ents is [] exactly when
    # cui is None; the concepts cui joins always stay.
    if not linked:
        per_part = [[] for _ in per_part]
    elif nil_threshold is not None:
        per_part = [concepts[:1] + [c for c in concepts[1:] if c[1] >= nil_threshold] for concepts in per_part]
    return SpanLinks(
        parts=shown,
        candidates=[c for part in shown for c in part.candidates],
        kb_ents=interleaved_concepts(per_part),
        # A composite's cui joins its parts' best concepts (the corpus
        # convention); parts naming one concept give it once.
        cui="|".join(dict.fromkeys(concepts[0][0][0] for concepts in per_part)) if linked else None,
        concept_ids=[concepts[0][0] for concepts in per_part] if linked else None,
    )


def interleaved_concepts(per_part: List[List[Tuple[Concept, float]]]) -> List[Tuple[str, float]]:
    """kb_ents: each concept once, by preferred ID, with its best name's
    score. A simple mention's are its concepts best first; a composite's
    are its parts' concepts by rank (every part's best, in part order, then
    every part's second, ...), so the IDs span._.cui joins come first and
    every entry is a concept some vocabulary has."""
    kb_ents: Dict[str, float] = {}
    for rank in range(max(map(len, per_part), default=0)):
        for concepts in per_part:
            if rank < len(concepts):
                kb_ents.setdefault(concepts[rank][0][0], concepts[rank][1])
    return list(kb_ents.items())


def _concepts(candidates: List[Candidate], limit: int) -> Tuple[List[Tuple[Concept, float]], int]:
    """Up to `limit` distinct concepts in rank order, each known by its
    preferred ID (concepts.by_concept) with its best name's score, and how
    many names it takes to show them all (at least `limit`)."""
    concepts: Dict[str, Tuple[Concept, float]] = {}
    depth = limit
    for rank, candidate in enumerate(candidates):
        for ids in candidate.concepts:
            if len(concepts) < limit and ids[0] not in concepts:
                concepts[ids[0]] = (ids, candidate.score)
                depth = max(depth, rank + 1)
    return list(concepts.values()), depth
