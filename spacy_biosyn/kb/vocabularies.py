"""Vocabulary readers: the files users bring, read into a Dictionary.

Each reader keeps a concept's primary ID first and its alternative IDs after
it. Where the format says which ID is primary (CTD's DiseaseID, a UMLS CUI, an
OBO term's id, a scispaCy concept_id) that ID leads; where it does not
(BioSyn's `CUI||name` files and BioSyn's copy of MEDIC), `preferred_ids`
orders them (dictionary.DEFAULT_ID_PREFERENCE: MeSH, then OMIM). A line that
does not fit its format raises DictionaryError naming the file and line.

The registered functions return the reader, not the dictionary: a config
names its vocabulary without reading it, and `initialize()` reads it once.
"""
import json
import re
from functools import partial
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple, Union

from spacy.util import registry

from ..preprocess.text import numbered_lines
from .dictionary import DEFAULT_ID_PREFERENCE, Concept, Dictionary, DictionaryError, IdPreference, checked_id

PathLike = Union[str, Path]
Entries = Iterator[Tuple[Concept, str]]
VocabularyReader = Callable[[], Dictionary]


def read_vocabulary(source: Union[PathLike, VocabularyReader]) -> Dictionary:
    """A registered reader's dictionary, or a path read as a BioSyn file."""
    return source() if callable(source) else read_biosyn(source)


def _dictionary(path: Path, entries: Iterable[Tuple[Concept, str]]) -> Dictionary:
    dictionary = Dictionary.from_entries(entries)
    if not len(dictionary):
        raise DictionaryError(f"{path}: the vocabulary has no names")
    return dictionary


# BioSyn `CUI||name` ---------------------------------------------------------


def read_biosyn(path: PathLike, preferred_ids: Sequence[str] = DEFAULT_ID_PREFERENCE) -> Dictionary:
    """One `ID|ID||name` line per concept name."""
    return Dictionary.from_file(path, IdPreference(preferred_ids))


@registry.readers("spacy_biosyn.BiosynDictionary.v1")
def biosyn_dictionary(path: str, preferred_ids: List[str] = list(DEFAULT_ID_PREFERENCE)) -> VocabularyReader:
    IdPreference(preferred_ids)  # a bad pattern fails when the config is read
    return partial(read_biosyn, path, preferred_ids)


# MEDIC ---------------------------------------------------------------------

# CTD_diseases.tsv: DiseaseName, DiseaseID, AltDiseaseIDs, Definition,
# ParentIDs, TreeNumbers, ParentTreeNumbers, Synonyms, SlimMappings.
_CTD_COLUMNS = 9


def read_medic(path: PathLike, preferred_ids: Sequence[str] = DEFAULT_ID_PREFERENCE) -> Dictionary:
    """MEDIC in either of its shapes, told apart by its first line:
    - CTD's `CTD_diseases.tsv` (`#` comments, tab-separated): DiseaseID is
      primary, AltDiseaseIDs follow; names are DiseaseName and Synonyms;
    - BioSyn's copy (`medic_06Jul2012.txt`): `IDs||Name|Synonym|...`, one
      concept a line, whose IDs carry no order and are sorted by `preferred_ids`.
    """
    path = Path(path)
    first = next((line for _, line in _uncommented_lines(path)), "")
    entries = _ctd_entries(path) if "\t" in first else _medic_pipes_entries(path, IdPreference(preferred_ids))
    return _dictionary(path, entries)


def _uncommented_lines(path: Path) -> Iterator[Tuple[int, str]]:
    return ((number, line) for number, line in numbered_lines(path) if not line.startswith("#"))


def _medic_pipes_entries(path: Path, preference: IdPreference) -> Entries:
    for number, line in _uncommented_lines(path):
        where = f"{path}, line {number}"
        ids, sep, names = line.partition("||")
        # An empty name is a second '||': a BioSyn .concept line (PMID||start|end||type||...) has three.
        if not sep or not all(i.strip() for i in ids.split("|")) or not all(n.strip() for n in names.split("|")):
            raise DictionaryError(f"{where}: expected 'ID|ID||Name|Synonym|...', found {line[:80]!r}")
        concept = preference(tuple(checked_id(i.strip(), where) for i in ids.split("|")))
        for name in names.split("|"):
            yield concept, name


