"""The concept dictionary: unique normalized names, each with its concepts.

A concept is the tuple of IDs one vocabulary entry gives it, preferred ID
first: MEDIC lists a disease under its MeSH and its OMIM ID
(`114480|D001943||breast cancer`), and that is one concept, not two. A name
shared by several entries (MEDIC's "hpp" names two diseases) has several
concepts. Files in BioSyn's `CUI||name` format hold one concept and one name
a line; readers of other vocabularies are in vocabularies/.

Names and concepts are packed into UTF-8 buffers (packed.py), and so are
the concepts' details (details.py).
"""
import hashlib
from array import array
from functools import cached_property, lru_cache
from itertools import chain
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import DictionaryError
from ..preprocess.text import normalize, numbered_lines
from ..ty import Concept
from .details import ConceptDetails, ConceptTable
from .ids import IdPreference, bare_id, checked_id, split_cuis
from .namespaces import recognized_namespaces
from .packed import HashedRows, PackedStrings, StringRows


class _PackedConcepts(Sequence[Tuple[Concept, ...]]):
    """Each name's concepts, packed as one field: IDs joined by `|`,
    concepts by `||` (no ID is empty or holds a `|`)."""

    def __init__(self, fields: PackedStrings):
        self.fields = fields

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_concepts(field) for field in self.fields[i]]
        return _concepts(self.fields[i])

    def take(self, ids: Sequence[int]) -> List[Tuple[Concept, ...]]:
        """The concepts of the names at row numbers `ids` (PackedStrings.take)."""
        return [_found_concepts(field) for field in self.fields.take(ids)]


class _AllIds(_PackedConcepts):
    """Every ID of each name, over all its concepts, in order: what a
    prediction is scored against (any of them counts)."""

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_all_ids(field) for field in self.fields[i]]
        return _all_ids(self.fields[i])


def _concepts(field: str) -> Tuple[Concept, ...]:
    return tuple(tuple(concept.split("|")) for concept in field.split("||")) if field else ()


# The same few thousand names come back as candidates (`take`) mention
# after mention: parsing their concepts again took 7% of linking NCBI dev.
# A walk over every name (building, saving) parses each once, without it.
_found_concepts = lru_cache(maxsize=2**14)(_concepts)


def _all_ids(field: str) -> Concept:
    return tuple(dict.fromkeys(cui for cui in field.split("|") if cui))


def _pack(concepts: Sequence[Concept]) -> str:
    return "||".join("|".join(ids) for ids in concepts)


# Dictionary's cached lookups that rest on Python's per-process str hashes.
_HASHED_LOOKUPS = ("_rows_by_name", "rows_by_cui")


