"""The ranked candidates a linker remembers, by (text, k): a mention met
again is not encoded and searched again."""
from collections import OrderedDict
from typing import Callable, List, Optional, Tuple

from ..ty import Candidate, RankSettings


class RankCache:
    """The ranked candidates of the last cache_size (text, k) asked for,
    the least recently used dropped first; 0 keeps nothing. cache_size is
    read from `settings()` at each use. Entries hold while the linker's
    parts are the objects they were ranked with: a new dictionary,
    synonyms, encoder, index, tf-idf or lambda empties it."""

    def __init__(self, settings: Callable[[], RankSettings]):
        self._settings = settings
        self.lookups = self.hits = 0
        self._entries: "OrderedDict[tuple, Tuple[Candidate, ...]]" = OrderedDict()
        self._parts: tuple = ()

    @property
    def size(self) -> int:
        return self._settings().cache_size

    def check(self, parts: tuple) -> None:
        if len(parts) != len(self._parts) or any(a is not b and a != b for a, b in zip(parts, self._parts)):
            self._entries.clear()
            self._parts = parts

    def clear(self) -> None:
        """Forget every entry and the hit count."""
        self._entries.clear()
        self.lookups = self.hits = 0

    def get(self, key: tuple) -> Optional[Tuple[Candidate, ...]]:
        if not self.size:
            return None
        self.lookups += 1
        found = self._entries.get(key)
        if found is not None:
            self.hits += 1
            self._entries.move_to_end(key)
        return found

    def put(self, key: tuple, candidates: List[Candidate]) -> None:
        size = self.size
        if size:
            self._entries[key] = tuple(candidates)
        while len(self._entries) > size:  # a smaller cache_size takes effect here
            self._entries.popitem(last=False)
