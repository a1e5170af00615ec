"""What an ID means: the concepts of a linker's dictionary, looked up the
way scispaCy users know (`linker.kb.cui_to_entity[cui]`).

A concept is known by its preferred ID, as in kb_ents (concepts.by_concept):
MEDIC's `D001943|114480` on one name and `D001943` alone on another are one
disease. Any of its IDs finds it, with or without a namespace (`MESH:D001943`
finds `D001943`); an ID that leads a concept of its own finds that one. Names are the ones the linker searches: normalized, and
including synonyms added to the dictionary. A concept's canonical name is
the name its vocabulary gives it, as written there, where the reader keeps
it (every reader but BioSyn's `CUI||name`, whose names are normalized
already); else the first of its names that no other concept shares (MEDIC
lists "HPP" under two diseases before one of them is named), else its
first. Types and definition are the vocabulary's where it has them.
"""
from typing import Dict, Iterator, List, Mapping, NamedTuple, Optional, Set, Tuple

from ..preprocess.text import normalize
from ..ty import Concept
from .dictionary import Dictionary
from .ids import bare_id, split_cuis


class Entity(NamedTuple):
    """scispaCy's Entity, field for field, plus every ID of the concept."""

    concept_id: str  # the preferred ID: what span._.cui reports
    canonical_name: str  # as the vocabulary writes it
    aliases: Tuple[str, ...]  # its other names (normalized, as searched), in dictionary order
    types: Tuple[str, ...]  # semantic types, tree numbers or namespace, where the vocabulary has them
    definition: Optional[str]  # None where the vocabulary has none, as scispaCy's
    ids: Concept  # the IDs its canonical name has, preferred first


class ConceptLookup(Mapping[str, Entity]):
    """Any ID of a concept, in any form a user holds (bare or namespaced,
    any case, or a multi-ID field of one concept joined by '|') -> its
    Entity; iterates over preferred IDs."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def __getitem__(self, cui: str) -> Entity:
        concepts = self.preferred_ids(cui) if isinstance(cui, str) else []
        if len(concepts) > 1:
            raise KeyError(f"{cui!r} joins the IDs of {len(concepts)} concepts ({', '.join(concepts)}), as a "
                           "composite mention's cui does: look each up, or use kb.entities(cui)")
        if not concepts or None in concepts:
            raise KeyError(cui)
        return self._entity(concepts[0])

    def preferred_ids(self, field: str) -> List[Optional[str]]:
        """The preferred ID of each distinct concept the IDs of `field`
        (joined by '|') name, in order; None for an ID no concept has."""
        return list(dict.fromkeys(self._preferred_id(cui) for cui in split_cuis(field)))

    def _entity(self, preferred: str) -> Entity:
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
            return Entity(preferred, canonical[0], aliases, (), None, ids)
        return Entity(preferred, details.name, aliases, details.types, details.definition or None, ids)

    def _preferred_id(self, cui: str) -> Optional[str]:
        """The preferred ID of the concept `cui` belongs to: the ID as
        written, else the same ID in any case with the same namespace or
        none on either side (`d001943` and `MESH:D001943` find MEDIC's
        `D001943`, `D001943` finds CTD's `MESH:D001943`; `HP:0001250`
        never finds `MONDO:0001250`); the first such concept in the
        dictionary when an ID is shared."""
        cui = cui.strip()
        return self._concept_of(cui) or next(
            filter(None, map(self._concept_of, _same_id(cui, self.dictionary.ids_by_local_id))), None)

    def _concept_of(self, cui: str) -> Optional[str]:
        # An ID that leads a concept of its own is that concept, even where a
        # name also lists it under another's lead (MEDIC's C537017, Kennedy
        # disease, beside the heading D020966 on one name).
        concepts = [concept for row in self.dictionary.rows_by_cui.get(cui, ())
                    for concept in self.dictionary.concepts[int(row)] if cui in concept]
        return cui if any(concept[0] == cui for concept in concepts) else concepts[0][0] if concepts else None

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


def _same_id(cui: str, ids_by_local_id: Mapping[str, Tuple[str, ...]]) -> List[str]:
    """The dictionary's IDs that `cui` writes in another form."""
    namespace, colon, _ = cui.rpartition(":")
    return [found for found in ids_by_local_id.get(bare_id(cui).upper(), ())
            if not colon or ":" not in found or found.rpartition(":")[0].upper() == namespace.upper()]


class AliasLookup(Mapping[str, Set[str]]):
    """A name, as written or as the linker normalizes it ("Breast Cancer",
    "breast-cancer") -> its concepts' preferred IDs; iterates over the
    normalized names."""

    def __init__(self, dictionary: Dictionary):
        self.dictionary = dictionary

    def __getitem__(self, name: str) -> Set[str]:
        row = self.dictionary.row(normalize(name)) if isinstance(name, str) else None
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

    def entities(self, cui: str) -> List[Entity]:
        """The Entity of each concept an ID field names: one for an ID or a
        multi-ID field of one concept, one per part for a composite's
        `span._.cui` ("OMIM:114480|OMIM:167000"); KeyError naming any ID no
        concept has."""
        concepts = self.cui_to_entity.preferred_ids(cui)
        if not concepts or None in concepts:
            raise KeyError(cui)
        return [self.cui_to_entity[preferred] for preferred in concepts]
