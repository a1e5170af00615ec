"""OBO ontologies (MONDO, DOID, HPO: `mondo.obo`), read by their [Term]
stanzas of `tag: value` lines; other stanzas and obsolete terms are
skipped. A term's `id` is primary, its `alt_id`s and chosen `xref`s
(MESH, OMIM) follow; its `name` and synonyms of chosen scopes are the
names, its `namespace` the type and its `def` the definition.
"""
import re
from functools import partial
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from ..files.downloads import cached_path
from ..kb.details import ConceptDetails
from ..kb.dictionary import Dictionary, DictionaryError
from ..kb.ids import checked_id
from ..parts import OBO_VOCABULARY, registry
from ..preprocess.text import numbered_lines
from .common import Entries, PathLike, VocabularyReader, _Details, _dictionary

_SYNONYM = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(EXACT|RELATED|BROAD|NARROW)?\b')
_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"')
_TAG = re.compile(r"^([A-Za-z_-]+):\s?(.*)$")
# An OBO value's trailing comment: a "!" after white space (an escaped one, "\\!", follows a backslash).
_TRAILING_COMMENT = re.compile(r"\s!")


def looks_like_obo(first_line: str, name: str) -> bool:
    """An OBO ontology, by its file's suffix or its header's first tag."""
    return name.endswith(".obo") or first_line.startswith("format-version:")


def read_obo(
    path: PathLike,
    synonym_scopes: Sequence[str] = ("EXACT", "RELATED"),
    xref_prefixes: Sequence[str] = (),
) -> Dictionary:
    """[Term] stanzas of an OBO ontology (MONDO, DOID, HPO): `id` is primary,
    `alt_id`s and the xrefs whose prefix is in `xref_prefixes` (e.g. MESH,
    OMIM) follow; names are `name` and the synonyms of `synonym_scopes`
    (BROAD and NARROW ones name other concepts). Obsolete terms are skipped.
    A term's `namespace` is its type and its `def` its definition."""
    path = cached_path(path)
    details = _Details()
    entries = (entry for term in _obo_terms(path) for entry in term.entries(synonym_scopes, xref_prefixes, details))
    return _dictionary(path, entries, details)


class _OboTerm:
    def __init__(self, path: Path, line: int):
        self.where = f"{path}, line {line}"
        self.id: Optional[str] = None
        self.alt_ids: List[str] = []
        self.xrefs: List[str] = []
        self.names: List[Tuple[str, str]] = []  # (scope, name); the name's scope is "NAME"
        self.namespace = ""
        self.definition = ""
        self.obsolete = False

    def entries(self, scopes: Sequence[str], xref_prefixes: Sequence[str], details: Dict[str, ConceptDetails]) -> Entries:
        if self.id is None:
            raise DictionaryError(f"{self.where}: a [Term] stanza without an id")
        if self.obsolete:
            return
        xrefs = [x for x in self.xrefs if x.partition(":")[0] in xref_prefixes]
        concept = tuple(dict.fromkeys([self.id, *self.alt_ids, *xrefs]))
        name = next((name for scope, name in self.names if scope == "NAME"), "")
        details.record(self.id, ConceptDetails(name, (self.namespace,) if self.namespace else (), self.definition))
        for scope, name in self.names:
            if scope == "NAME" or scope in scopes:
                yield concept, name


def _obo_terms(path: Path) -> Iterator[_OboTerm]:
    term: Optional[_OboTerm] = None
    for number, line in numbered_lines(path):
        line = line.strip()
        if line.startswith("["):
            if term is not None:
                yield term
            term = _OboTerm(path, number) if line == "[Term]" else None
            continue
        if term is None or line.startswith("!"):
            continue  # the header, or a [Typedef] / [Instance] stanza
        match = _TAG.match(line)
        if match is None:
            raise DictionaryError(f"{path}, line {number}: expected 'tag: value', found {line[:80]!r}")
        tag, value = match.groups()
        bare = value.split(" !")[0].split(" {")[0].strip()  # trailing comment and qualifiers
        where = f"{path}, line {number}"
        if tag == "id":
            term.id = checked_id(bare, where)
        elif tag == "alt_id":
            term.alt_ids.append(checked_id(bare, where))
        elif tag == "xref":
            term.xrefs.append(checked_id(bare.split(" ")[0], where))
        elif tag == "name":
            term.names.append(("NAME", _TRAILING_COMMENT.split(value)[0].strip()))
        elif tag == "synonym":
            synonym = _SYNONYM.match(value)
            if synonym is None:
                raise DictionaryError(f"{path}, line {number}: expected 'synonym: \"text\" SCOPE [...]', found {line[:80]!r}")
            text, scope = synonym.groups()
            # OBO 1.4: a synonym without a scope is RELATED.
            term.names.append((scope or "RELATED", re.sub(r"\\(.)", r"\1", text)))
        elif tag == "is_obsolete":
            term.obsolete = bare == "true"
        elif tag == "namespace":
            term.namespace = bare
        elif tag == "def":
            quoted = _QUOTED.match(value)  # "text" [references]
            term.definition = re.sub(r"\\(.)", r"\1", quoted.group(1)) if quoted else value
    if term is not None:
        yield term


@registry.readers(OBO_VOCABULARY)
def obo_vocabulary(
    path: str, synonym_scopes: List[str] = ["EXACT", "RELATED"], xref_prefixes: List[str] = []
) -> VocabularyReader:
    return partial(read_obo, path, synonym_scopes, xref_prefixes)