class Dictionary:
    """Names in a fixed order (their row in every index) and their concepts."""

    def __init__(self, names: Iterable[str], concepts: Iterable[Sequence[Concept]]):
        self._set(PackedStrings(names), PackedStrings(map(_pack, concepts)))

    def _set(self, names: "PackedStrings", fields: "PackedStrings") -> None:
        if len(names) != len(fields):
            raise ValueError(f"{len(names)} names but {len(fields)} concept lists")
        # A concept's ConceptDetails by the ID its vocabulary leads with, where the vocabulary has them.
        self.details = ConceptTable()
        self.names = names
        self.concepts = _PackedConcepts(fields)
        self.cuis = _AllIds(fields)

    def __len__(self) -> int:
        return len(self.names)

    def __getstate__(self) -> dict:
        # str hashes differ from one process to the next (a spawned nlp.pipe
        # worker): the lookups sorted by hash are made again where unpickled.
        return {key: value for key, value in vars(self).items() if key not in _HASHED_LOOKUPS}

    def __contains__(self, name: str) -> bool:
        """Whether a normalized string is one of the names."""
        return self.row(name) is not None

    def row(self, name: str) -> Optional[int]:
        """The row of a normalized string among the names, or None."""
        return self._rows_by_name.row(name)

    @cached_property
    def _rows_by_name(self) -> StringRows:
        # 16 bytes a name, where a set would hold a second copy of every name.
        return StringRows(self.names)

    @cached_property
    def rows_by_cui(self) -> Mapping[str, np.ndarray]:
        """The rows of each ID's names (for concept-level scoring and the KB)."""
        return _RowsById(self.cuis)

    @classmethod
    def from_pairs(cls, pairs: Iterable[Tuple[str, str]]) -> "Dictionary":
        """Build from (ID field, name) pairs, each pair one concept's name
        (`split_cuis` reads the field); names are normalized, and a name's
        concepts are gathered in first-seen order."""
        return cls.from_entries((split_cuis(field), name) for field, name in pairs)

    @classmethod
    def from_entries(cls, entries: Iterable[Tuple[Concept, str]]) -> "Dictionary":
        """Build from (concept, name) entries, the names normalized; names
        with nothing left once punctuation is removed are skipped."""
        return cls._merged((ids, normalize(name)) for ids, name in entries)

    @classmethod
    def from_file(cls, path: Union[str, Path], preference: Optional[IdPreference] = None) -> "Dictionary":
        """Read a BioSyn `CUI||name` file (UTF-8, BOM and CRLF tolerated),
        each concept's IDs in the file's order or ordered by `preference`.

        A malformed line raises DictionaryError naming the file and line, and
        so does a file with no entries at all.
        """
        path = Path(path)
        entries = _checked_entries(path)
        if preference is not None:
            entries = ((preference(ids), name) for ids, name in entries)
        dictionary = cls._merged(entries)
        if not len(dictionary):
            raise DictionaryError(f"{path}: the dictionary has no 'CUI||name' entries")
        return dictionary

    @classmethod
    def from_saved(cls, path: Union[str, Path], fingerprint: str) -> "Dictionary":
        """Read what `to_file` wrote, if its bytes still have `fingerprint`:
        the lines are then names already normalized and merged, each
        concept on a line of its own after its name's previous one, and
        are taken as they are (a pipeline's 72k names load in a tenth of
        the time `from_file` takes to check, normalize and merge them).
        Else DictionaryError."""
        path = Path(path)
        # Streamed into packed buffers: on 4M names, reading the file whole
        # and splitting it into strings peaked at 2.2 GiB for a 0.35 GiB result.
        digest = hashlib.sha256()
        names, fields = bytearray(), bytearray()
        name_ends, field_ends = array("q"), array("q")
        previous = None
        with path.open("rb") as f:
            for line in f:
                digest.update(line)
                field, _, name = line.rstrip(b"\n").partition(b"||")
                if name == previous:  # another concept of the previous line's name
                    fields += b"||" + field
                    field_ends[-1] = len(fields)
                else:
                    names += name
                    name_ends.append(len(names))
                    fields += field
                    field_ends.append(len(fields))
                    previous = name
        if digest.hexdigest() != fingerprint:
            raise DictionaryError(f"{path}: not the dictionary that was saved (its checksum differs)")
        dictionary = cls.__new__(cls)
        dictionary._set(PackedStrings.from_buffer(bytes(names), name_ends), PackedStrings.from_buffer(bytes(fields), field_ends))
        return dictionary

    @classmethod
    def _merged(cls, entries: Iterable[Tuple[Concept, str]]) -> "Dictionary":
        # Packed fields, not lists per name: millions of names pass through here.
        merged: Dict[str, str] = {}
        for ids, name in entries:
            ids = tuple(dict.fromkeys(ids))  # "D000001|D000001|114480" names two IDs, not three
            if name and ids:
                # Readers name the file and line first; this guards every other way in,
                # since a saved dictionary.txt with such an ID could not be loaded again.
                for cui in ids:
                    checked_id(cui, f"the concept {ids!r} of the name {name!r}")
                known = merged.get(name)
                if known is None:
                    merged[name] = "|".join(ids)
                elif not any(set(ids) <= set(c) for c in _concepts(known)):
                    merged[name] = known + "||" + "|".join(ids)
        return cls(merged.keys(), map(_concepts, merged.values()))

    def with_synonyms(self, pairs: Iterable[Tuple[str, str]]) -> "Dictionary":
        """A new dictionary with extra (ID field, name) pairs merged in, such
        as training mentions: a known name gains a concept unless one of its
        concepts already holds all the pair's IDs, a new name is appended,
        and every existing name keeps its row. Only the extra names are
        normalized: the dictionary's own already are."""
        own = ((ids, name) for name, concepts in zip(self.names, self.concepts) for ids in concepts)
        extra = ((split_cuis(field), normalize(name)) for field, name in pairs)
        return Dictionary._merged(chain(own, extra)).with_details(self.details)

    def with_details(self, details: Mapping[str, ConceptDetails]) -> "Dictionary":
        """Attach what the vocabulary says of its concepts (by the ID each
        concept leads with there); returns this dictionary."""
        self.details = ConceptTable.of(details)
        self.__dict__.pop("all_types", None)
        return self

    @cached_property
    def ids_by_local_id(self) -> Dict[str, Tuple[str, ...]]:
        """An ID's local part, upper-cased, -> the dictionary's IDs with it,
        any namespace or none (`D001943` -> `MESH:D001943`), in order:
        lookups in any form (knowledge_base.py)."""
        found: Dict[str, Dict[str, None]] = {}
        for cuis in self.cuis:
            for cui in cuis:
                found.setdefault(bare_id(cui).upper(), {})[cui] = None
        return {key: tuple(ids) for key, ids in found.items()}

    @cached_property
    def id_systems(self) -> Optional[Dict[str, str]]:
        """The known ID systems its IDs show (namespaces.recognized_namespaces)."""
        return recognized_namespaces(cui for cuis in self.cuis for cui in cuis)

    @cached_property
    def all_types(self) -> frozenset:
        """Every type the vocabulary gives a concept."""
        return frozenset(t for details in self.details.values() for t in details.types)

    @property
    def has_types(self) -> bool:
        """Whether the vocabulary gave any concept a type."""
        return bool(self.all_types)

    def with_preferred_ids(self, usage: Mapping[str, int]) -> "Dictionary":
        """A new dictionary ordered by how an annotated corpus uses the IDs.
        `usage` counts IDs without namespace (LinkingEngine.learn_preferred_ids).
        - Each concept's most used ID comes first: NCBI Disease writes OMIM
          610102 for "C7 deficiency", whose MEDIC concept leads with MeSH
          C566443.
        - Of the concepts that share a name ("dm": diabetes mellitus and
          myotonic dystrophy), the most used comes first, so the corpus's
          prior decides the ambiguous name instead of the file's order.
        Concepts none of whose IDs are used keep their order (sorts are stable)."""

        def reordered(ids: Concept) -> Concept:
            return tuple(sorted(ids, key=lambda cui: -usage.get(bare_id(cui), 0)))

        def ranked(concepts: Sequence[Concept]) -> List[Concept]:
            return sorted(map(reordered, concepts), key=lambda ids: -usage.get(bare_id(ids[0]), 0))

        return Dictionary(self.names, (ranked(concepts) for concepts in self.concepts)).with_details(self.details)

    def pairs(self) -> Iterator[Tuple[str, str]]:
        """(ID field, name) of every concept of every name, in order, as
        `from_pairs` takes them."""
        for name, concepts in zip(self.names, self.concepts):
            for ids in concepts:
                yield "|".join(ids), name

    def to_file(self, path: Union[str, Path]) -> None:
        """Write in the format `from_file` reads: the round trip is exact."""
        with Path(path).open("w", encoding="utf-8") as f:
            for line in self._lines():
                f.write(line + "\n")

    def fingerprint(self) -> str:
        """A hash of names, their order and their concepts: an index built
        for one dictionary must not be used with another. It is the SHA-256
        of the file `to_file` writes."""
        digest = hashlib.sha256()
        for line in self._lines():
            digest.update(line.encode("utf-8") + b"\n")
        return digest.hexdigest()

    def _lines(self) -> Iterable[str]:
        for field, name in self.pairs():
            yield field + "||" + name


