"""CTD's vocabularies, tab-separated under `#` comments, gzip-compressed or
not: MEDIC, its diseases (`CTD_diseases.tsv`), and its chemicals
(`CTD_chemicals.tsv`), told apart by the columns their `# Fields:` header
names. The ID column (DiseaseID `MESH:D001943`, ChemicalID `MESH:D004317`)
is primary, MEDIC's AltDiseaseIDs follow it (a chemical's CasRN is no ID);
the name column and Synonyms are the names, TreeNumbers the types,
Definition the definition. MEDIC also comes as BioSyn's copy
(`medic_06Jul2012.txt`): `IDs||Name|Synonym|...`, one concept a line.
"""
from functools import partial
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ..files.downloads import cached_path
from ..kb.details import ConceptDetails
from ..kb.dictionary import Dictionary, DictionaryError
from ..kb.ids import DEFAULT_ID_PREFERENCE, IdPreference, checked_id
from ..parts import CTD_CHEMICALS, MEDIC_VOCABULARY, registry
from ..preprocess.text import numbered_lines
from .common import Entries, PathLike, VocabularyReader, _Details, _dictionary


class _CtdFile(NamedTuple):
    """One of CTD's files as its header shows it, and the reader it wants."""

    first_column: str  # the column its header names first, which tells the files apart
    reader: str  # the registered reader of its format
    said: str  # what it is, in an error


# Each CTD file by its format's name in the format table (formats.READERS):
# a reader refuses the other file, naming the format and reader that read it.
_CTD_FILES = {
    "medic": _CtdFile(
        "DiseaseName", MEDIC_VOCABULARY, "CTD's disease vocabulary, MEDIC (its header names DiseaseName, DiseaseID)"
    ),
    "ctd-chemicals": _CtdFile(
        "ChemicalName", CTD_CHEMICALS, "CTD's chemical vocabulary (its header names ChemicalName, ChemicalID, CasRN)"
    ),
}
# The first column CTD's header names, and the format of the file it heads.
_CTD_FIRST_COLUMNS = {file.first_column: format for format, file in _CTD_FILES.items()}


def ctd_kind(path: Path) -> Optional[str]:
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


def _check_ctd_kind(path: Path, wanted: str) -> None:
    """Refuse the other CTD file than the `wanted` one, naming the format to read it as."""
    found = ctd_kind(path)
    if found not in (None, wanted):
        raise DictionaryError(
            f"{path} is {_CTD_FILES[found].said}, not the file a {wanted} reader reads: read it as {found} "
            f"(--format {found}, {_CTD_FILES[found].reader})"
        )


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


# MEDIC ---------------------------------------------------------------------


def looks_like_medic(first_line: str, name: str) -> bool:
    """MEDIC without CTD's header: BioSyn's copy (`IDs||Name|Synonym`), or a TSV."""
    ids, pairs, names = first_line.partition("||")
    if pairs and "\t" not in ids:  # a tab after the IDs is part of a name
        return "|" in names
    return first_line.startswith("#") or "\t" in first_line


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


# CTD's chemicals -----------------------------------------------------------


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
