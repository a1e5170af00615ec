"""The concept dictionary: unique normalized names, each with its concept IDs.

Files are in BioSyn's format, one `CUI||name` pair a line. A CUI field may
join several IDs with `|` (one name, several concepts, e.g. a MeSH and an OMIM
ID); all are kept, and a prediction is right when any of them matches.

Names and CUIs are packed into UTF-8 buffers: a Python str costs about 50
bytes beyond its characters, which on a UMLS-size dictionary (millions of
names) is gigabytes of memory spent on object headers.
"""
import hashlib
import operator
from functools import cached_property
from itertools import chain
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union, overload

import numpy as np

from .text import normalize, numbered_lines


class DictionaryError(ValueError):
    """A dictionary file that cannot be read as `CUI||name` lines."""


class PackedStrings(Sequence[str]):
    """Read-only strings in one UTF-8 buffer, with each one's offsets."""

    def __init__(self, strings: Iterable[str]):
        encoded = [s.encode("utf-8") for s in strings]
        self._offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=self._offsets[1:])
        self._buffer = b"".join(encoded)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    @overload
    def __getitem__(self, i: int) -> str: ...

    @overload
    def __getitem__(self, i: slice) -> List[str]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = operator.index(i)
        if not -len(self) <= i < len(self):
            raise IndexError(f"string {i} of {len(self)}")
        i %= len(self)
        return self._buffer[self._offsets[i] : self._offsets[i + 1]].decode("utf-8")

    def __iter__(self) -> Iterator[str]:
        offsets = self._offsets.tolist()
        for start, end in zip(offsets, offsets[1:]):
            yield self._buffer[start:end].decode("utf-8")


class _CuiTuples(Sequence[Tuple[str, ...]]):
    """Each name's CUIs, kept packed as `|`-joined fields (no CUI holds a `|`)."""

    def __init__(self, fields: PackedStrings):
        self.fields = fields

    def __len__(self) -> int:
        return len(self.fields)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [_split(field) for field in self.fields[i]]
        return _split(self.fields[i])


def _split(field: str) -> Tuple[str, ...]:
    return tuple(field.split("|")) if field else ()


class Dictionary:
    """Names in a fixed order (their row in every index) and their CUIs."""

    def __init__(self, names: Iterable[str], cuis: Iterable[Sequence[str]]):
        self.names = PackedStrings(names)
        self.cuis = _CuiTuples(PackedStrings("|".join(ids) for ids in cuis))
        if len(self.names) != len(self.cuis):
            raise ValueError(f"{len(self.names)} names but {len(self.cuis)} CUI tuples")

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: str) -> bool:
        """Whether a normalized string is one of the names."""
        return self.row(name) is not None

    def row(self, name: str) -> Optional[int]:
        """The row of a normalized string among the names, or None."""
        hashes, rows = self._sorted_name_hashes
        key = hash(name)
        start, end = (np.searchsorted(hashes, key, side) for side in ("left", "right"))
        return next((int(row) for row in rows[start:end] if self.names[row] == name), None)

    @cached_property
    def _sorted_name_hashes(self) -> Tuple[np.ndarray, np.ndarray]:
        # 16 bytes a name, where a set would hold a second copy of every name.
        hashes = np.fromiter(map(hash, self.names), dtype=np.int64, count=len(self))
        rows = np.argsort(hashes, kind="stable")
        return hashes[rows], rows

    @cached_property
    def rows_by_cui(self) -> Dict[str, np.ndarray]:
        """The rows of each CUI's names (for concept-level scoring)."""
        rows: Dict[str, List[int]] = {}
        for row, cuis in enumerate(self.cuis):
            for cui in cuis:
                rows.setdefault(cui, []).append(row)
        return {cui: np.array(r, dtype=np.int64) for cui, r in rows.items()}

    @classmethod
    def from_pairs(cls, pairs: Iterable[Tuple[str, str]]) -> "Dictionary":
        """Build from (CUI field, name) pairs; names are normalized and the
        CUIs of names that normalize alike are merged, in first-seen order."""
        return cls._merged((split_cuis(field), normalize(name)) for field, name in pairs)

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Dictionary":
        """Read a BioSyn `CUI||name` file (UTF-8, BOM and CRLF tolerated).

        A malformed line raises DictionaryError naming the file and line, and
        so does a file with no entries at all.
        """
        path = Path(path)
        dictionary = cls._merged(_checked_entries(path))
        if not len(dictionary):
            raise DictionaryError(f"{path}: the dictionary has no 'CUI||name' entries")
        return dictionary

    @classmethod
    def _merged(cls, entries: Iterable[Tuple[Tuple[str, ...], str]]) -> "Dictionary":
        # Tuples, not a set per name: millions of names pass through here.
        merged: Dict[str, Tuple[str, ...]] = {}
        for ids, name in entries:
            if name:
                merged[name] = tuple(dict.fromkeys(merged.get(name, ()) + ids))
        return cls(merged.keys(), merged.values())

    def with_synonyms(self, pairs: Iterable[Tuple[str, str]]) -> "Dictionary":
        """A new dictionary with extra (CUI field, name) pairs merged in, such
        as training mentions: a known name gains the extra CUIs, a new name is
        appended, and every existing name keeps its row. Only the extra
        names are normalized: the dictionary's own already are."""
        own = zip(self.cuis, self.names)
        extra = ((split_cuis(field), normalize(name)) for field, name in pairs)
        return Dictionary._merged(chain(own, extra))

    def pairs(self) -> Iterator[Tuple[str, str]]:
        """(CUI field, name) of every name, in order, as `from_pairs` takes them."""
        return zip(self.cuis.fields, self.names)

    def to_file(self, path: Union[str, Path]) -> None:
        """Write in the format `from_file` reads: the round trip is exact."""
        with Path(path).open("w", encoding="utf-8") as f:
            for line in self._lines():
                f.write(line + "\n")

    def fingerprint(self) -> str:
        """A hash of names, their order and their CUIs: an index built for one
        dictionary must not be used with another."""
        digest = hashlib.sha256()
        for line in self._lines():
            digest.update(line.encode("utf-8") + b"\n")
        return digest.hexdigest()

    def _lines(self) -> Iterable[str]:
        for field, name in self.pairs():
            yield field + "||" + name


def _checked_entries(path: Path) -> Iterator[Tuple[Tuple[str, ...], str]]:
    """(CUIs, normalized name) of each line, or DictionaryError at the first
    malformed one."""
    for number, line in numbered_lines(path):
        cui_field, sep, name = line.partition("||")
        where = f"{path}, line {number}"
        if not sep:
            raise DictionaryError(f"{where}: expected 'CUI||name', found {line[:80]!r}")
        if not all(c.strip() for c in cui_field.split("|")):
            raise DictionaryError(f"{where}: empty concept ID in {line[:80]!r}")
        normalized = normalize(name)
        if not normalized:
            raise DictionaryError(f"{where}: the name {name!r} is empty once punctuation is removed")
        yield split_cuis(cui_field), normalized


def split_cuis(field: str) -> Tuple[str, ...]:
    """'D001|613097' -> ('D001', '613097'); '+' joins the IDs of a composite
    mention's parts in some corpora and is split alike."""
    return tuple(c.strip() for c in field.replace("+", "|").split("|") if c.strip())
