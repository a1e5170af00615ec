"""UMLS's Metathesaurus files: MRCONSO.RRF, one atom a row of 18
`|`-terminated fields, and optionally MRSTY.RRF, the concepts' semantic
types. Each kept row's STR is a name of its CUI, the primary ID, which the
codes of chosen sources follow as `SAB:CODE` (`MSH:D001943`); the
preferred atom's string is the concept's name, and MRSTY's TUIs (T047)
its types.
"""
from functools import partial
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set

from ..files.downloads import cached_path
from ..kb.details import ConceptDetails
from ..kb.dictionary import Dictionary, DictionaryError
from ..kb.ids import checked_id
from ..parts import UMLS_VOCABULARY, registry
from ..preprocess.text import numbered_lines
from .common import Entries, PathLike, VocabularyReader, _dictionary

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