def _checked_entries(path: Path) -> Iterator[Tuple[Concept, str]]:
    """(IDs, normalized name) of each line, or DictionaryError at the first
    malformed one. A file none of whose IDs holds a digit is no dictionary
    (every vocabulary's IDs do: D001943, 114480, C0006142, MONDO:0007254):
    BioSyn's spelling corrections (`misspelling||correction`) look alike."""
    any_digit, number = False, 0
    for number, line in numbered_lines(path):
        cui_field, sep, name = line.partition("||")
        where = f"{path}, line {number}"
        if not sep:
            raise DictionaryError(f"{where}: expected 'CUI||name', found {line[:80]!r}")
        if not all(c.strip() for c in cui_field.replace("+", "|").split("|")):
            raise DictionaryError(f"{where}: empty concept ID in {line[:80]!r}")
        for cui in cui_field.replace("+", "|").split("|"):
            checked_id(cui.strip(), where)
        any_digit = any_digit or any(c.isdigit() for c in cui_field)
        if "|" in name:
            raise DictionaryError(
                f"{where}: the name {name[:60]!r} holds a '|'. Raw MEDIC lists a concept's "
                "names as 'IDs||Name|Synonym|...': read it with spacy_biosyn.MedicVocabulary.v1"
            )
        normalized = normalize(name)
        if not normalized:
            raise DictionaryError(f"{where}: the name {name!r} is empty once punctuation is removed")
        yield split_cuis(cui_field), normalized
    if number and not any_digit:
        raise DictionaryError(
            f"{path}: no ID in the file holds a digit, so these are not 'CUI||name' lines (a spelling "
            "corrections file, 'misspelling||correction', looks alike: give it as `corrections`)"
        )