def _ctd_entries(path: Path) -> Entries:
    for number, line in _uncommented_lines(path):
        fields = line.split("\t")
        if len(fields) < _CTD_COLUMNS - 1 or not fields[0].strip() or not fields[1].strip():
            raise DictionaryError(
                f"{path}, line {number}: expected CTD_diseases.tsv's tab-separated DiseaseName, "
                f"DiseaseID, AltDiseaseIDs, ..., Synonyms; found {line[:80]!r}"
            )
        where = f"{path}, line {number}"
        concept = tuple(dict.fromkeys(checked_id(i, where) for i in [fields[1].strip(), *_pipe_list(fields[2])]))
        for name in [fields[0], *_pipe_list(fields[7])]:
            yield concept, name


def _pipe_list(field: str) -> List[str]:
    return [value.strip() for value in field.split("|") if value.strip()]


@registry.readers("spacy_biosyn.MedicVocabulary.v1")
def medic_vocabulary(path: str, preferred_ids: List[str] = list(DEFAULT_ID_PREFERENCE)) -> VocabularyReader:
    IdPreference(preferred_ids)
    return partial(read_medic, path, preferred_ids)


# UMLS ----------------------------------------------------------------------

# MRCONSO.RRF: CUI|LAT|TS|LUI|STT|SUI|ISPREF|AUI|SAUI|SCUI|SDUI|SAB|TTY|CODE|STR|SRL|SUPPRESS|CVF|
_MRCONSO_FIELDS = 19
_CUI, _LAT, _SAB, _CODE, _STR, _SUPPRESS = 0, 1, 11, 13, 14, 16


def read_umls(
    mrconso: PathLike,
    languages: Sequence[str] = ("ENG",),
    suppress: Sequence[str] = ("N",),
    sources: Optional[Sequence[str]] = None,
    alt_id_sources: Sequence[str] = ("MSH", "OMIM"),
    mrsty: Optional[PathLike] = None,
    semantic_types: Optional[Sequence[str]] = None,
) -> Dictionary:
    """UMLS concepts from MRCONSO.RRF: the CUI is primary, followed by the
    codes of `alt_id_sources` as `SAB:CODE` (`MSH:D001943`). Rows are kept
    when their LAT is in `languages`, their SUPPRESS flag in `suppress`
    (N: not suppressed; O, E, Y: obsolete or suppressed) and, if given,
    their SAB in `sources`. With `mrsty` and `semantic_types` (TUIs such
    as T047, or names such as "Disease or Syndrome"), only concepts of
    those types are kept."""
    mrconso = Path(mrconso)
    if (mrsty is None) != (semantic_types is None):
        raise ValueError("read_umls: give both mrsty and semantic_types, or neither")
    wanted_cuis = _cuis_of_types(Path(mrsty), set(semantic_types)) if mrsty is not None else None

    def kept_rows() -> Iterator[List[str]]:
        for number, line in numbered_lines(mrconso):
            row = line.split("|")
            if len(row) != _MRCONSO_FIELDS or not row[_CUI]:
                raise DictionaryError(
                    f"{mrconso}, line {number}: expected MRCONSO.RRF's 18 '|'-terminated fields, "
                    f"found {len(row) - 1}: {line[:80]!r}"
                )
            checked_id(row[_CUI], f"{mrconso}, line {number}")
            if (
                row[_LAT] in languages
                and row[_SUPPRESS] in suppress
                and (sources is None or row[_SAB] in sources)
                and (wanted_cuis is None or row[_CUI] in wanted_cuis)
            ):
                yield row

    # Alternative IDs first (a small map), so each name's concept is whole
    # however MRCONSO's rows are ordered.
    alt_ids: Dict[str, Dict[str, None]] = {}
    if alt_id_sources:
        for row in kept_rows():
            if row[_SAB] in alt_id_sources and row[_CODE]:
                alt_ids.setdefault(row[_CUI], {})[f"{row[_SAB]}:{row[_CODE]}"] = None
    entries = (((row[_CUI], *alt_ids.get(row[_CUI], ())), row[_STR]) for row in kept_rows())
    return _dictionary(mrconso, entries)


def _cuis_of_types(mrsty: Path, types: Set[str]) -> Set[str]:
    """CUIs with a semantic type in `types` (TUI or name), from MRSTY.RRF:
    CUI|TUI|STN|STY|ATUI|CVF|."""
    cuis = set()
    for number, line in numbered_lines(mrsty):
        row = line.split("|")
        if len(row) != 7:
            raise DictionaryError(f"{mrsty}, line {number}: expected MRSTY.RRF's 6 '|'-terminated fields")
        if row[1] in types or row[3] in types:
            cuis.add(row[0])
    return cuis


