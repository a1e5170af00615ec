"""scispaCy's knowledge bases (`umls_2022_ab_cat0129.jsonl`, `umls_mesh_2022.jsonl`):
one JSON object a line, with `concept_id`, `canonical_name`, `aliases`,
`types` and an optional `definition`. The concept_id is the ID, the
canonical name and aliases the names, `types` the types.
"""
import json
from functools import partial
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set

from ..files.downloads import cached_path
from ..kb.details import ConceptDetails
from ..kb.dictionary import Dictionary, DictionaryError
from ..kb.ids import checked_id
from ..parts import SCISPACY_KB, registry
from ..preprocess.text import numbered_lines
from .common import Entries, PathLike, VocabularyReader, _Details, _dictionary


def looks_like_scispacy_kb(first_line: str, name: str) -> bool:
    """A scispaCy knowledge base: JSON lines."""
    return first_line.startswith("{") or name.endswith(".jsonl")


def read_scispacy_kb(path: PathLike, types: Optional[Sequence[str]] = None) -> Dictionary:
    """scispaCy's knowledge-base JSONL (`concept_id`, `canonical_name`,
    `aliases`, `types`): the concept_id is the ID, the canonical name and
    aliases its names; with `types`, only concepts of one of those types."""
    path = cached_path(path)
    if isinstance(types, str):
        types = [types]  # one type, not a set of its characters
    details = _Details()
    return _dictionary(path, _scispacy_entries(path, None if types is None else set(types), details), details)


def _scispacy_entries(path: Path, types: Optional[Set[str]], details: Dict[str, ConceptDetails]) -> Entries:
    for number, line in numbered_lines(path):
        try:
            concept = json.loads(line)
            cui, canonical = concept["concept_id"], concept["canonical_name"]
            aliases, concept_types = concept.get("aliases", []), concept.get("types", [])
            if not (isinstance(cui, str) and cui and isinstance(canonical, str) and _strings(aliases)
                    and _strings(concept_types)):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: JSON nested too deep
            raise DictionaryError(
                f"{path}, line {number}: expected a JSON object with a string 'concept_id', a string "
                f"'canonical_name', a list of string 'aliases' and a list of string 'types', found {line[:80]!r}"
            ) from None
        checked_id(cui, f"{path}, line {number}")
        if types is None or types.intersection(concept_types):
            definition = concept.get("definition")
            details.record(cui, ConceptDetails(canonical, tuple(concept_types), definition if isinstance(definition, str) else ""))
            for name in [canonical, *aliases]:
                yield (cui,), name


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@registry.readers(SCISPACY_KB)
def scispacy_kb(path: str, types: Optional[List[str]] = None) -> VocabularyReader:
    return partial(read_scispacy_kb, path, types)
