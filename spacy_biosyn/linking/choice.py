"""The document-level choice: of a mention's readings that score alike,
the one the rest of the document supports, and each name that several
concepts share read as the concept the tie rule puts first (`TIE_RULES`)."""
from collections import Counter
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

from ..kb.ids import bare_id
from ..ty import Candidate, Concept, LinkedPart, Reading

# The encoder's float32 results depend on the batch a string is encoded in
# (by about 1e-6), so scores that are equal in exact arithmetic, such as two
# readings that are both dictionary names (1.0), differ in their last
# bits from batch to batch. A later reading must win by more than this.
TIE_TOLERANCE = 1e-4

# What orders the concepts of a name they share (span._.ties), each asked
# only where the ones before it leave the first two equal:
BY_DOCUMENT = "document"  # the rest of the document names one of them
BY_ANNOTATED_CORPUS = "annotated_corpus"  # preferred_ids_from's annotators used one more
# its other names rank nearer the mention: the mention is its own name, not
# an entry term of a broader heading that lists it ("spinal and bulbar
# muscular atrophy": Kennedy disease, not "Muscular Disorders, Atrophic")
BY_OWN_NAMES = "own_names"
BY_VOCABULARY_ORDER = "vocabulary_order"  # none of these: the vocabulary's order
TIE_RULES = (BY_DOCUMENT, BY_ANNOTATED_CORPUS, BY_OWN_NAMES, BY_VOCABULARY_ORDER)


class Chosen(NamedTuple):
    """A mention's chosen parts, and for each part the rule that ordered
    the concepts of its best name where several share it (None: one concept)."""

    parts: List[LinkedPart]
    tie_rules: List[Optional[str]]


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
    entities: List[Optional[List[List[LinkedPart]]]], resolve_shared_names: bool, usage: Mapping[str, int]
) -> List[Optional[Chosen]]:
    """The document-level choice, in one step, for each entity's tied
    readings (None: no linker serves its label): with
    `resolve_shared_names`, the reading the document supports
    (readings_by_document), then each shared name's concepts ordered by
    the tie rule (ordered_by_tie_rule; `usage`: the annotated corpora's
    counts of IDs without namespace); without, the likeliest reading and
    the vocabulary's order."""
    if not resolve_shared_names:
        return [None if tied is None else Chosen(tied[0], [BY_VOCABULARY_ORDER if _shared(p) else None for p in tied[0]])
                for tied in entities]
    return ordered_by_tie_rule(readings_by_document(entities), usage)


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


def ordered_by_tie_rule(entities: List[Optional[List[LinkedPart]]], usage: Mapping[str, int]) -> List[Optional[Chosen]]:
    """Each name that several concepts share ("dm": diabetes mellitus and
    myotonic dystrophy) with its concepts ordered by TIE_RULES: how many
    of the doc's parts whose best name has one concept link to one of its
    IDs; how often the annotated corpora used its IDs (`usage`); the best
    score of its other names among the part's candidates; the
    vocabulary's order (every shared name among the candidates, so that
    kb_ents agrees). A part's rule is the one that put its best name's
    first concept before the second."""
    votes = _votes(parts for parts in entities if parts)

    def ordered(candidate: Candidate, part: LinkedPart) -> Tuple[Candidate, Optional[str]]:
        if len(candidate.concepts) < 2:
            return candidate, None
        keys = {ids: (_support((ids,), votes), _usage(ids, usage), _other_names_score(ids, part.candidates))
                for ids in candidate.concepts}
        ranked = sorted(candidate.concepts, key=lambda ids: tuple(-k for k in keys[ids]))
        first, second = keys[ranked[0]], keys[ranked[1]]
        rule = next((r for r, a, b in zip(TIE_RULES, first, second) if a != b), BY_VOCABULARY_ORDER)
        return candidate._replace(concepts=tuple(ranked)), rule

    chosen: List[Optional[Chosen]] = []
    for parts in entities:
        if parts is None:
            chosen.append(None)
            continue
        new_parts, rules = [], []
        for part in parts:
            ranked = [ordered(c, part) for c in part.candidates]
            candidates = _own_ids_first([c for c, _ in ranked], usage)
            new_parts.append(part if candidates == part.candidates else part._replace(candidates=candidates))
            rules.append(ranked[0][1] if ranked else None)
        chosen.append(Chosen(new_parts, rules))
    return chosen


def _own_ids_first(candidates: List[Candidate], usage: Mapping[str, int]) -> List[Candidate]:
    """The candidates with each concept of the best name whose IDs the
    annotated corpora never used led by the ID whose other names rank
    nearest, wherever it appears: one concept may hold a MeSH heading and
    the supplementary concept its name belongs to (MEDIC's "spinal and
    bulbar muscular atrophy": D020966, "Muscular Disorders, Atrophic", and
    C537017, Kennedy disease), and its preferred ID is the one span._.cui
    says. Only IDs of the preferred ID's system move (`_id_system`), so
    the vocabulary's preference between systems (MeSH before OMIM,
    `preferred_ids`) stands. Stable: IDs whose names rank alike keep the
    vocabulary's order."""
    if not candidates:
        return candidates
    reordered: Dict[Concept, Concept] = {}
    for ids in candidates[0].concepts:
        if len(ids) < 2 or _usage(ids, usage):
            continue
        own = {cui: _other_names_score((cui,), candidates) for cui in ids}
        system = _id_system(ids[0])
        movable = [cui for cui in ids if _id_system(cui) == system]
        first = tuple(sorted(movable, key=lambda cui: -own[cui])) + tuple(c for c in ids if _id_system(c) != system)
        if first != ids:
            reordered[ids] = first
    if not reordered:
        return candidates
    return [c._replace(concepts=tuple(reordered.get(ids, ids) for ids in c.concepts))
            if any(ids in reordered for ids in c.concepts) else c for c in candidates]


def _usage(ids: Concept, usage: Mapping[str, int]) -> int:
    """How often the annotated corpora used the most used of `ids`."""
    return max(usage.get(bare_id(cui), 0) for cui in ids)


def _other_names_score(ids: Concept, candidates: List[Candidate]) -> float:
    """The best score of a name other than the best one that has any of `ids`."""
    return max((c.score for c in candidates[1:] if set(ids).intersection(c.cuis)), default=0.0)


def _id_system(cui: str) -> str:
    """Which ID system an ID is of: its namespace where it has one, else
    whether it leads with letters (MeSH's D020966 and C537017) or is a
    number (OMIM's 313200)."""
    namespace, colon, local = cui.rpartition(":")
    return namespace if colon else "letters" if local[:1].isalpha() else "number"


def _shared(part: LinkedPart) -> bool:
    """Whether the part's best name is a name of several concepts."""
    return bool(part.candidates) and len(part.candidates[0].concepts) > 1


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
