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
import warnings
from functools import partial
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple, Union


from ..files.downloads import cached_path
from ..kb.dictionary import Concept, ConceptDetails, Dictionary, DictionaryError
from ..kb.ids import DEFAULT_ID_PREFERENCE, IdPreference, checked_id
from ..parts import (
    registry,
    BIOSYN_DICTIONARY,
    CTD_CHEMICALS,
    MEDIC_VOCABULARY,
    MESH_VOCABULARY,
    OBO_VOCABULARY,
    SCISPACY_KB,
    UMLS_VOCABULARY,
)
from ..preprocess.text import numbered_lines

PathLike = Union[str, Path]
Entries = Iterator[Tuple[Concept, str]]
VocabularyReader = Callable[[], Dictionary]


def read_vocabulary(source: Union[Dictionary, PathLike, VocabularyReader]) -> Dictionary:
    """A registered reader's dictionary, or a path read as a BioSyn file (a
    Dictionary is taken as it is)."""
    if isinstance(source, Dictionary):
        return source
    return source() if callable(source) else read_biosyn(source)


def detect_format(source: PathLike) -> str:
    """The format of a vocabulary file: CTD's by the columns its header
    names, others by the file's name, else by its first line."""
    path = cached_path(source)
    ctd = _ctd_kind(path)
    if ctd is not None:
        return ctd
    name = path.name.lower().removesuffix(".gz")
    by_name = {"mrconso": "umls", "ctd_chemicals": "ctd-chemicals", "ctd_diseases": "medic", "medic": "medic"}
    found = next((fmt for key, fmt in by_name.items() if key in name), None)
    if found:
        return found
    if name.endswith(".obo"):
        return "obo"
    first = next((line for _, line in numbered_lines(path)), "")
    if first.startswith("{") or name.endswith(".jsonl"):
        return "scispacy"
    if first.startswith("*NEWRECORD") or "DescriptorRecordSet" in first or "SupplementalRecordSet" in first or (
        first.startswith("<?xml") and name.startswith(("desc", "supp"))
    ):
        return "mesh"
    if first.startswith("format-version:"):
        return "obo"
    ids, pairs, names = first.partition("||")
    if pairs and "\t" not in ids:  # a tab after the IDs is part of a name
        return "medic" if "|" in names else "biosyn"  # BioSyn's copy of MEDIC: IDs||Name|Synonym
    if first.startswith("#") or "\t" in first:
        return "medic"  # CTD's TSV
    return "biosyn"


# The first column CTD's header names, and the format of the file it heads.
_CTD_FIRST_COLUMNS = {"DiseaseName": "medic", "ChemicalName": "ctd-chemicals"}


def _ctd_kind(path: Path) -> Optional[str]:
    """"medic" or "ctd-chemicals" for a CTD file, by the columns its
    `# Fields:` header names; None for any other file."""
    header = []
    for _, line in numbered_lines(path):
        if not line.startswith("#"):
            break
        header.append(line.lstrip("# ").split("\t")[0].strip())
        if len(header) > 10:
            break
    return next((_CTD_FIRST_COLUMNS[column] for column in header if column in _CTD_FIRST_COLUMNS), None)


# Each CTD file as its header shows it.
_CTD_FILES = {
    "medic": "CTD's disease vocabulary, MEDIC (its header names DiseaseName, DiseaseID)",
    "ctd-chemicals": "CTD's chemical vocabulary (its header names ChemicalName, ChemicalID, CasRN)",
}


def _check_ctd_kind(path: Path, wanted: str) -> None:
    """Refuse the other CTD file than the `wanted` one, naming the format to read it as."""
    found = _ctd_kind(path)
    if found not in (None, wanted):
        raise DictionaryError(
            f"{path} is {_CTD_FILES[found]}, not the file a {wanted} reader reads: read it as {found} "
            f"(--format {found}, {READERS[found][0]})"
        )


# Each format's registered reader, and the name of its file argument.
READERS = {
    "biosyn": (BIOSYN_DICTIONARY, "path"), "medic": (MEDIC_VOCABULARY, "path"),
    "ctd-chemicals": (CTD_CHEMICALS, "path"), "umls": (UMLS_VOCABULARY, "mrconso"),
    "obo": (OBO_VOCABULARY, "path"), "mesh": (MESH_VOCABULARY, "path"),
    "scispacy": (SCISPACY_KB, "path"),
}


