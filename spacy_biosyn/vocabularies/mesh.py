"""NLM's MeSH files: descriptors (`d2025.bin`, `desc2025.xml`) and
supplementary concept records (`c2025.bin`, `supp2025.xml`), in the ASCII
or the XML release, gzip-compressed or not; told apart by their first bytes.

The record's UI (`D001943`, `C000002`) is the ID; its heading and entry
terms are the names (the ASCII release's `ENTRY = term|flags|...` keeps the
term before the first `|`); its semantic types and tree numbers are the
types; its scope note (a supplementary record's note) the definition. A
supplementary record has no tree numbers of its own: it lists the
descriptors it maps to (HeadingMappedTo; the ASCII release's HM names
them), kept as `mapped:D001943` types until `with_mapped_tree_numbers`
gives it those descriptors' types, as mesh-current does.
XML is read record by record, so a whole descriptor file never sits in
memory as a tree.
"""
import gzip
import zlib
from functools import partial
from pathlib import Path
from typing import Dict, List, Mapping
from xml.etree import ElementTree


from ..files.downloads import cached_path
from ..kb.details import ConceptDetails
from ..kb.dictionary import Dictionary, DictionaryError
from ..kb.ids import checked_id
from ..parts import MESH_VOCABULARY, registry
from ..preprocess.text import numbered_lines, open_maybe_gzipped
from .common import Entries, PathLike, VocabularyReader

# ASCII release fields: the record's ID, its name(s), entry terms, types, definition.
_ASCII_ID = "UI"
_ASCII_NAMES = ("MH", "NM")
_ASCII_TERMS = ("ENTRY", "PRINT ENTRY", "SY")
_ASCII_TYPES = ("ST", "MN")
_ASCII_DEFINITIONS = ("MS", "NO")
_ASCII_MAPPED = "HM"
# A type that stands for the types of the descriptor it names (UI, or heading in the ASCII release).
MAPPED = "mapped:"
# XML release: the record's elements, descriptor or supplementary.
_XML_RECORDS = {"DescriptorRecord": "DescriptorUI", "SupplementalRecord": "SupplementalRecordUI"}


def looks_like_mesh(first_line: str, name: str) -> bool:
    """NLM's MeSH records: the ASCII format's first record, or the XML's record set."""
    return first_line.startswith("*NEWRECORD") or "DescriptorRecordSet" in first_line or (
        "SupplementalRecordSet" in first_line) or (first_line.startswith("<?xml") and name.startswith(("desc", "supp")))


def read_mesh(path: PathLike) -> Dictionary:
    """A MeSH descriptor or supplementary file, ASCII or XML (or its URL)."""
    path = cached_path(path)
    try:
        with open_maybe_gzipped(path) as f:
            head = f.read(512).removeprefix(b"\xef\xbb\xbf").lstrip()  # a UTF-8 byte order mark, as every reader takes
        details: Dict[str, ConceptDetails] = {}
        if head.startswith(b"<"):
            entries = _xml_entries(path, details)
        elif head.startswith(b"*NEWRECORD"):
            entries = _ascii_entries(path, details)
        else:
            raise DictionaryError(f"{path}: not a MeSH file (ASCII records start with *NEWRECORD, XML with '<')")
        dictionary = Dictionary.from_entries(entries)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:  # click would print only "Aborted." for an EOFError
        raise DictionaryError(f"{path}: cannot be read, cut short? ({type(error).__name__}: {error})") from None
    if not len(dictionary):
        raise DictionaryError(f"{path}: the vocabulary has no names")
    return dictionary.with_details(details)


def _ascii_entries(path: Path, details: Dict[str, ConceptDetails]) -> Entries:
    record: Dict[str, List[str]] = {}
    start = 1
    for number, line in numbered_lines(path):
        if line.strip() == "*NEWRECORD":
            yield from _ascii_record(path, start, record, details)
            record, start = {}, number
            continue
        field, sep, value = line.partition(" = ")
        if not sep:
            raise DictionaryError(f"{path}, line {number}: expected 'FIELD = value', found {line[:80]!r}")
        record.setdefault(field.strip(), []).append(value.strip())
    yield from _ascii_record(path, start, record, details)


