"""From a mention's chosen parts to what a span says, with no span: the
parts' concepts as candidates, kb_ents, cui and concept_ids, under the
NIL rule (`SpanLinks`); the pipe copies them onto the span."""
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..search.nil_model import NAMES_READ, NilModel, SparseView
from ..ty import Candidate, Concept, LinkedPart
from .choice import BY_VOCABULARY_ORDER

# Why a span is NIL (span._.nil_reason), as NilRule.reason says it.
EVERYDAY_ENGLISH = "everyday_english"  # everyday English, or no word at all: nothing to link
NO_CANDIDATES = "no_candidates"  # a part kept no name (the type filter dropped them all)
BELOW_THRESHOLD = "below_threshold"  # the link score is under the resolved nil_threshold
ABSENT_CONCEPT = "absent_concept"  # the NIL model judged the vocabulary lacks the concept
NIL_REASONS = (EVERYDAY_ENGLISH, NO_CANDIDATES, BELOW_THRESHOLD, ABSENT_CONCEPT)


class Tie(NamedTuple):
    """Concepts that share a part's best name (span._.ties): their IDs
    (preferred, namespaced), the chosen one first, and the rule that
    chose it (choice.TIE_RULES)."""

    ids: Tuple[str, ...]
    rule: str


class SpanLinks(NamedTuple):
    """What a linked mention says: span._.parts, candidates, kb_ents, cui
    and concept_ids; cui and concept_ids None for NIL."""

    parts: List[LinkedPart]
    candidates: List[Candidate]
    kb_ents: List[Tuple[str, float]]
    cui: Optional[str]
    concept_ids: Optional[List[Concept]]
    # Why cui is None (NIL_REASONS); None where it is not.
    nil_reason: Optional[str] = None
    # The parts whose best name several concepts share, in part order.
    ties: Tuple[Tie, ...] = ()
    # For a NIL span that had candidates: what it would have linked to (the
    # parts' best concepts, as cui joins them) and its link score.
    nil_best: Optional[Tuple[str, float]] = None


class NilRule(NamedTuple):
    """What decides NIL for a route: the resolved nil_threshold on the link
    score, and where nil_threshold is "auto" and the vocabulary has one,
    the open-world model (search/nil_model.py)."""

    threshold: Optional[float] = None
    model: Optional[NilModel] = None
    # Where the threshold came from, as /info and a warning say it.
    source: str = ""
    # The vocabulary's tf-idf side, which the model reads (with a model only).
    view: Optional[SparseView] = None

    def for_batch(self, parts: Iterable[LinkedPart]) -> "NilRule":
        """This rule, its model's view holding the tf-idf scores of a batch's
        `parts` ahead: found in one sparse product, not one a mention."""
        if self.model is None or self.view is None:
            return self
        return self._replace(view=self.view.with_pairs(
            (part.text, c.name) for part in parts for c in part.candidates[:NAMES_READ]))

    def reason(self, parts: List[LinkedPart]) -> Optional[str]:
        """Why linked `parts` earn their span no ID (NIL_REASONS), or None
        where they earn one; a composite is NIL where any part's concept is absent."""
        if not parts:
            return EVERYDAY_ENGLISH
        if not is_linked(parts, None):
            return NO_CANDIDATES
        if not is_linked(parts, self.threshold):
            return BELOW_THRESHOLD
        if self.model is not None and any(self.model.lacks_concept(p.text, p.candidates, self.view) for p in parts):
            return ABSENT_CONCEPT
        return None


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
    parts: List[LinkedPart], limit: int, rule: NilRule, namespaced: Optional[Callable[[str], str]] = None,
    tie_rules: Sequence[Optional[str]] = (),
) -> SpanLinks:
    """A span's linking attributes from its linked parts, ranked as
    deep as the linker searched: up to `limit` concepts per part in
    kb_ents, and in candidates the names down to the best name of the
    last of them (at least `limit`); cui None (NIL) where `rule` gives a
    reason. `namespaced` rewrites the IDs of cui,
    kb_ents, concept_ids and ties (kb.namespaces.IdNamespaces); candidates keep
    the dictionary's. Under the rule's threshold a concept leaves kb_ents.
    `tie_rules`: what ordered each part's shared best name (Chosen.tie_rules;
    the vocabulary's order where not said)."""
    ranked = [_concepts(part.candidates, limit) for part in parts]
    per_part = [concepts for concepts, _ in ranked]
    if namespaced is not None:
        per_part = [[(tuple(map(namespaced, ids)), score) for ids, score in concepts] for concepts in per_part]
    shown = [part._replace(candidates=part.candidates[:depth]) for part, (_, depth) in zip(parts, ranked)]
    nil_reason = rule.reason(parts)
    linked = nil_reason is None
    score = link_score(parts)
    # What cui says, or nil_best for NIL: a composite's parts' best concepts
    # joined (the corpus convention), one concept once; None where a part has none.
    best = None if score is None else "|".join(dict.fromkeys(concepts[0][0][0] for concepts in per_part))
    # As scispaCy's threshold: a concept scored under nil_threshold leaves
    # kb_ents (its names stay in candidates), so kb_ents is [] exactly when
    # cui is None; the concepts cui joins always stay.
    if not linked:
        per_part = [[] for _ in per_part]
    elif rule.threshold is not None:
        per_part = [concepts[:1] + [c for c in concepts[1:] if c[1] >= rule.threshold] for concepts in per_part]
    return SpanLinks(
        parts=shown,
        candidates=[c for part in shown for c in part.candidates],
        kb_ents=interleaved_concepts(per_part),
        cui=best if linked else None,
        concept_ids=[concepts[0][0] for concepts in per_part] if linked else None,
        nil_reason=nil_reason,
        ties=tuple(
            Tie(tuple(namespaced(ids[0]) if namespaced else ids[0] for ids in part.candidates[0].concepts),
                tie_rules[i] if i < len(tie_rules) and tie_rules[i] else BY_VOCABULARY_ORDER)
            for i, part in enumerate(parts) if linked and part.candidates and len(part.candidates[0].concepts) > 1
        ),
        nil_best=None if linked or best is None else (best, score),
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