def reader_block(source: PathLike, format: Optional[str] = None) -> Tuple[dict, str]:
    """The config block that reads `source` (a path or URL) in `format`,
    detected when None, and the format."""
    if format is not None and format not in READERS:
        raise DictionaryError(f"format {format!r}: expected one of {', '.join(READERS)}")
    format = format or detect_format(source)
    name, argument = READERS[format]
    return {"@readers": name, argument: str(source)}, format


def read_vocabulary_file(source: PathLike, format: Optional[str] = None) -> Tuple[Dictionary, str]:
    """A vocabulary file (or URL) in `format`, detected when None, read by
    the format's registered reader with its defaults; returns the
    dictionary and the format read."""
    block, format = reader_block(source, format)
    reader = registry.readers.get(block.pop("@readers"))
    return reader(**block)(), format


class _Details(dict):
    """ConceptDetails by the ID a concept leads with, as the reader meets
    them: an ID met again (a file that lists a concept twice) keeps its
    first record's name, and is counted, since its names are merged."""

    def __init__(self):
        super().__init__()
        self.repeated: Dict[str, int] = {}

    def record(self, cui: str, details: ConceptDetails) -> None:
        if cui in self:
            self.repeated[cui] = self.repeated.get(cui, 1) + 1
        else:
            self[cui] = details


def _dictionary(
    path: Path, entries: Iterable[Tuple[Concept, str]], details: Optional[Dict[str, ConceptDetails]] = None
) -> Dictionary:
    """The entries' dictionary, with `details`, which the entries fill as they are read."""
    dictionary = Dictionary.from_entries(entries)
    if not len(dictionary):
        raise DictionaryError(f"{path}: the vocabulary has no names")
    repeated = getattr(details, "repeated", {})
    if repeated:
        shown = ", ".join(f"{cui} ({n}x)" for cui, n in list(repeated.items())[:5])
        warnings.warn(
            f"{path}: {len(repeated)} ID(s) head more than one record ({shown}{', ...' if len(repeated) > 5 else ''}): "
            "each is one concept, with the names of all its records and the first record's name as canonical",
            UserWarning,
            stacklevel=3,
        )
    return dictionary.with_details(details or {})


# BioSyn `CUI||name` ---------------------------------------------------------


def read_biosyn(path: PathLike, preferred_ids: Sequence[str] = DEFAULT_ID_PREFERENCE) -> Dictionary:
    """One `ID|ID||name` line per concept name."""
    path = cached_path(path)
    return Dictionary.from_file(path, IdPreference(preferred_ids))


@registry.readers(BIOSYN_DICTIONARY)
def biosyn_dictionary(path: str, preferred_ids: List[str] = list(DEFAULT_ID_PREFERENCE)) -> VocabularyReader:
    IdPreference(preferred_ids)  # a bad pattern fails when the config is read
    return partial(read_biosyn, path, preferred_ids)


# MEDIC ---------------------------------------------------------------------

class _CtdColumns(NamedTuple):
    """Where a CTD vocabulary keeps each field, and what to call it."""

    file: str
    n: int  # columns; the last may be missing
    name: int
    id: int
    alt_ids: Optional[int]
    definition: int
    tree_numbers: int
    synonyms: int


# CTD_diseases.tsv: DiseaseName, DiseaseID, AltDiseaseIDs, Definition,
# ParentIDs, TreeNumbers, ParentTreeNumbers, Synonyms, SlimMappings.
_CTD_DISEASES = _CtdColumns("CTD_diseases.tsv's DiseaseName, DiseaseID, AltDiseaseIDs, ..., Synonyms", 9, 0, 1, 2, 3, 5, 7)
# CTD_chemicals.tsv: ChemicalName, ChemicalID, CasRN, Definition, ParentIDs,
# TreeNumbers, ParentTreeNumbers, Synonyms.
_CTD_CHEMICALS = _CtdColumns("CTD_chemicals.tsv's ChemicalName, ChemicalID, CasRN, Definition, ..., Synonyms", 8, 0, 1, None, 3, 5, 7)


