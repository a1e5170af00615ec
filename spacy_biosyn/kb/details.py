"""What a vocabulary says of its concepts beyond their names, by the ID each
concept leads with there: packed (packed.py), since a UMLS-size vocabulary
has a million concepts. As a dict of tuples they took 0.34 GB, and the
reader's freed strings around them another 0.35 GB that Python kept
(docs/record.md).
"""
import json
from array import array
from collections.abc import ItemsView, ValuesView
from functools import cached_property
from pathlib import Path
from typing import Dict, Iterable, Iterator, Mapping, NamedTuple, Optional, Tuple, Union

import numpy as np
import srsly

from ..errors import DictionaryError
from .packed import StringPacker, StringRows


class ConceptDetails(NamedTuple):
    """What a vocabulary says of a concept beyond its names: its name as the
    vocabulary writes it, its types (semantic types, tree numbers, an OBO
    namespace) and its definition ("" where it gives none)."""

    name: str
    types: Tuple[str, ...] = ()
    definition: str = ""


# Lookups a ConceptTable keeps answered (some 10 MB at most).
_RECENT = 65_536


class ConceptTable(Mapping[str, ConceptDetails]):
    """ConceptDetails by ID, read-only, in the order given; each ID once
    (`repeated_id` finds one given twice)."""

    def __init__(self, details: Iterable[Tuple[str, ConceptDetails]] = ()):
        ids, names, definitions, types = StringPacker(), StringPacker(), StringPacker(), StringPacker()
        type_ends = array("q", [0])
        for cui, (name, concept_types, definition) in details:
            ids.append(cui)
            names.append(name)
            definitions.append(definition)
            for concept_type in concept_types:
                types.append(concept_type)
            type_ends.append(len(types))
        self._ids, self._names, self._definitions, self._types = (
            packer.packed() for packer in (ids, names, definitions, types)
        )
        self._type_ends = np.frombuffer(type_ends, dtype=np.int64)

    @classmethod
    def of(cls, details: Mapping[str, ConceptDetails]) -> "ConceptTable":
        """`details` as a table (itself where it is one: a table never changes)."""
        return details if isinstance(details, ConceptTable) else cls(details.items())

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __contains__(self, cui: object) -> bool:
        return isinstance(cui, str) and self._found(cui) is not None

    def __getitem__(self, cui: str) -> ConceptDetails:
        found = self._found(cui) if isinstance(cui, str) else None
        if found is None:
            raise KeyError(cui)
        return found

    def items(self) -> ItemsView:
        return _Items(self)

    def values(self) -> ValuesView:
        return _Values(self)

    def __repr__(self) -> str:
        return f"<ConceptTable of {len(self):,} concepts>"

    def __getstate__(self) -> dict:
        # str hashes differ from one process to the next: the lookup is made again where unpickled.
        return {key: value for key, value in vars(self).items() if key not in ("_rows_by_id", "_recent")}

    def repeated_id(self) -> Optional[str]:
        """An ID given more than once, if any."""
        return self._rows_by_id.repeated()

    def _found(self, cui: str) -> Optional[ConceptDetails]:
        # Filters ask for the same few thousand concepts again and again: a
        # lookup in the packed table takes 10 us, in a dict 0.1.
        recent = self._recent
        if cui not in recent:
            if len(recent) >= _RECENT:
                recent.clear()
            row = self._rows_by_id.row(cui)
            recent[cui] = None if row is None else self._details(row)
        return recent[cui]

    @cached_property
    def _recent(self) -> Dict[str, Optional[ConceptDetails]]:
        return {}

    @cached_property
    def _rows_by_id(self) -> StringRows:
        return StringRows(self._ids)

    def _details(self, row: int) -> ConceptDetails:
        start, end = self._type_ends[row : row + 2].tolist()
        return ConceptDetails(self._names[row], tuple(self._types[start:end]), self._definitions[row])

    def _rows(self) -> Iterator[Tuple[str, ConceptDetails]]:
        # In order, without a lookup per ID.
        type_ends = self._type_ends.tolist()
        types = iter(self._types)
        for cui, name, definition, start, end in zip(self._ids, self._names, self._definitions, type_ends, type_ends[1:]):
            yield cui, ConceptDetails(name, tuple(next(types) for _ in range(end - start)), definition)


class _Items(ItemsView):
    def __iter__(self):
        return self._mapping._rows()


class _Values(ValuesView):
    def __iter__(self):
        return (details for _, details in self._mapping._rows())


def write_details(path: Path, details: Mapping[str, ConceptDetails]) -> None:
    """One JSON line per concept, `{"id", "name", "types", "definition"}`; no
    file where there are none (a BioSyn `CUI||name` dictionary)."""
    path = Path(path)
    if not details:
        path.unlink(missing_ok=True)
        return
    with path.open("w", encoding="utf-8") as f:
        for cui, (name, types, definition) in details.items():
            f.write(json.dumps({"id": cui, "name": name, "types": list(types), "definition": definition}, ensure_ascii=False) + "\n")


def read_details(path: Union[str, Path]) -> ConceptTable:
    """What `write_details` wrote, read into a table a line at a time; an
    empty one where no file is."""
    path = Path(path)
    if not path.exists():
        return ConceptTable()
    with path.open(encoding="utf-8") as f:
        table = ConceptTable(_saved_details(path, f))
    repeated = table.repeated_id()
    if repeated is not None:
        raise DictionaryError(f"{path}: the concept {repeated!r} is saved twice; save the pipeline again")
    return table


def _saved_details(path: Path, lines: Iterable[str]) -> Iterator[Tuple[str, ConceptDetails]]:
    for number, line in enumerate(lines, start=1):
        try:
            record = srsly.json_loads(line)  # ujson: half json's time on MEDIC's 12k concepts at each load
            cui, name, types, definition = record["id"], record["name"], record["types"], record["definition"]
            if not (all(isinstance(s, str) for s in (cui, name, definition)) and isinstance(types, list)
                    and all(isinstance(t, str) for t in types)):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: JSON nested too deep
            raise DictionaryError(f"{path}, line {number}: not a saved concept ({line[:80]!r}); save the pipeline again") from None
        yield cui, ConceptDetails(name, tuple(types), definition)