class _RowsById(Mapping[str, np.ndarray]):
    """Each ID's rows among the names, in increasing order, in 16 bytes an
    (ID, name) pair. For a UMLS-size vocabulary (3.26M names, 1M IDs) that
    took 0.09 GiB where a dict of arrays took 0.25 (docs/record.md)."""

    def __init__(self, ids_of_rows: Sequence[Concept]):
        hashes, rows = array("q"), array("q")
        for row, ids in enumerate(ids_of_rows):
            for cui in ids:
                hashes.append(hash(cui))
                rows.append(row)
        self._by_hash = HashedRows(np.frombuffer(hashes, dtype=np.int64), np.frombuffer(rows, dtype=np.int64))
        self._ids_of_rows = ids_of_rows

    def __getitem__(self, cui: str) -> np.ndarray:
        # Rows of another ID with the same hash are left out.
        rows = [row for row in self._by_hash.candidates(cui) if cui in self._ids_of_rows[row]]
        if not rows:
            raise KeyError(cui)
        return np.array(rows, dtype=np.int64)

    @cached_property
    def _ids(self) -> List[str]:
        return list(dict.fromkeys(chain.from_iterable(self._ids_of_rows)))

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class NameRows(dict):
    """The rows of normalized strings among a dictionary's names, each string
    looked up once: preprocessing asks whether a string is a name, and the
    linker then takes the rows of the strings it ranks from here."""

    def __init__(self, dictionary: Dictionary):
        super().__init__()
        self.dictionary = dictionary

    def __missing__(self, text: str) -> Optional[int]:
        row = self[text] = self.dictionary.row(text)
        return row

    def is_name(self, text: str) -> bool:
        return self[text] is not None
