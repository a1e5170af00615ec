"""A shard's rows in the format asked for: Parquet or JSONL, one row per
entity; PubTator or BioC XML, each document's text with its entities as
annotations (type = label, ID = `span._.cui`), as biomedical tools
exchange them. An entity left unlinked (NIL) is a PubTator annotation with
the ID -1, as the corpora write a CUI-less mention, and a BioC annotation
without an `identifier`. PubTator carries a text as `pubtator_form` says
(its title and abstract as given, but for line breaks, written as spaces);
BioC XML as it is, but for the control characters XML cannot hold, written
as U+FFFD.
"""
import re
from pathlib import Path
from typing import Dict, List, Sequence

from ..corpora.documents import Document
from ..corpora.pubtator_form import field_problem, mention_field, pubtator_form
from ..errors import CorpusError
from ..linking.rows import json_line

OUTPUT_FORMATS = ("parquet", "jsonl", "pubtator", "bioc")
SUFFIXES = {"parquet": "parquet", "jsonl": "jsonl", "pubtator": "pubtator", "bioc": "xml"}
# The formats that name a document by its id alone: their rows carry no input file.
BY_ID_ALONE = ("pubtator", "bioc")
# The ID of an entity left unlinked in PubTator: a last field left empty is stripped away by readers.
PUBTATOR_NIL = "-1"
# What XML 1.0 cannot hold; each becomes U+FFFD, one character for one, so offsets stay.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _schema():
    import pyarrow as pa

    candidate = pa.struct([("id", pa.string()), ("name", pa.string()), ("concept_name", pa.string()), ("score", pa.float64())])
    tie = pa.struct([("ids", pa.list_(pa.string())), ("rule", pa.string())])
    best = pa.struct([("id", pa.string()), ("concept_name", pa.string()), ("score", pa.float64())])
    return pa.schema([
        ("file", pa.string()), ("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("text", pa.string()),
        ("label", pa.string()), ("id", pa.string()), ("score", pa.float64()), ("nil_reason", pa.string()),
        ("nil_best", best), ("ties", pa.list_(tie)), ("gold_id", pa.string()),
        ("candidates", pa.list_(candidate)),
    ])


def write_rows(path: Path, documents: Sequence[Document], rows: Sequence[List[dict]], format: str) -> None:
    """Write each document's rows (`rows[i]` for `documents[i]`) to `path`."""
    if format == "parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist([row for document_rows in rows for row in document_rows], schema=_schema()), path)
    elif format == "jsonl":
        with path.open("w", encoding="utf-8") as f:
            f.writelines(json_line(row) for document_rows in rows for row in document_rows)
    elif format == "pubtator":
        with path.open("w", encoding="utf-8") as f:
            f.writelines(pubtator_block(document, document_rows) for document, document_rows in zip(documents, rows))
    else:
        path.write_text(bioc_xml(documents, rows), encoding="utf-8")


def count_rows(path: Path, format: str) -> int:
    """The entities a finished shard holds."""
    if format == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    with Path(path).open("rb") as f:
        if format == "jsonl":
            return sum(1 for _ in f)
        if format == "pubtator":
            # A title or abstract line, which may hold tabs, starts "id|t|" or "id|a|"; an id holds no "|".
            return sum(line.count(b"\t") >= 5 and b"|" not in line.split(b"\t", 1)[0] for line in f)
        return f.read().count(b"<annotation")


class DocumentIds:
    """Refuses, before anything is linked, the documents a format that
    names them by id alone cannot write: two of one id from two inputs
    (`x.txt` and `x.text` are both `x`), and, in PubTator, an id that is no
    PubTator field. Holds the ids seen, for those formats only."""

    def __init__(self, format: str):
        self.format = format
        self.seen: Dict[str, str] = {}

    def check(self, document: Document) -> None:
        if self.format not in BY_ID_ALONE:
            return
        problem = field_problem(document.id, bars=False) if self.format == "pubtator" else None
        if problem:
            raise CorpusError(f"{document.file}: document id {document.id!r} {problem}; write --output-format "
                              "jsonl, parquet or bioc, or give the document another id")
        first = self.seen.setdefault(document.id, document.file)
        if first != document.file:
            raise CorpusError(
                f"{first} and {document.file} both hold a document {document.id!r}: {self.format} output names a "
                "document by its id alone; rename one, or write jsonl or parquet, whose rows carry their input file"
            )


def pubtator_block(document: Document, rows: List[dict]) -> str:
    """A PubTator block, its text and offsets as `pubtator_form` writes
    them; a text of whitespace alone, which bioc.pubtator skips, is not
    written."""
    form = pubtator_form(document.text, [(row["start"], row["end"]) for row in rows], document.title_end)
    if not form.text.strip():
        return ""
    lines = [f"{document.id}|t|{form.title}\n"]
    if form.abstract is not None:
        lines.append(f"{document.id}|a|{form.abstract}\n")
    text = form.text
    for row, span in zip(rows, form.spans):
        if span is None:
            continue
        label, cui = row["label"], row["id"] or PUBTATOR_NIL
        for field, value in (("label", label), ("ID", cui)):
            problem = field_problem(value)
            if problem:
                raise CorpusError(f"{document.file}, document {document.id}: the {field} {value!r:.60} {problem}; "
                                  "PubTator cannot write it: write --output-format jsonl, parquet or bioc")
        start, end = span
        lines.append(f"{document.id}\t{start}\t{end}\t{mention_field(text[start:end])}\t{label}\t{cui}\n")
    return "".join(lines) + "\n"


def bioc_xml(documents: Sequence[Document], rows: Sequence[List[dict]]) -> str:
    """A BioC XML collection: one passage per document at offset 0; each entity
    an annotation whose `type` infon is its label, `identifier` its ID and
    `score` its link score."""
    import bioc
    from bioc import biocxml

    collection = bioc.BioCCollection()
    collection.source = "spacy-biosyn"
    for document, document_rows in zip(documents, rows):
        passage = bioc.BioCPassage()
        passage.offset, passage.text = 0, _xml_safe(document.text)
        for number, row in enumerate(document_rows):
            annotation = bioc.BioCAnnotation()
            annotation.id, annotation.text = str(number), _xml_safe(row["text"])
            annotation.infons["type"] = _xml_safe(row["label"])
            if row["id"]:
                annotation.infons["identifier"] = _xml_safe(row["id"])
            if row["score"] is not None:
                annotation.infons["score"] = f"{row['score']:.4f}"
            annotation.add_location(bioc.BioCLocation(row["start"], row["end"] - row["start"]))
            passage.add_annotation(annotation)
        bioc_document = bioc.BioCDocument()
        bioc_document.id = _xml_safe(document.id)
        bioc_document.add_passage(passage)
        collection.add_document(bioc_document)
    return biocxml.dumps(collection)


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
