"""Candidates kept or dropped by their concepts' types (`Entity.types`): MeSH
tree numbers and semantic types, CTD tree numbers, an OBO namespace, UMLS
semantic types (TUIs) from MRSTY.RRF or a scispaCy KB: whatever the reader gave.

A pattern matches a type that starts with it, so a tree number's prefix is
its subtree: "C" keeps MeSH's diseases, "C04" its neoplasms; a TUI
("T047") matches itself. A concept is kept when one of its types matches
`keep` (if given) and none matches `drop`; a concept without types matches
no pattern. A name keeps the concepts that pass, and leaves the candidates
when none does.
"""
from typing import Iterable, List, Optional, Sequence, Tuple

from ..kb.dictionary import Dictionary
from ..ty import Candidate, Concept


class TypeFilter:
    def __init__(self, keep: Optional[Iterable[str]], drop: Iterable[str] = ()):
        self.keep: Optional[Tuple[str, ...]] = None if keep is None else tuple(keep)
        self.drop: Tuple[str, ...] = tuple(drop)

    def __bool__(self) -> bool:
        """Whether it removes anything at all."""
        return self.keep is not None or bool(self.drop)

    def allows(self, types: Sequence[str]) -> bool:
        if self.keep is not None and not any(t.startswith(self.keep) for t in types):
            return False
        return not any(t.startswith(self.drop) for t in types)  # startswith(()) is False

    def check(self, vocabularies: Sequence[Tuple[Dictionary, str]]) -> None:
        """Refuse a filter that would silently empty every span or do
        nothing, over the (dictionary, where) of each vocabulary it acts
        on: `types` where a vocabulary gives no concept a type or has no
        type a pattern starts (every span of it would be left without an
        ID); `exclude_types` where no vocabulary has a type a pattern starts."""
        if not self or not vocabularies:
            return
        if self.keep is not None:
            for dictionary, where in vocabularies:
                _require_types(dictionary, where)
                _require_matched("types", self.keep, dictionary.all_types, where)
        if self.drop:
            if not any(dictionary.has_types for dictionary, _ in vocabularies):
                _require_types(*vocabularies[0])
            types = frozenset().union(*(dictionary.all_types for dictionary, _ in vocabularies))
            _require_matched("exclude_types", self.drop, types, vocabularies[0][1])

    def __call__(self, ranked: List[List[Candidate]], dictionary: Dictionary, where: str) -> List[List[Candidate]]:
        """Each mention's candidates with the concepts that pass (`dictionary`
        says their types); `check` has refused a filter that cannot act."""
        if not self:
            return ranked
        memo = {}

        def passes(concept: Concept) -> bool:
            if concept not in memo:
                memo[concept] = self.allows(_types_of(concept, dictionary))
            return memo[concept]

        filtered = []
        for candidates in ranked:
            kept = []
            for candidate in candidates:
                concepts = tuple(concept for concept in candidate.concepts if passes(concept))
                if concepts:
                    kept.append(candidate if len(concepts) == len(candidate.concepts) else candidate._replace(concepts=concepts))
            filtered.append(kept)
        return filtered


def _require_types(dictionary: Dictionary, where: str) -> None:
    if not dictionary.has_types:
        raise ValueError(
            f"{where}: types and exclude_types keep or drop concepts by their types, but none of the "
            "vocabulary's concepts has a type (its file gave none: a BioSyn CUI||name file never does, nor a CTD "
            "file without tree numbers): index one read with types (MeSH, CTD, OBO, UMLS or a scispaCy KB), or "
            "set types = null and exclude_types = []"
        )


def _require_matched(setting: str, patterns: Sequence[str], types: frozenset, where: str) -> None:
    unmatched = [p for p in patterns if not any(t.startswith(p) for t in types)]
    if unmatched:
        raise ValueError(
            f"{where}: {setting} {unmatched!r} matches no type of the vocabulary (a pattern keeps or drops the "
            f"types it starts, case and spaces included); its types look like {', '.join(_samples(types))}"
        )


def _samples(types: Sequence[str], n: int = 6) -> List[str]:
    """A few of the vocabulary's types, the first of each initial first, so that each family shows."""
    ordered = sorted(types)
    firsts = [t for i, t in enumerate(ordered) if i == 0 or t[:1] != ordered[i - 1][:1]]
    shown = set(firsts)
    return (firsts + [t for t in ordered if t not in shown])[:n]


def _types_of(concept: Concept, dictionary: Dictionary) -> Tuple[str, ...]:
    # The vocabulary files its details under the ID it leads with, which a corpus's preferred ID may have displaced.
    details = next((dictionary.details[cui] for cui in concept if cui in dictionary.details), None)
    return () if details is None else details.types
