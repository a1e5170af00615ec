"""The documents of a corpus to link, read one at a time from PubTator,
BioC XML or JSON, MEDLINE/PubMed XML (NLM's PubMed files: a citation each,
named by its PMID), JSONL (`{"id", "text"}` a line), Parquet (`id` and
`text` columns) or plain-text files (one document each, named by the
file's stem), and cut into shards of a fixed number of documents.

A shard's documents depend only on the input and the shard size, never on
the engine or the number of workers: that is what lets a re-run skip the
shards a killed run finished, and every engine write the same rows.
"""
import glob
import gzip
import io
import json
import re
import zlib
from itertools import count, islice
from pathlib import Path
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from ..corpora.documents import Document
from ..corpora.medline import Citation, is_medline_xml, iter_medline
from ..corpora.readers import Annotation, iter_pubtator
from ..errors import BiosynError, CorpusError
from ..preprocess.text import numbered_lines, open_maybe_gzipped, without_lone_surrogates

FORMATS = ("pubtator", "bioc-xml", "bioc-json", "medline-xml", "jsonl", "parquet", "text")
_BY_SUFFIX = {".jsonl": "jsonl", ".parquet": "parquet", ".xml": "bioc-xml", ".json": "bioc-json", ".pubtator": "pubtator"}
# A .txt file is PubTator when its first line is one ("PMID|t|title"), plain text otherwise.
_SNIFFED_SUFFIXES = {".txt", ".text"}
_PUBTATOR_FIRST_LINE = re.compile(rb"^[^|\s]+\|[ta]\|")
_UNANNOTATED = {"medline-xml", "jsonl", "parquet", "text"}
# What is read of a .xml file to tell MEDLINE from BioC by its root: NLM's
# prolog is two lines, and comments before the root may be long.
_XML_HEAD_BYTES = 2**16


class Shard(NamedTuple):
    index: int
    documents: List[Document]


def input_files(input: str) -> List[Path]:
    """A file, the corpus files of a folder (sorted; as pyarrow does, not
    those named from "." or "_", such as a run's manifest), or a glob's
    matches (sorted)."""
    path = Path(input)
    if path.is_file():
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and _known_suffix(p) and p.name[0] not in "._")
        if not files:
            raise CorpusError(f"{path}: no corpus files in this folder (.txt, .text, .pubtator, .xml, .json, .jsonl, .parquet)")
        return files
    files = sorted(Path(match) for match in glob.glob(input) if Path(match).is_file())
    if not files:
        raise CorpusError(f"{input}: no such file or folder, and no file matches it as a pattern")
    return files


def file_format(path: Path, given: Optional[str] = None) -> str:
    """`given`, or what the file's suffix says, in any case and under a .gz;
    a .txt or .text file is PubTator when its first line is a title line,
    plain text otherwise; a .xml file is MEDLINE/PubMed XML when its root is
    NLM's (PubmedArticleSet), BioC XML otherwise."""
    if given is not None:
        if given not in FORMATS:
            raise CorpusError(f"input format {given!r}: expected one of {', '.join(FORMATS)}")
        return given
    if not _known_suffix(path):
        raise CorpusError(f"{path}: cannot tell the format from the suffix {_suffix(path)!r}: give --input-format")
    if _suffix(path) in _SNIFFED_SUFFIXES:
        return "pubtator" if _PUBTATOR_FIRST_LINE.match(_first_line(path)) else "text"
    if _suffix(path) == ".xml" and is_medline_xml(_read_bytes(path, _XML_HEAD_BYTES)):
        return "medline-xml"
    return _BY_SUFFIX[_suffix(path)]


def _first_line(path: Path) -> bytes:
    """The first non-blank line's start, past a byte-order mark."""
    return _read_bytes(path, 4096).removeprefix(b"\xef\xbb\xbf").lstrip()


