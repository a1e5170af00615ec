"""PubTator and BioC XML bodies, read and written as link-corpus reads and
writes those files: a request's Content-Type says what its body is, its
Accept what the answer is to be."""
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence

from ..corpus_linking.text_sources import Document, read_documents
from ..corpus_linking.writers import bioc_xml, pubtator_block

JSON = "application/json"
PUBTATOR = "text/x-pubtator"
BIOC_XML = "application/xml"
PLAIN = "text/plain"
# Content-Type -> link-corpus's reader; JSON and plain text are read by the app.
_READ = {PUBTATOR: "pubtator", BIOC_XML: "bioc-xml", "text/xml": "bioc-xml"}
_WRITE = {PUBTATOR: PUBTATOR, BIOC_XML: BIOC_XML, "text/xml": BIOC_XML, JSON: JSON, "*/*": JSON, "application/*": JSON}
BODY_TYPES = (JSON, PLAIN, *_READ)
ANSWER_TYPES = (JSON, PUBTATOR, BIOC_XML)
_WHERE = "the request body"


def media_type(header: Optional[str]) -> str:
    """`text/x-pubtator; charset=utf-8` -> `text/x-pubtator`."""
    return (header or "").split(";")[0].strip().lower()


def answer_type(accept: Optional[str]) -> Optional[str]:
    """The first type of an Accept header the service writes (JSON where
    none is asked), or None where it asks only for others."""
    if not accept or not accept.strip():
        return JSON
    for part in accept.split(","):
        found = _WRITE.get(media_type(part))
        if found:
            return found
    return None


def read_body(body: bytes, content_type: str) -> List[Document]:
    """The documents of a PubTator or BioC XML body, checked as link-corpus
    checks a file (UTF-8, line caps, one id per document); errors name the
    request body, not where it was put to be read. It is written to a
    private temporary folder, removed at once: the readers take files."""
    with tempfile.TemporaryDirectory(prefix="spacy-biosyn-serve-") as folder:
        path = Path(folder) / "body"
        path.write_bytes(body)
        try:
            return [document._replace(file="") for document in read_documents(path, _READ[content_type])]
        except ValueError as error:  # BiosynError is one
            raise ValueError(str(error).replace(str(path), _WHERE)) from None


def write_answer(documents: Sequence[Document], rows: Sequence[List[dict]], answer: str) -> str:
    if answer == PUBTATOR:
        return "".join(pubtator_block(document, document_rows) for document, document_rows in zip(documents, rows))
    return bioc_xml(documents, rows)
