"""A shard's rows in the format asked for: Parquet or JSONL, one row per
entity; PubTator or BioC XML, each document's text with its entities as
annotations (type = label, ID = `span._.cui`), as biomedical tools
exchange them. An entity left unlinked (NIL) is an annotation without an ID.
"""
import json
import re
from pathlib import Path
from typing import List, Sequence

from ..errors import CorpusError
from .sources import Document

OUTPUT_FORMATS = ("parquet", "jsonl", "pubtator", "bioc")
SUFFIXES = {"parquet": "parquet", "jsonl": "jsonl", "pubtator": "pubtator", "bioc": "xml"}
# What XML 1.0 cannot hold; each becomes U+FFFD, one character for one, so offsets stay.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _schema():
    import pyarrow as pa

    candidate = pa.struct([("id", pa.string()), ("name", pa.string()), ("score", pa.float64())])
    return pa.schema([
        ("file", pa.string()), ("doc_id", pa.string()), ("start", pa.int64()), ("end", pa.int64()), ("text", pa.string()),
        ("label", pa.string()), ("id", pa.string()), ("score", pa.float64()), ("gold_id", pa.string()),
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
            f.writelines(json.dumps(row, ensure_ascii=False) + "\n" for document_rows in rows for row in document_rows)
    elif format == "pubtator":
        with path.open("w", encoding="utf-8") as f:
            f.writelines(_pubtator(document, document_rows) for document, document_rows in zip(documents, rows))
    else:
        _write_bioc(path, documents, rows)


def count_rows(path: Path, format: str) -> int:
    """The entities a finished shard holds."""
    if format == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(path).metadata.num_rows
    with Path(path).open("rb") as f:
        if format == "jsonl":
            return sum(1 for _ in f)
        if format == "pubtator":
            return sum(line.count(b"\t") >= 5 for line in f)
        return f.read().count(b"<annotation")


def _pubtator(document: Document, rows: List[dict]) -> str:
    """A PubTator block: the text's first line as the title, the rest as
    the abstract, line breaks as spaces: PubTator's offsets count title +
    one character + abstract, so every offset still points where it did."""
    if any(c in document.id for c in "|\t\n"):
        raise CorpusError(f"{document.file}: document id {document.id!r} holds '|', a tab or a line break, which PubTator cannot write")
    title, newline, abstract = document.text.partition("\n")
    lines = [f"{document.id}|t|{_one_line(title)}\n"]
    if newline:
        lines.append(f"{document.id}|a|{_one_line(abstract)}\n")
    for row in rows:
        lines.append(
            f"{document.id}\t{row['start']}\t{row['end']}\t{_one_line(row['text'])}\t{row['label']}\t{row['id'] or ''}\n"
        )
    return "".join(lines) + "\n"


def _one_line(text: str) -> str:
    return text.replace("\r", " ").replace("\n", " ")


def _write_bioc(path: Path, documents: Sequence[Document], rows: Sequence[List[dict]]) -> None:
    """One passage per document at offset 0; each entity an annotation whose
    `type` infon is its label, `identifier` its ID and `score` its link score."""
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
            annotation.infons["type"] = row["label"]
            if row["id"]:
                annotation.infons["identifier"] = row["id"]
            if row["score"] is not None:
                annotation.infons["score"] = f"{row['score']:.4f}"
            annotation.add_location(bioc.BioCLocation(row["start"], row["end"] - row["start"]))
            passage.add_annotation(annotation)
        bioc_document = bioc.BioCDocument()
        bioc_document.id = _xml_safe(document.id)
        bioc_document.add_passage(passage)
        collection.add_document(bioc_document)
    with path.open("w", encoding="utf-8") as f:
        biocxml.dump(collection, f)


def _xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)
