"""IDs with their namespace, and which IDs name the same concept.

BioSyn's dictionaries and the corpora write bare IDs (`D001943`, `114480`),
CTD and OBO files prefixed ones (`MESH:D001943`), and the raw NCBI corpus
both (`OMIM:217000` beside `D001943`). A bare ID gets a namespace only from
declared patterns (the pipe's `id_namespaces`): the pipe then reports every
ID with one, and scores compare a bare ID with a prefixed one through them.
"""
import re
from itertools import islice
from typing import Dict, Iterable, Mapping, Optional

from ..names import NIL
from .ids import first_full_match, split_cuis

# The namespaces of MEDIC's IDs: MeSH descriptors (D + 6 digits) and
# supplementary concepts (C + 6 or 9 digits), OMIM entries (6 digits).
MEDIC_NAMESPACES = {"MESH": r"[CD]\d{6}(\d{3})?", "OMIM": r"\d{6}"}
# The ID systems a vocabulary's IDs are recognized as, with or without their
# namespace, for scores: MEDIC's, then UMLS CUIs (C + 7 digits, which no MeSH ID is).
KNOWN_NAMESPACES = {**MEDIC_NAMESPACES, "UMLS": r"C\d{7}"}
# IDs looked at to recognize a vocabulary's ID systems: enough to meet each system it uses.
_IDS_LOOKED_AT = 200_000


_NAMESPACE = re.compile(r"[A-Za-z][\w.-]*")


class IdNamespaces:
    """Adds a namespace to bare IDs: `namespaces` maps a prefix to the
    regular expression its bare IDs fully match, tried in order; each
    distinct ID is matched once (ids.first_full_match)."""

    def __init__(self, namespaces: Mapping[str, str]):
        if not isinstance(namespaces, Mapping) or not all(
            isinstance(prefix, str) and prefix and ":" not in prefix and isinstance(pattern, str)
            for prefix, pattern in namespaces.items()
        ):
            raise ValueError(f"id_namespaces must map namespaces (such as MESH) to patterns, got {namespaces!r}")
        for prefix, pattern in namespaces.items():
            # What no ID holds: a config's lines run together (an override
            # naming a namespace "" reads the next entry into this pattern).
            if not _NAMESPACE.fullmatch(prefix) or any(c in pattern for c in "\n\r\t\"'"):
                raise ValueError(
                    f"id_namespaces maps {prefix!r} to {pattern!r}: a namespace is a name (letters, digits, '_', '.', "
                    "'-') and its pattern one line without quotes; a block of config.cfg run into the next line reads so"
                )
        self.namespaces = dict(namespaces)
        self.prefixes = tuple(namespaces)
        try:
            self._first = first_full_match(tuple(namespaces.values()))
        except re.error as error:
            raise ValueError(
                f"id_namespaces holds a pattern that is not a regular expression ({error}), got {namespaces!r}"
            ) from None

    def __reduce__(self):
        return IdNamespaces, (self.namespaces,)  # the cached matcher is rebuilt, not pickled

    def __call__(self, cui: str) -> str:
        """`cui` with its namespace; a composite's parts each with theirs."""
        return "|".join(self.one(part) for part in cui.split("|"))

    def one(self, cui: str) -> str:
        """One ID with its namespace: its own, or the first whose pattern it
        fully matches; a bare ID that matches none stays bare."""
        if ":" in cui:
            return cui
        first = self._first(cui)
        return cui if first is None else f"{self.prefixes[first]}:{cui}"


# Gold CUI fields of mentions that cannot be scored (CUI-less), as BioSyn
# drops them, and spaCy's "NIL", which its scorer drops.
UNSCORED_CUIS = {"", "-1", NIL}


class ConceptKeys:
    """The key under which scores compare an ID. Two IDs with a namespace
    are the same only with the same namespace (MONDO:0001250 is not
    HP:0001250; MESH and MeSH are one), two bare IDs only when equal, and a
    bare ID meets a prefixed one only through `id_namespaces`: with MEDIC's,
    the corpus's OMIM:217000 is the dictionary's 217000, and D010051 is
    MESH:D010051 but never OMIM:D010051."""

    def __init__(self, id_namespaces: Optional[Mapping[str, str]] = None):
        self._qualify = IdNamespaces(id_namespaces).one if id_namespaces else None

    def __call__(self, cui: str) -> str:
        cui = cui.strip()
        if self._qualify is not None:
            cui = self._qualify(cui)
        prefix, colon, local = cui.partition(":")
        return f"{prefix.upper()}:{local}" if colon else cui


def recognized_namespaces(ids: Iterable[str]) -> Optional[Dict[str, str]]:
    """The KNOWN_NAMESPACES a vocabulary's IDs show, by their namespace or,
    bare, by their pattern (MEDIC's `D001943|114480` and CTD's
    `MESH:D001943|OMIM:114480` both show MESH and OMIM), or None: what
    scores compare IDs through when the pipe declares no id_namespaces, so
    that a MEDIC pipeline scored against bare gold IDs, or a bare one
    against the raw NCBI corpus's OMIM:114480, gets its true score."""
    qualify = IdNamespaces(KNOWN_NAMESPACES).one
    found = {qualify(cui).partition(":")[0].upper() for cui in islice(ids, _IDS_LOOKED_AT) if cui}
    known = {prefix: pattern for prefix, pattern in KNOWN_NAMESPACES.items() if prefix in found}
    return known or None


def id_form(cui: str) -> str:
    """How an ID is written, for an error that says why none matched: its namespace, or "bare"."""
    prefix, colon, _ = cui.strip().partition(":")
    return f"{prefix.upper()}:" if colon else "bare"


def cui_is_gold(cui: Optional[str], gold_field: str, keys: ConceptKeys) -> bool:
    """Whether a span._.cui is right against a gold CUI field, strictly:
    the IDs it names (a composite's, joined by '|') are the gold IDs, every
    part of a composite gold and no other, as `keys` compare them; None never is."""
    return cui is not None and {keys(c) for c in split_cuis(cui)} == gold_ids(gold_field, keys)


def gold_ids(gold_field: str, keys: ConceptKeys) -> set:
    """The keys of a gold CUI field's IDs."""
    return {keys(cui) for cui in split_cuis(gold_field)}