def read_medic(path: PathLike, preferred_ids: Sequence[str] = DEFAULT_ID_PREFERENCE) -> Dictionary:
    """MEDIC in either of its shapes, told apart by its first line:
    - CTD's `CTD_diseases.tsv` (`#` comments, tab-separated): DiseaseID is
      primary, AltDiseaseIDs follow; names are DiseaseName and Synonyms;
    - BioSyn's copy (`medic_06Jul2012.txt`): `IDs||Name|Synonym|...`, one
      concept a line, whose IDs carry no order and are sorted by `preferred_ids`.
    """
    path = cached_path(path)
    _check_ctd_kind(path, "medic")
    first = next((line for _, line in _uncommented_lines(path)), "")
    details = _Details()
    if "\t" in first.partition("||")[0]:
        entries = _ctd_entries(path, _CTD_DISEASES, details)
    else:
        entries = _medic_pipes_entries(path, IdPreference(preferred_ids), details)
    return _dictionary(path, entries, details)


def _uncommented_lines(path: Path) -> Iterator[Tuple[int, str]]:
    return ((number, line) for number, line in numbered_lines(path) if not line.startswith("#"))


def _medic_pipes_entries(path: Path, preference: IdPreference, details: Dict[str, ConceptDetails]) -> Entries:
    for number, line in _uncommented_lines(path):
        where = f"{path}, line {number}"
        ids, sep, names = line.partition("||")
        # An empty name is a second '||': a BioSyn .concept line (PMID||start|end||type||...) has three.
        if not sep or not all(i.strip() for i in ids.split("|")) or not all(n.strip() for n in names.split("|")):
            raise DictionaryError(f"{where}: expected 'ID|ID||Name|Synonym|...', found {line[:80]!r}")
        concept = preference(tuple(checked_id(i.strip(), where) for i in ids.split("|")))
        details.setdefault(concept[0], ConceptDetails(names.split("|")[0].strip()))
        for name in names.split("|"):
            yield concept, name


def _ctd_entries(path: Path, columns: _CtdColumns, details: Dict[str, ConceptDetails]) -> Entries:
    for number, line in _uncommented_lines(path):
        fields = line.split("\t")
        fields += [""] * (columns.n - len(fields)) if len(fields) == columns.n - 1 else []  # the last column may be cut
        if len(fields) != columns.n or not fields[columns.name].strip() or not fields[columns.id].strip():
            raise DictionaryError(
                f"{path}, line {number}: expected {columns.file} ({columns.n} tab-separated columns); "
                f"found {line[:80]!r}"
            )
        where = f"{path}, line {number}"
        alt_ids = _pipe_list(fields[columns.alt_ids]) if columns.alt_ids is not None else []
        concept = tuple(dict.fromkeys(checked_id(i, where) for i in [fields[columns.id].strip(), *alt_ids]))
        name = fields[columns.name].strip()
        details.record(concept[0], ConceptDetails(
            name, tuple(_pipe_list(fields[columns.tree_numbers])), fields[columns.definition].strip()
        ))
        for alias in [name, *_pipe_list(fields[columns.synonyms])]:
            yield concept, alias


def read_ctd_chemicals(path: PathLike) -> Dictionary:
    """CTD's chemical vocabulary (`CTD_chemicals.tsv`, gzip-compressed or
    not), the one BioSyn's BC5CDR-Chemical results were measured on:
    ChemicalID (`MESH:D004317`) is the ID, ChemicalName and Synonyms the
    names, TreeNumbers the types, Definition the definition."""
    path = cached_path(path)
    _check_ctd_kind(path, "ctd-chemicals")
    details = _Details()
    return _dictionary(path, _ctd_entries(path, _CTD_CHEMICALS, details), details)


@registry.readers(CTD_CHEMICALS)
def ctd_chemicals(path: str) -> VocabularyReader:
    return partial(read_ctd_chemicals, path)


def _pipe_list(field: str) -> List[str]:
    return [value.strip() for value in field.split("|") if value.strip()]


