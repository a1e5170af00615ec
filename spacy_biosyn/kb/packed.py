"""Strings packed into one UTF-8 buffer, and rows found by their keys'
hashes: a Python str costs about 50 bytes beyond its characters, which on a
UMLS-size vocabulary (millions of names, a million concepts) is gigabytes
spent on object headers, and a reader's freed strings around the ones it
keeps leave memory that Python does not give back.
"""
import operator
from array import array
from typing import Iterable, Iterator, List, Optional, Sequence, overload

import numpy as np


class StringPacker:
    """Strings appended one at a time to one growing buffer: no object is
    kept per string."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._ends = array("q")

    def __len__(self) -> int:
        return len(self._ends)

    def append(self, string: str) -> None:
        self._buffer += string.encode("utf-8")
        self._ends.append(len(self._buffer))

    def packed(self) -> "PackedStrings":
        return PackedStrings.from_buffer(bytes(self._buffer), self._ends)


class PackedStrings(Sequence[str]):
    """Read-only strings in one UTF-8 buffer, with each one's offsets."""

    def __init__(self, strings: Iterable[str]):
        packer = StringPacker()
        for string in strings:
            packer.append(string)
        packed = packer.packed()
        self._buffer, self._offsets = packed._buffer, packed._offsets

    @classmethod
    def from_buffer(cls, buffer: bytes, ends: Sequence[int]) -> "PackedStrings":
        """Strings already packed: string i is buffer[ends[i - 1]:ends[i]]."""
        packed = cls.__new__(cls)
        packed._offsets = np.zeros(len(ends) + 1, dtype=np.int64)
        packed._offsets[1:] = ends
        packed._buffer = buffer
        return packed

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

    def take(self, ids: Sequence[int]) -> List[str]:
        """The strings at row numbers `ids`, looked up in one pass: a search
        returns tens of names per mention, and indexing them one by one
        spent more time in numpy scalars than in decoding."""
        ids = np.asarray(ids, dtype=np.int64)
        if ids.size and not (0 <= ids.min() and ids.max() < len(self)):
            raise IndexError(f"rows {ids.min()}..{ids.max()} of {len(self)} strings")
        starts, ends = self._offsets[ids].tolist(), self._offsets[ids + 1].tolist()
        buffer = self._buffer
        return [buffer[start:end].decode("utf-8") for start, end in zip(starts, ends)]

    def __iter__(self) -> Iterator[str]:
        offsets = self._offsets.tolist()
        for start, end in zip(offsets, offsets[1:]):
            yield self._buffer[start:end].decode("utf-8")


class HashedRows:
    """Rows sorted by their keys' str hashes (16 bytes a key, where a dict
    would hold every key again): the rows whose key may be a given one, in
    row order, for the caller to check against the key itself."""

    def __init__(self, hashes: np.ndarray, rows: np.ndarray):
        order = np.argsort(hashes, kind="stable")  # stable: a key's rows stay in order
        self._hashes, self._rows = hashes[order], rows[order]

    def candidates(self, key: str) -> List[int]:
        start, end = (np.searchsorted(self._hashes, hash(key), side) for side in ("left", "right"))
        return self._rows[start:end].tolist()


class StringRows(HashedRows):
    """The row of each of a sequence of strings (names, IDs), found by its hash."""

    def __init__(self, strings: Sequence[str]):
        super().__init__(np.fromiter(map(hash, strings), dtype=np.int64, count=len(strings)), np.arange(len(strings)))
        self._strings = strings

    def row(self, key: str) -> Optional[int]:
        """The first row holding `key`, or None."""
        return next((row for row in self.candidates(key) if self._strings[row] == key), None)

    def repeated(self) -> Optional[str]:
        """A string that more than one row holds, if any (rows next to each
        other in hash order: a third string of the same 64-bit hash between
        two copies would hide them)."""
        for i in np.flatnonzero(self._hashes[1:] == self._hashes[:-1]).tolist():
            first, second = self._strings[int(self._rows[i])], self._strings[int(self._rows[i + 1])]
            if first == second:
                return first
        return None
