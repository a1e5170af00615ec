"""Readers for annotated corpora: BioSyn `.concept` queries and PubTator files,
and the mentions they hold as synonyms for the dictionary. No spaCy here:
the linking engine reads synonyms and ID usage through this module."""
import hashlib
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from ..errors import CorpusError
from ..kb.dictionary import Dictionary
from ..kb.ids import IdPreference, split_cuis
from ..preprocess.text import numbered_lines, text_lines
from ..ty import MentionInContext
from .pubtator_form import mention_field


class Query(NamedTuple):
    """One `.concept` line: PMID||start|end||type||mention||CUI."""

    doc_id: str
    start: int
    end: int
    label: str
    mention: str
    cui: str


class Annotation(NamedTuple):
    start: int
    end: int
    text: str
    label: str
    cui: str


class PubTatorDocument(NamedTuple):
    doc_id: str
    text: str  # title + " " + abstract: the space the offsets count in
    annotations: List[Annotation]
    # The title's length, where an abstract follows it: PubTator writes the two on their own lines.
    title_end: Optional[int] = None


def read_concept_queries(path: Union[str, Path]) -> List[Query]:
    """Every query of a `.concept` file, or of all `*.concept` files in a
    folder (sorted by name, so the order never depends on the file system)."""
    path = Path(path)
    files = sorted(path.glob("*.concept")) if path.is_dir() else [path]
    if not files:
        raise CorpusError(f"{path}: no .concept files in this folder")
    return [query for file in files for query in _read_concept_file(file)]


def _read_concept_file(path: Path) -> Iterator[Query]:
    for number, line in numbered_lines(path):
        try:
            doc_id, span, label, mention, cui = line.split("||")
            start, end = (int(x) for x in span.split("|"))
        except ValueError:
            raise CorpusError(
                f"{path}, line {number}: expected 'PMID||start|end||type||mention||CUI', "
                f"found {line[:80]!r}"
            ) from None
        yield Query(doc_id, start, end, label, mention, cui)


def read_synonyms(path: Union[str, Path]) -> Dictionary:
    """Names to search beside a dictionary's: the mentions of a folder (or
    file) of `.concept` queries, or the names of a `CUI||name` file.

    Every mention with a CUI is kept, a composite one under all its parts'
    CUIs: that is how BioSyn's dev and test dictionaries add the mentions of
    the splits before them."""
    path = Path(path)
    if _holds_queries(path):
        queries = read_concept_queries(path)
        preferred = IdPreference()
        return Dictionary.from_entries(
            (preferred(split_cuis(q.cui)), q.mention) for q in queries if split_cuis(q.cui) != ("-1",)
        )
    return Dictionary.from_file(path, IdPreference())


def read_annotated_mentions(path: Union[str, Path]) -> List[Tuple[str, str]]:
    """Each mention of an annotated corpus as written, with its gold CUI
    field: a folder (or file) of `.concept` queries, or a PubTator file."""
    path = Path(path)
    if _holds_queries(path):
        return [(q.mention, q.cui) for q in read_concept_queries(path)]
    return [(a.text, a.cui) for document in read_pubtator(path) for a in document.annotations]


def _holds_queries(path: Path) -> bool:
    """A folder of .concept files or one such file, else a PubTator or CUI||name file."""
    return path.is_dir() or path.suffix == ".concept"


def read_pubtator(path: Union[str, Path]) -> List[PubTatorDocument]:
    """Documents of a PubTator file: `PMID|t|title`, `PMID|a|abstract`, then
    tab-separated annotation lines; relation lines (`PMID<TAB>CID<TAB>...`) are
    skipped. An exact copy of a document is skipped, as BioSyn does (NCBI's
    train set holds one); a PMID reused for another document is an error."""
    return list(iter_pubtator(path))


def iter_pubtator(path: Union[str, Path]) -> Iterator[PubTatorDocument]:
    """`read_pubtator`'s documents one at a time, for files too large to hold."""
    path = Path(path)
    seen: Dict[str, Tuple[int, str]] = {}  # PMID -> (its document's number, a digest of it)
    for number, document in enumerate(_pubtator_blocks(path), start=1):
        digest = hashlib.sha256(repr((document.text, document.annotations)).encode("utf-8", "surrogatepass")).hexdigest()
        first = seen.setdefault(document.doc_id, (number, digest))
        if first[0] == number:
            yield document
        elif first[1] != digest:
            raise CorpusError(
                f"{path}: document {number} reuses PMID {document.doc_id} of document {first[0]} with another text or "
                "other annotations; each document needs its own PMID (an exact copy is skipped)"
            )


