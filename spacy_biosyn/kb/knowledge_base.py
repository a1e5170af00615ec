"""What an ID means: the concepts of a linker's dictionary, looked up the
way scispaCy users know (`linker.kb.cui_to_entity[cui]`).

A concept is known by its preferred ID, as in kb_ents (concepts.by_concept):
MEDIC's `D001943|114480` on one name and `D001943` alone on another are one
disease. Any of its IDs finds it, with or without a namespace (`MESH:D001943`
finds `D001943`). Names are the ones the linker searches: normalized, and
including synonyms added to the dictionary. A concept's canonical name is
the name its vocabulary gives it, as written there, where the reader keeps
it (every reader but BioSyn's `CUI||name`, whose names are normalized
already); else the first of its names that no other concept shares (MEDIC
lists "HPP" under two diseases before one of them is named), else its
first. Types and definition are the vocabulary's where it has them.
"""
from typing import Dict, Iterator, List, Mapping, NamedTuple, Optional, Set, Tuple

from ..ty import Concept
from .dictionary import Dictionary
from .ids import bare_id


class Entity(NamedTuple):
    """scispaCy's Entity, field for field, plus every ID of the concept."""

    concept_id: str  # the preferred ID: what span._.cui reports
    canonical_name: str  # as the vocabulary writes it
    aliases: Tuple[str, ...]  # its other names (normalized, as searched), in dictionary order
    types: Tuple[str, ...]  # semantic types, tree numbers or namespace, where the vocabulary has them
    definition: str  # "" where the vocabulary has none
    ids: Concept  # the IDs its canonical name has, preferred first


class ConceptLookup(Mapping[str, Entity]):
    """Any ID of a concept -> its Entity; iterates over preferred IDs."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def __getitem__(self, cui: str) -> Entity:
        preferred = self._preferred_id(cui)
        if preferred is None:
            raise KeyError(cui)
        # (name, its concepts led by `preferred`, whether no other concept has the name)
        rows = []
        for row in self.dictionary.rows_by_cui[preferred].tolist():
            concepts = self.dictionary.concepts[row]
            own = [c for c in concepts if c[0] == preferred]
            if own:
                rows.append((self.dictionary.names[row], own, len(own) == len(concepts)))
        canonical = next((row for row in rows if row[2]), rows[0])
        ids = tuple(dict.fromkeys(cui for concept in canonical[1] for cui in concept))
        # Not a composite training mention filed under its first part ("breast and ovarian cancer").
        aliases = tuple(
            name for name, own, _ in rows
            if name != canonical[0] and any(set(concept) <= set(ids) for concept in own)
        )
        details = next((self.dictionary.details[i] for i in ids if i in self.dictionary.details), None)
        if details is None:
            return Entity(preferred, canonical[0], aliases, (), "", ids)
        return Entity(preferred, details.name, aliases, details.types, details.definition, ids)

    def _preferred_id(self, cui: str) -> Optional[str]:
        """The preferred ID of the concept that `cui` (or, if not found, its
        namespace-free form) belongs to; the first such concept in the
        dictionary when an ID is shared."""
        rows_by_cui = self.dictionary.rows_by_cui
        for key in dict.fromkeys((cui, bare_id(cui))):
            for row in rows_by_cui.get(key, ()):
                for concept in self.dictionary.concepts[int(row)]:
                    if key in concept:
                        return concept[0]
        return None

    def __iter__(self) -> Iterator[str]:
        return iter(self._preferred_ids)

    def __len__(self) -> int:
        return len(self._preferred_ids)

    @property
    def _preferred_ids(self) -> List[str]:
        seen: Dict[str, None] = {}
        for concepts in self.dictionary.concepts:
            seen.update(dict.fromkeys(concept[0] for concept in concepts))
        return list(seen)


class AliasLookup(Mapping[str, Set[str]]):
    """A name, normalized as the linker searches -> its concepts' preferred IDs."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def __getitem__(self, name: str) -> Set[str]:
        row = self.dictionary.row(name)
        if row is None:
            raise KeyError(name)
        return {concept[0] for concept in self.dictionary.concepts[row]}

    def __iter__(self) -> Iterator[str]:
        return iter(self.dictionary.names)

    def __len__(self) -> int:
        return len(self.dictionary)


class KnowledgeBase:
    """scispaCy's `linker.kb`, read from a linker's dictionary."""

    def __init__(self, dictionary: Dictionary):
        self.cui_to_entity = ConceptLookup(dictionary)
        self.alias_to_cuis = AliasLookup(dictionary)