@registry.readers("spacy_biosyn.UmlsVocabulary.v1")
def umls_vocabulary(
    mrconso: str,
    languages: List[str] = ["ENG"],
    suppress: List[str] = ["N"],
    sources: Optional[List[str]] = None,
    alt_id_sources: List[str] = ["MSH", "OMIM"],
    mrsty: Optional[str] = None,
    semantic_types: Optional[List[str]] = None,
) -> VocabularyReader:
    return partial(read_umls, mrconso, languages, suppress, sources, alt_id_sources, mrsty, semantic_types)


# OBO -----------------------------------------------------------------------

_SYNONYM = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(EXACT|RELATED|BROAD|NARROW)?\b')
_TAG = re.compile(r"^([A-Za-z_-]+):\s?(.*)$")


def read_obo(
    path: PathLike,
    synonym_scopes: Sequence[str] = ("EXACT", "RELATED"),
    xref_prefixes: Sequence[str] = (),
) -> Dictionary:
    """[Term] stanzas of an OBO ontology (MONDO, DOID, HPO): `id` is primary,
    `alt_id`s and the xrefs whose prefix is in `xref_prefixes` (e.g. MESH,
    OMIM) follow; names are `name` and the synonyms of `synonym_scopes`
    (BROAD and NARROW ones name other concepts). Obsolete terms are skipped."""
    path = Path(path)
    return _dictionary(path, (entry for term in _obo_terms(path) for entry in term.entries(synonym_scopes, xref_prefixes)))


class _OboTerm:
    def __init__(self, path: Path, line: int):
        self.where = f"{path}, line {line}"
        self.id: Optional[str] = None
        self.alt_ids: List[str] = []
        self.xrefs: List[str] = []
        self.names: List[Tuple[str, str]] = []  # (scope, name); the name's scope is "NAME"
        self.obsolete = False

    def entries(self, scopes: Sequence[str], xref_prefixes: Sequence[str]) -> Entries:
        if self.id is None:
            raise DictionaryError(f"{self.where}: a [Term] stanza without an id")
        if self.obsolete:
            return
        xrefs = [x for x in self.xrefs if x.partition(":")[0] in xref_prefixes]
        concept = tuple(dict.fromkeys([self.id, *self.alt_ids, *xrefs]))
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
            term.names.append(("NAME", value))
        elif tag == "synonym":
            synonym = _SYNONYM.match(value)
            if synonym is None:
                raise DictionaryError(f"{path}, line {number}: expected 'synonym: \"text\" SCOPE [...]', found {line[:80]!r}")
            text, scope = synonym.groups()
            # OBO 1.4: a synonym without a scope is RELATED.
            term.names.append((scope or "RELATED", re.sub(r"\\(.)", r"\1", text)))
        elif tag == "is_obsolete":
            term.obsolete = bare == "true"
    if term is not None:
        yield term


@registry.readers("spacy_biosyn.OboVocabulary.v1")
def obo_vocabulary(
    path: str, synonym_scopes: List[str] = ["EXACT", "RELATED"], xref_prefixes: List[str] = []
) -> VocabularyReader:
    return partial(read_obo, path, synonym_scopes, xref_prefixes)


# scispaCy KB ---------------------------------------------------------------


def read_scispacy_kb(path: PathLike, types: Optional[Sequence[str]] = None) -> Dictionary:
    """scispaCy's knowledge-base JSONL (`concept_id`, `canonical_name`,
    `aliases`, `types`): the concept_id is the ID, the canonical name and
    aliases its names; with `types`, only concepts of one of those types."""
    path = Path(path)
    if isinstance(types, str):
        types = [types]  # one type, not a set of its characters
    return _dictionary(path, _scispacy_entries(path, None if types is None else set(types)))


def _scispacy_entries(path: Path, types: Optional[Set[str]]) -> Entries:
    for number, line in numbered_lines(path):
        try:
            concept = json.loads(line)
            cui, canonical = concept["concept_id"], concept["canonical_name"]
            aliases, concept_types = concept.get("aliases", []), concept.get("types", [])
            if not (isinstance(cui, str) and cui and isinstance(canonical, str) and _strings(aliases)
                    and _strings(concept_types)):
                raise TypeError
        except (ValueError, KeyError, TypeError):
            raise DictionaryError(
                f"{path}, line {number}: expected a JSON object with a string 'concept_id', a string "
                f"'canonical_name', a list of string 'aliases' and a list of string 'types', found {line[:80]!r}"
            ) from None
        checked_id(cui, f"{path}, line {number}")
        if types is None or types.intersection(concept_types):
            for name in [canonical, *aliases]:
                yield (cui,), name


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@registry.readers("spacy_biosyn.ScispacyKb.v1")
def scispacy_kb(path: str, types: Optional[List[str]] = None) -> VocabularyReader:
    return partial(read_scispacy_kb, path, types)