def _pubtator_blocks(path: Path) -> Iterator[PubTatorDocument]:
    block: List[Tuple[int, str]] = []
    for number, line in text_lines(path):
        if line.strip():
            block.append((number, line))
        elif block:
            yield _pubtator_document(path, block)
            block = []
    if block:
        yield _pubtator_document(path, block)


def _pubtator_document(path: Path, block: List[Tuple[int, str]]) -> PubTatorDocument:
    """One document's lines: title, abstract (optional), then annotations,
    each checked against the text at its offsets."""
    doc_id = title = abstract = None
    annotations: List[Annotation] = []
    for number, line in block:
        head = line.split("\t", 1)[0]
        if "|t|" in head or "|a|" in head:
            if annotations:
                raise CorpusError(f"{path}, line {number}: a title or abstract line after the annotations")
            pmid, kind, content = line.split("|", 2)
            if doc_id is not None and pmid != doc_id:
                raise CorpusError(f"{path}, line {number}: PMID {pmid} inside the document of PMID {doc_id}")
            doc_id = pmid
            title, abstract = (content, abstract) if kind == "t" else (title, content)
            continue
        fields = line.split("\t")
        if len(fields) == 4:  # a relation line: PMID, CID, chemical, disease
            continue
        if len(fields) < 6:
            raise CorpusError(f"{path}, line {number}: not a PubTator line: {line[:80]!r}")
        if title is None:
            raise CorpusError(f"{path}, line {number}: an annotation before its document's title line")
        if fields[0] != doc_id:
            raise CorpusError(
                f"{path}, line {number}: an annotation of PMID {fields[0]} inside the document of PMID {doc_id} "
                "(a missing blank line between documents?)"
            )
        # Offsets count in title + " " + abstract; a document may have no abstract.
        text = f"{title} {abstract}" if abstract else title
        try:
            start, end = int(fields[1]), int(fields[2])
        except ValueError:
            raise CorpusError(f"{path}, line {number}: bad offsets in {line[:80]!r}") from None
        if not 0 <= start < end <= len(text):
            raise CorpusError(f"{path}, line {number}: offsets {start}-{end} lie outside the {len(text)}-character text")
        # NCBI's mention fields may end in spaces; a field holds a space for each tab of its text (pubtator_form)
        if mention_field(text[start:end]).strip() != fields[3].strip():
            raise CorpusError(
                f"{path}, line {number}: the text at {start}-{end} is {text[start:end]!r:.60}, "
                f"not the annotation's {fields[3]!r:.60}"
            )
        annotations.append(Annotation(start, end, fields[3], fields[4], fields[5].strip()))
    if title is None:
        raise CorpusError(f"{path}, line {block[0][0]}: a document without a 'PMID|t|title' line")
    if not abstract:  # no abstract line, or an empty one: no separator either, as bioc.pubtator reads it
        return PubTatorDocument(doc_id, title, annotations)
    return PubTatorDocument(doc_id, f"{title} {abstract}", annotations, title_end=len(title))


# NCBI Disease's four types are all diseases, linked alike: one NER label, as
# BC5CDR's Disease and scispaCy's DISEASE.
NCBI_LABELS = {"SpecificDisease": "Disease", "DiseaseClass": "Disease", "Modifier": "Disease", "CompositeMention": "Disease"}


def query_contexts(queries: Sequence[Query], documents: Iterable[PubTatorDocument], window: int) -> List[MentionInContext]:
    """Each `.concept` query in its abstract (matched by PMID, at the query's
    offsets); a query whose abstract is not given is read alone."""
    texts: Dict[str, str] = {doc.doc_id: doc.text for doc in documents}
    return [
        MentionInContext.in_text(texts[q.doc_id], q.start, q.end, q.mention, window)
        if q.doc_id in texts and 0 <= q.start < q.end <= len(texts[q.doc_id])
        else MentionInContext(q.mention)
        for q in queries
    ]
