"""PubTator and BioC XML bodies, read and written as link-corpus reads and
writes those files: a request's Content-Type says what its body is, its
Accept what the answer is to be."""
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

import mimeparse

from ..corpora.documents import Document
from ..corpora.pubtator_form import field_problem
from ..corpus_linking.text_sources import read_documents
from ..corpus_linking.writers import bioc_xml, pubtator_block

JSON = "application/json"
PUBTATOR = "text/x-pubtator"
BIOC_XML = "application/xml"
PLAIN = "text/plain"
# Content-Type -> link-corpus's reader; JSON and plain text are read by the app.
_READ = {PUBTATOR: "pubtator", BIOC_XML: "bioc-xml", "text/xml": "bioc-xml"}
# What an answer can be written as; of types an Accept header weighs alike,
# the later wins (mimeparse's rule), so "*/*" is answered in JSON.
_OFFERED = ("text/xml", BIOC_XML, PUBTATOR, JSON)
BODY_TYPES = (JSON, PLAIN, *_READ)
ANSWER_TYPES = (JSON, PUBTATOR, BIOC_XML)
_WHERE = "the request body"
_GZIP = b"\x1f\x8b"


def media_type(header: Optional[str]) -> str:
    """`text/x-pubtator; charset=utf-8` -> `text/x-pubtator`."""
    return (header or "").split(";")[0].strip().lower()


def answer_type(accept: Optional[str]) -> Optional[str]:
    """The type an Accept header weighs highest (q-values, then the more
    specific range) of those the service writes; JSON where none is asked;
    None where it asks only for others, or cannot be read."""
    if not accept or not accept.strip():
        return JSON
    try:
        found = mimeparse.best_match(_OFFERED, accept)
    except (mimeparse.MimeTypeParseException, ValueError):
        return None
    return {"text/xml": BIOC_XML}.get(found, found) or None


def read_body(body: bytes, content_type: str, most: int) -> List[Document]:
    """The documents of a PubTator or BioC XML body, checked as link-corpus
    checks a file (UTF-8, line caps, one id per document), read up to one
    past `most`, each without an id numbered; errors name the request body.
    It is written to a private temporary folder, removed at once: the
    readers take files. A gzip body is refused: the readers would unpack it
    past the body's limit."""
    if body[:2] == _GZIP:
        raise ValueError(f"{_WHERE} is gzip-compressed: send it uncompressed")
    with tempfile.TemporaryDirectory(prefix="spacy-biosyn-serve-") as folder:
        path = Path(folder) / "body"
        path.write_bytes(body)
        documents = []
        try:
            for number, document in enumerate(read_documents(path, _READ[content_type]), start=1):
                documents.append(document._replace(file="", id=document.id or str(number)))
                if number > most:
                    break
        except ValueError as error:  # BiosynError is one
            raise ValueError(str(error).replace(str(path), _WHERE)) from None
        return documents


def write_answer(documents: Sequence[Document], rows: Sequence[List[dict]], answer: str) -> str:
    """PubTator or BioC XML; ValueError naming what PubTator cannot hold
    (an id with a '|' or a tab, a label with a line break)."""
    if answer == PUBTATOR:
        for document in documents:
            problem = field_problem(document.id, bars=False)
            if problem:
                raise ValueError(f"document id {document.id!r:.60} {problem}")
        return "".join(pubtator_block(document, document_rows) for document, document_rows in zip(documents, rows))
    return bioc_xml(documents, rows)
