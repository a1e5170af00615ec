"""From ranked names to what a span says: the reading whose parts scored
best, and its parts' concepts as span._.parts, candidates, kb_ents, cui and
concept_ids."""
from typing import Dict, List, Optional, Tuple

from spacy.tokens import Span

from ..kb.concepts import by_concept
from ..kb.dictionary import Concept
from ..kb.linker import Candidate, LinkedPart
from ..preprocess.readings import Reading

# The encoder's float32 results depend on the batch a string is encoded in
# (by about 1e-6), so scores that are equal in exact arithmetic, such as two
# readings that are both dictionary names (1 + lambda), differ in their last
# bits from batch to batch. A later reading must win by more than this.
TIE_TOLERANCE = 1e-4


def best_reading(readings: List[Reading], ranked: Dict[str, List[Candidate]]) -> List[LinkedPart]:
    """The reading whose parts' best names score highest on average; of
    readings equal within TIE_TOLERANCE, the first (the likeliest)."""

    def score(reading: Reading) -> float:
        tops = [ranked[part][0].score for part in reading if ranked[part]]
        return sum(tops) / len(reading) if tops else float("-inf")

    best, best_score = readings[0], score(readings[0])
    for reading in readings[1:]:
        if score(reading) > best_score + TIE_TOLERANCE:
            best, best_score = reading, score(reading)
    return [LinkedPart(part, ranked[part]) for part in best]


def annotate_span(span: Span, parts: List[LinkedPart], limit: int, nil_threshold: Optional[float]) -> None:
    """Set the span's linking attributes from its linked parts: at most
    `limit` concepts in kb_ents; cui None (NIL) when the best scores below
    `nil_threshold`."""
    span._.parts = parts
    span._.candidates = [c for part in parts for c in part.candidates]
    kb_ents, concept_ids = joined_concepts(parts, limit)
    span._.kb_ents = kb_ents
    linked = bool(kb_ents) and (nil_threshold is None or kb_ents[0][1] >= nil_threshold)
    span._.cui = kb_ents[0][0] if linked else None
    span._.concept_ids = concept_ids if linked else None


def joined_concepts(parts: List[LinkedPart], limit: int) -> Tuple[List[tuple], List[Concept]]:
    """kb_ents and the IDs of its first entry. kb_ents: a simple mention's
    concepts by preferred ID; for a composite, the parts' concepts of equal
    rank joined with "|" (the corpus convention; parts naming one concept,
    "Duarte and Los Angeles variant galactosemia", give it once), scored by
    their mean, so the first entry is the parts' best concepts. The IDs:
    the first entry's concept of each part, all its IDs."""
    per_part = [_concepts(part.candidates, limit) for part in parts]
    depth = min((len(concepts) for concepts in per_part), default=0)  # no parts: only punctuation
    kb_ents = [
        ("|".join(dict.fromkeys(c[rank][0][0] for c in per_part)), sum(c[rank][1] for c in per_part) / len(per_part))
        for rank in range(depth)
    ]
    return kb_ents, [c[0][0] for c in per_part] if depth else []


def _concepts(candidates: List[Candidate], limit: int) -> List[Tuple[Concept, float]]:
    """Distinct concepts in rank order, each with its best name's score."""
    return [(concept, names[0].score) for concept, names in by_concept(candidates).items()][:limit]
