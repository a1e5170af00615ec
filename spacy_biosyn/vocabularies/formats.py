"""The vocabulary formats, in one table: each format's reader (one module a
format beside this one), the registered reader a config names to read it,
and what tells its files apart. Format detection, the config block that
reads a file, and reading a file by its format are built from the table.
"""
from typing import Callable, Dict, NamedTuple, Optional, Tuple, Union

from ..files.downloads import cached_path
from ..kb.dictionary import Dictionary, DictionaryError
from ..parts import (
    BIOSYN_DICTIONARY,
    CTD_CHEMICALS,
    MEDIC_VOCABULARY,
    MESH_VOCABULARY,
    OBO_VOCABULARY,
    SCISPACY_KB,
    UMLS_VOCABULARY,
    registry,
)
from ..preprocess.text import numbered_lines
from .biosyn import read_biosyn
from .common import PathLike, VocabularyReader
from .ctd import ctd_kind, looks_like_medic, read_ctd_chemicals, read_medic
from .mesh import looks_like_mesh, read_mesh
from .obo import looks_like_obo, read_obo
from .scispacy_kb import looks_like_scispacy_kb, read_scispacy_kb
from .umls import read_umls


class Format(NamedTuple):
    """A vocabulary format: the function that reads its files, the reader a
    config names to read them, and what a file's name says of it."""

    read: Callable[..., Dictionary]  # a file (or URL) in, its Dictionary out
    reader: str  # its registered reader, a config's "@readers"
    argument: str  # the registered reader's argument that takes the file
    description: str  # what its files are, in a line
    file_names: Tuple[str, ...] = ()  # what a file's lowercased name holds when it is of this format
    # Whether a file is of this format, by its first line and lowercased name (without .gz).
    looks_like: Optional[Callable[[str, str], bool]] = None


# The formats by the name --format takes, in the order its help lists them.
READERS: Dict[str, Format] = {
    "biosyn": Format(read_biosyn, BIOSYN_DICTIONARY, "path", "BioSyn's dictionary: `ID|ID||name` lines"),
    "medic": Format(
        read_medic, MEDIC_VOCABULARY, "path", "CTD's disease vocabulary, MEDIC, or BioSyn's copy of it",
        ("ctd_diseases", "medic"), looks_like_medic,
    ),
    "ctd-chemicals": Format(read_ctd_chemicals, CTD_CHEMICALS, "path", "CTD's chemical vocabulary", ("ctd_chemicals",)),
    "umls": Format(read_umls, UMLS_VOCABULARY, "mrconso", "UMLS's MRCONSO.RRF, with MRSTY.RRF for types", ("mrconso",)),
    "obo": Format(read_obo, OBO_VOCABULARY, "path", "an OBO ontology's [Term] stanzas (MONDO, DOID, HPO)",
                  looks_like=looks_like_obo),
    "mesh": Format(read_mesh, MESH_VOCABULARY, "path", "NLM's MeSH descriptors or supplementary records, ASCII or XML",
                   looks_like=looks_like_mesh),
    "scispacy": Format(read_scispacy_kb, SCISPACY_KB, "path", "a scispaCy knowledge base, JSONL",
                       looks_like=looks_like_scispacy_kb),
}
# The order a file's content is asked in: a MEDIC line reads as most things' fallback.
_RECOGNIZED_IN_ORDER = ("obo", "scispacy", "mesh", "medic")

# What --format takes, in a command's help.
FORMAT_HELP = f"{', '.join(list(READERS)[:-1])} or {list(READERS)[-1]} (default: detected from the file, and said)"


def read_vocabulary(source: Union[Dictionary, PathLike, VocabularyReader]) -> Dictionary:
    """A registered reader's dictionary, or a path read as a BioSyn file (a
    Dictionary is taken as it is)."""
    if isinstance(source, Dictionary):
        return source
    return source() if callable(source) else read_biosyn(source)


def detect_format(source: PathLike) -> str:
    """The format of a vocabulary file: CTD's by the columns its header
    names, others by the file's name, else by what each format's module
    recognizes of its first line; BioSyn's `ID||name` lines where none does."""
    path = cached_path(source)
    ctd = ctd_kind(path)
    if ctd is not None:
        return ctd
    name = path.name.lower().removesuffix(".gz")
    # Later formats' names first: a name that holds two formats' (medic_MRCONSO.RRF) is the later one's.
    found = next((fmt for fmt, entry in reversed(READERS.items()) for part in entry.file_names if part in name), None)
    if found:
        return found
    first = next((line for _, line in numbered_lines(path)), "")
    return next((fmt for fmt in _RECOGNIZED_IN_ORDER if READERS[fmt].looks_like(first, name)), "biosyn")


def reader_block(source: PathLike, format: Optional[str] = None) -> Tuple[dict, str]:
    """The config block that reads `source` (a path or URL) in `format`,
    detected when None, and the format."""
    if format is not None and format not in READERS:
        raise DictionaryError(f"format {format!r}: expected one of {', '.join(READERS)}")
    format = format or detect_format(source)
    entry = READERS[format]
    return {"@readers": entry.reader, entry.argument: str(source)}, format


def read_vocabulary_file(source: PathLike, format: Optional[str] = None) -> Tuple[Dictionary, str]:
    """A vocabulary file (or URL) in `format`, detected when None, read by
    the format's registered reader with its defaults; returns the
    dictionary and the format read."""
    block, format = reader_block(source, format)
    reader = registry.readers.get(block.pop("@readers"))
    return reader(**block)(), format
