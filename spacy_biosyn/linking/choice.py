"""The document-level choice: of a mention's readings that score alike,
the one the rest of the document supports, and each name that several
concepts share read as the concept the document names."""
from collections import Counter
from typing import Dict, Iterable, List, Optional, Tuple

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
        else [part._replace(candidates=[resolved(c) for c in part.candidates])
              if any(len(c.concepts) > 1 for c in part.candidates) else part for part in parts]
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
