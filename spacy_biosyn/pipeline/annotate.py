"""From ranked names to what a span says: the reading whose parts scored
best (of readings that tie, the one the rest of the document supports),
each shared name read as the concept the document names, and the parts'
concepts as span._.parts, candidates, kb_ents, cui and concept_ids."""
from collections import Counter
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from spacy.tokens import Span

from ..ty import Candidate, Concept, LinkedPart, Reading

# The encoder's float32 results depend on the batch a string is encoded in
# (by about 1e-6), so scores that are equal in exact arithmetic, such as two
# readings that are both dictionary names (1.0), differ in their last
# bits from batch to batch. A later reading must win by more than this.
TIE_TOLERANCE = 1e-4


def tied_readings(readings: List[Reading], ranked: Dict[str, List[Candidate]]) -> List[List[LinkedPart]]:
    """The best reading first: the one whose parts' best names score highest
    on average, the first (the likeliest) of those equal within
    TIE_TOLERANCE. Then the later readings that score within TIE_TOLERANCE
    of it, such as the parts of a composite that is also a name as written
    ("breast and ovarian cancer"), when the parts are names too."""

    def score(reading: Reading) -> float:
        tops = [ranked[part][0].score for part in reading if ranked[part]]
        return sum(tops) / len(reading) if tops else float("-inf")

    scores = [score(reading) for reading in readings]
    best = 0
    for i in range(1, len(readings)):
        if scores[i] > scores[best] + TIE_TOLERANCE:
            best = i
    tied = [best] + [i for i in range(len(readings)) if i != best and abs(scores[i] - scores[best]) <= TIE_TOLERANCE]
    return [[LinkedPart(part, ranked[part]) for part in readings[i]] for i in tied]


def chosen_in_document(
    entities: List[Optional[List[List[LinkedPart]]]], resolve_shared_names: bool
) -> List[Optional[List[LinkedPart]]]:
    """The document-level choice, in one step, for each entity's tied
    readings (None: no linker serves its label): with
    `resolve_shared_names`, the reading the document supports
    (readings_by_document), then each shared name read as the concept the
    document names (resolved_by_document); without, the likeliest reading
    and the dictionary's order."""
    if not resolve_shared_names:
        return [None if tied is None else tied[0] for tied in entities]
    return resolved_by_document(readings_by_document(entities))


def readings_by_document(entities: List[Optional[List[List[LinkedPart]]]]) -> List[Optional[List[LinkedPart]]]:
    """Each mention's reading, of those that tie (tied_readings), chosen by
    the rest of the document: the one whose parts' concepts the doc's
    untied mentions name most, on average per part (the whole name
    "breast and ovarian cancer", hereditary breast and ovarian cancer,
    against its parts in an abstract that names breast cancer and ovarian
    cancer apart). No votes either way: the likeliest."""
    votes = _votes(tied[0] for tied in entities if tied is not None and len(tied) == 1)

    def support(reading: List[LinkedPart]) -> float:
        return sum(_support(part.candidates[0].concepts, votes) for part in reading if part.candidates) / len(reading)

    return [tied if tied is None else tied[0] if len(tied) == 1 else max(tied, key=support) for tied in entities]


def resolved_by_document(entities: List[Optional[List[LinkedPart]]]) -> List[Optional[List[LinkedPart]]]:
    """A name that several concepts share ("dm": diabetes mellitus and
    myotonic dystrophy) read as the concept the rest of the document names:
    the concepts of each shared name are reordered by how many of the doc's
    parts whose best name has one concept link to one of its IDs. Ties keep
    the dictionary's order (the annotated corpora's prior, if learned)."""
    votes = _votes(parts for parts in entities if parts)
    if not votes:
        return entities

    def resolved(candidate: Candidate) -> Candidate:
        if len(candidate.concepts) < 2:
            return candidate
        ranked = sorted(candidate.concepts, key=lambda ids: -_support((ids,), votes))
        return candidate._replace(concepts=tuple(ranked))

    return [
        None if parts is None
        else [part._replace(candidates=[resolved(c) for c in part.candidates]) for part in parts]
        for parts in entities
    ]


def _votes(mentions: Iterable[List[LinkedPart]]) -> Counter:
    """How many parts name each ID: the parts whose best name has one concept."""
    return Counter(
        cui
        for parts in mentions
        for part in parts if part.candidates and len(part.candidates[0].concepts) == 1
        for cui in part.candidates[0].concepts[0]
    )


def _support(concepts: Tuple[Concept, ...], votes: Counter) -> int:
    """The votes of the best supported of `concepts`: any of a concept's IDs counts."""
    return max((votes[cui] for ids in concepts for cui in ids), default=0)


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


def annotate_span(
    span: Span, parts: List[LinkedPart], limit: int, nil_threshold: Optional[float],
    namespaced: Optional[Callable[[str], str]] = None,
) -> None:
    """Set the span's linking attributes from its linked parts, ranked as
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
    span._.parts = shown
    span._.candidates = [c for part in shown for c in part.candidates]
    linked = is_linked(parts, nil_threshold)
    # As scispaCy's threshold: a concept scored under nil_threshold leaves
    # kb_ents (its names stay in candidates), so kb_ents is [] exactly when
    # cui is None; the concepts cui joins always stay.
    if not linked:
        per_part = [[] for _ in per_part]
    elif nil_threshold is not None:
        per_part = [concepts[:1] + [c for c in concepts[1:] if c[1] >= nil_threshold] for concepts in per_part]
    span._.kb_ents = interleaved_concepts(per_part)
    # A composite's cui joins its parts' best concepts (the corpus
    # convention); parts naming one concept give it once.
    span._.cui = "|".join(dict.fromkeys(concepts[0][0][0] for concepts in per_part)) if linked else None
    span._.concept_ids = [concepts[0][0] for concepts in per_part] if linked else None


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