@registry.readers(MEDIC_VOCABULARY)
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
    their SAB in `sources`. With `mrsty` (MRSTY.RRF) each concept's types
    are its semantic types (TUIs such as T047), which the linker's type
    filters read; with `semantic_types` too (TUIs, or names such as
    "Disease or Syndrome"), only concepts of those types are kept."""
    mrconso = cached_path(mrconso)
    if semantic_types is not None and mrsty is None:
        raise ValueError("read_umls: semantic_types needs mrsty, the MRSTY.RRF that gives each concept's types")
    wanted_cuis = _cuis_of_types(Path(mrsty), set(semantic_types)) if semantic_types is not None else None

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
    details: Dict[str, ConceptDetails] = {}

    def entries() -> Entries:
        for row in kept_rows():
            # The concept's name: its preferred atom's string (TS P, STT PF, ISPREF Y), else its first.
            if row[_CUI] not in details or (row[2], row[4], row[6]) == ("P", "PF", "Y"):
                details[row[_CUI]] = ConceptDetails(row[_STR])
            yield (row[_CUI], *alt_ids.get(row[_CUI], ())), row[_STR]
        if mrsty is not None:  # after the names: only the kept concepts' types are held
            _add_semantic_types(Path(mrsty), details)

    return _dictionary(mrconso, entries(), details)


def _mrsty_rows(mrsty: Path) -> Iterator[List[str]]:
    """MRSTY.RRF's rows: CUI|TUI|STN|STY|ATUI|CVF|."""
    for number, line in numbered_lines(mrsty):
        row = line.split("|")
        if len(row) != 7:
            raise DictionaryError(f"{mrsty}, line {number}: expected MRSTY.RRF's 6 '|'-terminated fields")
        yield row


def _cuis_of_types(mrsty: Path, types: Set[str]) -> Set[str]:
    """CUIs with a semantic type in `types` (TUI or name)."""
    return {row[0] for row in _mrsty_rows(mrsty) if row[1] in types or row[3] in types}


def _add_semantic_types(mrsty: Path, details: Dict[str, ConceptDetails]) -> None:
    """Each concept of `details` typed by its TUIs."""
    tuis: Dict[str, Dict[str, None]] = {}
    for row in _mrsty_rows(mrsty):
        if row[0] in details:
            tuis.setdefault(row[0], {})[row[1]] = None
    for cui, found in tuis.items():
        details[cui] = details[cui]._replace(types=tuple(found))


@registry.readers(UMLS_VOCABULARY)
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
_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"')
_TAG = re.compile(r"^([A-Za-z_-]+):\s?(.*)$")
# An OBO value's trailing comment: a "!" after white space (an escaped one, "\\!", follows a backslash).
_TRAILING_COMMENT = re.compile(r"\s!")


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


# scispaCy KB ---------------------------------------------------------------


def read_scispacy_kb(path: PathLike, types: Optional[Sequence[str]] = None) -> Dictionary:
    """scispaCy's knowledge-base JSONL (`concept_id`, `canonical_name`,
    `aliases`, `types`): the concept_id is the ID, the canonical name and
    aliases its names; with `types`, only concepts of one of those types."""
    path = cached_path(path)
    if isinstance(types, str):
        types = [types]  # one type, not a set of its characters
    details = _Details()
    return _dictionary(path, _scispacy_entries(path, None if types is None else set(types), details), details)


def _scispacy_entries(path: Path, types: Optional[Set[str]], details: Dict[str, ConceptDetails]) -> Entries:
    for number, line in numbered_lines(path):
        try:
            concept = json.loads(line)
            cui, canonical = concept["concept_id"], concept["canonical_name"]
            aliases, concept_types = concept.get("aliases", []), concept.get("types", [])
            if not (isinstance(cui, str) and cui and isinstance(canonical, str) and _strings(aliases)
                    and _strings(concept_types)):
                raise TypeError
        except (ValueError, KeyError, TypeError, RecursionError):  # RecursionError: JSON nested too deep
            raise DictionaryError(
                f"{path}, line {number}: expected a JSON object with a string 'concept_id', a string "
                f"'canonical_name', a list of string 'aliases' and a list of string 'types', found {line[:80]!r}"
            ) from None
        checked_id(cui, f"{path}, line {number}")
        if types is None or types.intersection(concept_types):
            definition = concept.get("definition")
            details.record(cui, ConceptDetails(canonical, tuple(concept_types), definition if isinstance(definition, str) else ""))
            for name in [canonical, *aliases]:
                yield (cui,), name


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@registry.readers(SCISPACY_KB)
def scispacy_kb(path: str, types: Optional[List[str]] = None) -> VocabularyReader:
    return partial(read_scispacy_kb, path, types)