def _read_bytes(path: Path, size: int = -1) -> bytes:
    """A file's bytes (its first `size`), unpacked where gzip-compressed;
    all of them are read line by line, each held to the line cap of
    open_maybe_gzipped. A .gz cut short is an error naming the file."""
    try:
        with open_maybe_gzipped(path) as f:
            return f.read(size) if size >= 0 else b"".join(f)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise CorpusError(f"{path}: cannot be read, cut short? ({type(error).__name__}: {error})") from None


def _suffix(path: Path) -> str:
    """The suffix that names the format: "FILE.PubTator.gz" -> ".pubtator"."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes.pop()
    return suffixes[-1] if suffixes else ""


def _known_suffix(path: Path) -> bool:
    return _suffix(path) in _BY_SUFFIX or _suffix(path) in _SNIFFED_SUFFIXES


def check_annotated(files: List[Path], format: Optional[str]) -> None:
    """Gold spans need a format that holds annotations."""
    for path in files:
        if file_format(path, format) in _UNANNOTATED:
            raise CorpusError(f"--gold-spans: {path} is {file_format(path, format)}, which holds no annotations")


def read_documents(path: Path, format: str, deleted: Optional[List[Tuple[str, str]]] = None) -> Iterator[Document]:
    """A file's documents, each knowing its file; an id seen twice in the
    file is an error in every format, since the output's rows are known by
    it. Ids are checked within each file, so the memory of the check is one
    file's ids; rows of several files carry their file. `deleted` gets
    (file, PMID) for each PMID a MEDLINE file deletes (DeleteCitation)."""
    seen: Dict[str, int] = {}
    documents = _medline(path, deleted) if format == "medline-xml" else _READERS[format](path)
    for number, document in enumerate(documents, start=1):
        first = seen.setdefault(document.id, number)
        if first != number:
            raise CorpusError(
                f"{path}: document {number} has the id {document.id!r} of document {first}; each document "
                "of a file needs its own id, which names its rows in the output"
            )
        yield document._replace(file=str(path))


def shards(
    files: List[Path], format: Optional[str], size: int, deleted: Optional[List[Tuple[str, str]]] = None
) -> Iterator[Shard]:
    """The documents of all files, in order, `size` at a time; `deleted`
    as read_documents fills it."""
    if size < 1:
        raise CorpusError(f"shard size {size}: must be at least 1")
    documents = (document for path in files for document in read_documents(path, file_format(path, format), deleted))
    for index in count():
        batch = list(islice(documents, size))
        if not batch:
            return
        yield Shard(index, batch)


def _pubtator(path: Path) -> Iterator[Document]:
    for document in iter_pubtator(path):
        yield Document(document.doc_id, document.text, document.annotations, title_end=document.title_end)


def _medline(path: Path, deleted: Optional[List[Tuple[str, str]]]) -> Iterator[Document]:
    """Each citation, named by its PMID, its title and abstract one space
    apart as PubTator's are (title_end: for a PubTator output's title line)."""
    for entry in iter_medline(path):
        if isinstance(entry, Citation):
            yield Document(entry.pmid, entry.text, None, title_end=entry.title_end)
        elif deleted is not None:
            deleted.extend((str(path), pmid) for pmid in entry.pmids)


def _text(path: Path) -> Iterator[Document]:
    """The whole file as one document, named by its stem ("PMC123.txt.gz" ->
    "PMC123"), its text as written: offsets count in it."""
    data = _read_bytes(path)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise CorpusError(f"{path}, line {line}: not UTF-8 text ({error.reason}); convert the file to UTF-8") from None
    name = path.name[: -len(".gz")] if path.name.lower().endswith(".gz") else path.name
    yield Document(Path(name).stem, text, None)


def _jsonl(path: Path) -> Iterator[Document]:
    for number, line in numbered_lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise CorpusError(f"{path}, line {number}: not JSON ({error.msg} at column {error.colno})") from None
        except RecursionError:
            raise CorpusError(f"{path}, line {number}: JSON nested too deep to read") from None
        yield _record(record, f"{path}, line {number}")


def _parquet(path: Path) -> Iterator[Document]:
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several types for a file that is not Parquet
        raise CorpusError(f"{path}: not a Parquet file ({error})") from None
    missing = {"id", "text"} - set(table.schema_arrow.names)
    if missing:
        raise CorpusError(f"{path}: no {' or '.join(sorted(missing))} column (it has {table.schema_arrow.names})")
    row = 0
    for batch in table.iter_batches(columns=["id", "text"]):
        for record in batch.to_pylist():
            row += 1
            yield _record(record, f"{path}, row {row}")


def _record(record: object, where: str) -> Document:
    if not isinstance(record, dict) or not isinstance(record.get("text"), str) or record.get("id") in (None, ""):
        raise CorpusError(f"{where}: expected an 'id' and a 'text' string, found {str(record)[:80]!r}")
    # JSON may spell a lone surrogate ("\\ud800"), which no tokenizer can encode.
    return Document(str(record["id"]), without_lone_surrogates(record["text"]), None)


def _bioc_xml(path: Path) -> Iterator[Document]:
    from bioc import biocxml

    try:
        with open_maybe_gzipped(path) as f, biocxml.iterparse(f) as reader:
            for document in reader:
                yield _bioc_document(path, document)
    except BiosynError:  # the document's own, or a cap of open_maybe_gzipped
        raise
    except Exception as error:  # lxml's syntax errors carry the line; bioc's own checks raise ValueError
        raise CorpusError(f"{path}: not BioC XML ({error})") from None


def _bioc_json(path: Path) -> Iterator[Document]:
    from bioc import biocjson

    with open_maybe_gzipped(path) as f:
        try:
            collection = biocjson.load(io.TextIOWrapper(f, encoding="utf-8"))
        except BiosynError:  # a cap of open_maybe_gzipped
            raise
        except (ValueError, KeyError, TypeError, RecursionError) as error:  # RecursionError: JSON nested too deep
            raise CorpusError(f"{path}: not BioC JSON ({type(error).__name__}: {error})") from None
        except (EOFError, zlib.error, gzip.BadGzipFile) as error:
            raise CorpusError(f"{path}: cannot be read, cut short? ({type(error).__name__}: {error})") from None
    for document in collection.documents:
        yield _bioc_document(path, document)


def _bioc_document(path: Path, document) -> Document:
    """The passages laid at their offsets (spaces between), so annotation
    offsets index the text; each annotation's ID is its `identifier` infon
    (BioC's convention) or `MESH` (BC5CDR's)."""
    import bioc

    start, text = bioc.get_text(document)
    text = without_lone_surrogates(text)
    # A title passage and more: PubTator output writes the first on its title line.
    first = document.passages[0] if len(document.passages) > 1 else None
    title_end = None if first is None else first.offset - start + len(first.text or "")
    annotations = []
    for passage in document.passages:
        for annotation in passage.annotations:
            span = annotation.total_span
            start, end = span.offset, span.offset + span.length
            if text[start:end] != annotation.text:
                raise CorpusError(
                    f"{path}, document {document.id}, annotation {annotation.id}: the text at {start}-{end} is "
                    f"{text[start:end]!r:.60}, not the annotation's {annotation.text!r:.60}"
                )
            infons = annotation.infons
            cui = infons.get("identifier") or infons.get("MESH") or "-1"
            annotations.append(Annotation(start, end, annotation.text, infons.get("type", ""), cui))
    return Document(document.id, text, annotations, title_end=title_end if title_end and title_end < len(text) else None)


_READERS = {
    "pubtator": _pubtator, "jsonl": _jsonl, "parquet": _parquet, "bioc-xml": _bioc_xml, "bioc-json": _bioc_json,
    "text": _text,
}
