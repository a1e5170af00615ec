"""What an ID is: one word, written alone or joined with others by `|` in a
field, with or without a namespace (`MESH:D001943`), and which of a
concept's IDs comes first where a vocabulary does not say, by patterns
matched once per distinct ID."""
import re
from functools import lru_cache
from typing import Callable, Optional, Sequence, Tuple

from ..errors import DictionaryError
from ..ty import Concept

# The ID namespaces of NCBI Disease and BC5CDR's gold annotations: MeSH
# (descriptors D..., supplementary concepts C...), then OMIM. Measured on
# the train splits: of the mentions whose gold ID sits in a multi-ID MEDIC
# concept, this order names the gold ID for 81.3% (NCBI) and 88.8% (BC5CDR);
# the file's own order does for 50%.
DEFAULT_ID_PREFERENCE = (r"(MESH:)?[CD]\d+", r"(OMIM:)?\d+")


class IdPreference:
    """Orders a concept's IDs by the first of `patterns` each fully matches
    (IDs that match none come last); IDs of equal rank keep their order.
    For vocabularies that do not say which ID is primary."""

    def __init__(self, patterns: Sequence[str] = DEFAULT_ID_PREFERENCE):
        self.patterns = tuple(patterns)
        try:
            self._first = first_full_match(self.patterns)
        except re.error as error:
            raise ValueError(f"preferred_ids: {error.pattern!r} is not a regular expression: {error}") from None

    def __call__(self, ids: Concept) -> Concept:
        return tuple(sorted(ids, key=self._rank))

    def __reduce__(self):
        return IdPreference, (self.patterns,)  # the cached matcher is rebuilt, not pickled

    def _rank(self, cui: str) -> int:
        first = self._first(cui)
        return len(self.patterns) if first is None else first


# Distinct IDs whose match is kept per set of patterns: more than the
# concepts a run reports in practice, at some 10 MB at most.
_MATCHES_KEPT = 65_536


@lru_cache(maxsize=32)
def first_full_match(patterns: Tuple[str, ...]) -> Callable[[str], Optional[int]]:
    """The index of the first of `patterns` an ID fully matches, or None;
    the patterns are compiled once and each ID's answer kept, so a user's
    slow pattern (`(\\w+)+:` takes seconds on a long ID) costs once per
    distinct ID, not once per report of it. Raises re.error (TypeError for
    a pattern that is no string)."""
    compiled = [re.compile(pattern) for pattern in patterns]

    @lru_cache(maxsize=_MATCHES_KEPT)
    def first(cui: str) -> Optional[int]:
        return next((i for i, pattern in enumerate(compiled) if pattern.fullmatch(cui)), None)

    return first


_ID = re.compile(r"[^\s|]+")


def checked_id(cui: object, where: str) -> str:
    """`cui` if it is an ID: one word, with no `|` (which joins a concept's
    IDs in every saved dictionary); else DictionaryError naming `where`."""
    if not isinstance(cui, str) or not _ID.fullmatch(cui):
        raise DictionaryError(f"{where}: {cui!r} is not an ID: an ID is one word, with no whitespace or '|' in it")
    return cui


def bare_id(cui: str) -> str:
    """An ID without its namespace: the raw NCBI corpus writes OMIM:217000
    where BioSyn's dictionaries write 217000, CTD MESH:D001943 for D001943."""
    return cui.rpartition(":")[2]


def split_cuis(field: str) -> Concept:
    """'D001|613097' -> ('D001', '613097'); '+' joins the IDs of a composite
    mention's parts in some corpora and is split alike."""
    return tuple(dict.fromkeys(c.strip() for c in field.replace("+", "|").split("|") if c.strip()))
