"""The concept dictionary: unique normalized names, each with its concept IDs.

Files are in BioSyn's format, one `CUI||name` pair a line. A CUI field may
join several IDs with `|` (one name, several concepts, e.g. a MeSH and an OMIM
ID); all are kept, and a prediction is right when any of them matches.
"""
import hashlib
from pathlib import Path
from functools import cached_property
from itertools import chain
from typing import Dict, FrozenSet, Iterable, List, Sequence, Tuple, Union

from .text import normalize, numbered_lines


class DictionaryError(ValueError):
    """A dictionary file that cannot be read as `CUI||name` lines."""


class Dictionary:
    """Names in a fixed order (their row in every index) and their CUIs."""

    def __init__(self, names: Sequence[str], cuis: Sequence[Tuple[str, ...]]):
        if len(names) != len(cuis):
            raise ValueError(f"{len(names)} names but {len(cuis)} CUI tuples")
        self.names: List[str] = list(names)
        self.cuis: List[Tuple[str, ...]] = [tuple(c) for c in cuis]

    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: str) -> bool:
        """Whether a normalized string is one of the names."""
        return name in self._name_set

    @cached_property
    def _name_set(self) -> FrozenSet[str]:
        return frozenset(self.names)

    @classmethod
    def from_pairs(cls, pairs: Iterable[Tuple[str, str]]) -> "Dictionary":
        """Build from (CUI field, name) pairs; names are normalized and the
        CUIs of names that normalize alike are merged, in first-seen order."""
        merged: Dict[str, Dict[str, None]] = {}
        for cui_field, name in pairs:
            ids = merged.setdefault(normalize(name), {})
            for cui in split_cuis(cui_field):
                ids[cui] = None
        merged.pop("", None)
        return cls(list(merged), [tuple(ids) for ids in merged.values()])

    @classmethod
    def from_file(cls, path: Union[str, Path]) -> "Dictionary":
        """Read a BioSyn `CUI||name` file (UTF-8, BOM and CRLF tolerated).

        A malformed line raises DictionaryError naming the file and line, and
        so does a file with no entries at all.
        """
        path = Path(path)
        pairs = []
        for number, line in numbered_lines(path):
            cui_field, sep, name = line.partition("||")
            where = f"{path}, line {number}"
            if not sep:
                raise DictionaryError(f"{where}: expected 'CUI||name', found {line[:80]!r}")
            if not all(c.strip() for c in cui_field.split("|")):
                raise DictionaryError(f"{where}: empty concept ID in {line[:80]!r}")
            if not normalize(name):
                raise DictionaryError(
                    f"{where}: the name {name!r} is empty once punctuation is removed"
                )
            pairs.append((cui_field, name))
        if not pairs:
            raise DictionaryError(f"{path}: the dictionary has no 'CUI||name' entries")
        return cls.from_pairs(pairs)

    def with_synonyms(self, pairs: Iterable[Tuple[str, str]]) -> "Dictionary":
        """A new dictionary with extra (CUI field, name) pairs merged in, such
        as training mentions: a known name gains the extra CUIs, a new name is
        appended, and every existing name keeps its row."""
        own = zip(("|".join(ids) for ids in self.cuis), self.names)
        return Dictionary.from_pairs(chain(own, pairs))

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
        for name, cuis in zip(self.names, self.cuis):
            yield "|".join(cuis) + "||" + name


def split_cuis(field: str) -> Tuple[str, ...]:
    """'D001|613097' -> ('D001', '613097'); '+' joins the IDs of a composite
    mention's parts in some corpora and is split alike."""
    return tuple(c.strip() for c in field.replace("+", "|").split("|") if c.strip())