def _ascii_record(path: Path, line: int, record: Dict[str, List[str]], details: Dict[str, ConceptDetails]) -> Entries:
    if not record:
        return
    ids = record.get(_ASCII_ID, [])
    names = [name for field in _ASCII_NAMES for name in record.get(field, [])]
    if len(ids) != 1 or not names:
        raise DictionaryError(f"{path}, line {line}: a MeSH record needs one UI and a heading (MH or NM)")
    cui = checked_id(ids[0], f"{path}, line {line}")
    terms = [term.split("|")[0] for field in _ASCII_TERMS for term in record.get(field, [])]
    types = tuple(value for field in _ASCII_TYPES for value in record.get(field, [])) + tuple(
        MAPPED + _heading(value) for value in record.get(_ASCII_MAPPED, [])
    )
    definition = next((value for field in _ASCII_DEFINITIONS for value in record.get(field, [])), "")
    details[cui] = ConceptDetails(names[0], types, definition)
    for name in [*names, *terms]:
        yield (cui,), name


def _xml_entries(path: Path, details: Dict[str, ConceptDetails]) -> Entries:
    try:
        with open_maybe_gzipped(path) as f:
            for _, element in ElementTree.iterparse(f, events=("end",)):
                if element.tag in _XML_RECORDS:
                    yield from _xml_record(path, element, _XML_RECORDS[element.tag], details)
                    element.clear()  # each record is read once: the tree never grows
    except ElementTree.ParseError as error:
        raise DictionaryError(f"{path}: not MeSH XML ({error})") from None


def _xml_record(path: Path, record: ElementTree.Element, id_tag: str, details: Dict[str, ConceptDetails]) -> Entries:
    cui = checked_id((record.findtext(id_tag) or "").strip(), f"{path}, a record")
    name = (record.findtext("DescriptorName/String") or record.findtext("SupplementalRecordName/String") or "").strip()
    if not name:
        raise DictionaryError(f"{path}: the record {cui} has no name")
    terms = [term.text.strip() for term in record.iterfind("ConceptList/Concept/TermList/Term/String") if term.text]
    types = tuple(
        [t.text.strip() for t in record.iterfind("ConceptList/Concept/SemanticTypeList/SemanticType/SemanticTypeUI") if t.text]
        + [t.text.strip() for t in record.iterfind("TreeNumberList/TreeNumber") if t.text]
        + [MAPPED + t.text.strip().lstrip("*")
           for t in record.iterfind("HeadingMappedToList/HeadingMappedTo/DescriptorReferredTo/DescriptorUI") if t.text]
    )
    definition = (record.findtext("ConceptList/Concept[@PreferredConceptYN='Y']/ScopeNote") or record.findtext("Note") or "").strip()
    details[cui] = ConceptDetails(name, tuple(dict.fromkeys(types)), definition)
    for alias in [name, *terms]:
        yield (cui,), alias


def _heading(value: str) -> str:
    # "*Breast Neoplasms/genetics": a main heading (*), with a qualifier after the slash.
    return value.lstrip("*").partition("/")[0].strip()


def with_mapped_tree_numbers(details: Mapping[str, ConceptDetails]) -> Dict[str, ConceptDetails]:
    """Each `mapped:` type replaced by the types (tree numbers, semantic
    types) of the descriptor it names, by UI or heading, where `details`
    hold it; one they do not hold stays as it is."""
    descriptors = {cui: d for cui, d in details.items() if not _maps(d)}
    by_reference = {**{cui: d.types for cui, d in descriptors.items()}, **{d.name: d.types for d in descriptors.values()}}
    resolved = {}
    for cui, concept in details.items():
        if _maps(concept):
            types = [found for t in concept.types
                     for found in (by_reference.get(t[len(MAPPED):], (t,)) if t.startswith(MAPPED) else (t,))]
            concept = concept._replace(types=tuple(dict.fromkeys(types)))
        resolved[cui] = concept
    return resolved


def _maps(concept: ConceptDetails) -> bool:
    return any(t.startswith(MAPPED) for t in concept.types)


@registry.readers(MESH_VOCABULARY)
def mesh_vocabulary(path: str) -> VocabularyReader:
    return partial(read_mesh, path)
