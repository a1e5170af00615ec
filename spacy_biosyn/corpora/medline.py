"""MEDLINE/PubMed XML, as NLM ships PubMed (the baseline and update files,
pubmed26nNNNN.xml.gz) and as E-utilities' efetch answers: each citation's
PMID and text, and the PMIDs of a DeleteCitation, read as a stream, so that
memory holds one citation whatever the file's size.

A citation's text is its ArticleTitle, a space, then the AbstractText
sections of its Abstract in order, joined by spaces, a labelled one as
"LABEL: text" (as PubMed's MEDLINE format writes them); `title_end` is the
title's length where an abstract follows, so offsets count as PubTator's
(title + " " + abstract). Inline markup (<i>, <b>, <sup>, <sub>, <u>) keeps
its text; MathML (<mml:math>) is left out with its text; XML whitespace
runs become one space. VernacularTitle and OtherAbstract are not read. A
PubmedBookArticle is read as a citation: its BookDocument's PMID, its
ArticleTitle (a chapter's) or else its Book's BookTitle, and its Abstract.

The parser is the standard library's expat, used directly: no namespaces
(an `mml:` prefix needs no declaration), no tree to clear, and no DTD read:
the URL the DOCTYPE names is never fetched, and a DOCTYPE with markup of
its own (an internal subset: entities that make an XML bomb or read
file:///etc/passwd, attribute defaults) is refused where it starts, before
anything in it is read. NLM's files have none. ElementTree's C parser has
no hook to refuse it.
"""
import gzip
import re
import zlib
from functools import partial
from pathlib import Path
from typing import Iterator, List, NamedTuple, Optional, Tuple, Union
from xml.parsers import expat

from ..errors import CorpusError
from ..preprocess.text import input_limits, open_maybe_gzipped

# pubmed_*.dtd's roots (PubmedArticleSet holds PubmedArticle, PubmedBookArticle
# and DeleteCitation), and the MedlineCitationSet of the baselines before 2017.
ROOTS = ("PubmedArticleSet", "PubmedBookArticleSet", "MedlineCitationSet")
_CITATIONS = ("MedlineCitation", "BookDocument")
# The elements whose start matters, below the root.
_READ = frozenset((*_CITATIONS, "PMID", "ArticleTitle", "BookTitle", "AbstractText"))
_XML_WHITESPACE = re.compile("[ \t\r\n]+")
_CHUNK = 2**16


class Citation(NamedTuple):
    pmid: str
    text: str
    # The title's length, where an abstract follows it (one space between).
    title_end: Optional[int]


class DeleteCitation(NamedTuple):
    """The PMIDs an update file deletes from PubMed."""

    pmids: List[str]


class _Found(Exception):
    """The root's name is known: the rest of the head is not parsed."""


def is_medline_xml(head: bytes) -> bool:
    """Whether a file's first bytes name one of ROOTS: the DOCTYPE's name
    where there is one (read before its internal subset, so nothing it
    declares is parsed), else the first element's."""
    parser = expat.ParserCreate()
    found: List[str] = []

    def stop(name: str, *_) -> None:
        found.append(name)
        raise _Found

    parser.StartDoctypeDeclHandler = parser.StartElementHandler = stop
    try:
        parser.Parse(head, False)
    except (_Found, expat.ExpatError):
        pass
    return bool(found) and found[0] in ROOTS


def iter_medline(path: Union[str, Path]) -> Iterator[Union[Citation, DeleteCitation]]:
    """The citations and DeleteCitations of a MEDLINE/PubMed XML file,
    gzip-compressed or not, in file order; CorpusError naming the file and
    line for one that is not well-formed or not MEDLINE."""
    path = Path(path)
    reader = _Reader(path)
    try:
        with open_maybe_gzipped(path) as f:
            for chunk in iter(partial(f.read, _CHUNK), b""):
                reader.parser.Parse(chunk, False)
                yield from reader.take()
            reader.parser.Parse(b"", True)
            yield from reader.take()
    except expat.ExpatError as error:
        raise CorpusError(f"{path}, line {error.lineno}: not well-formed MEDLINE XML "
                          f"({expat.ErrorString(error.code)} at column {error.offset + 1})") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise CorpusError(f"{path}: cannot be read, cut short? ({type(error).__name__}: {error})") from None


class _Reader:
    """expat's handlers: the text of the elements a citation is made of,
    collected while they are open; the rest of the file passes by."""

    def __init__(self, path: Path):
        self.path = path
        self.parser = parser = expat.ParserCreate()
        parser.buffer_text = True  # a text node in one call, not one per line or entity
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.SkippedEntityHandler = self._undeclared
        parser.StartElementHandler, parser.EndElementHandler = self._start, self._end
        parser.CharacterDataHandler = self._text
        parser.StartDoctypeDeclHandler = self._doctype
        # A citation's text, as a line of the other formats: expat reads the
        # file in chunks, so the line cap of open_maybe_gzipped never meets it.
        self.most = input_limits().line_bytes
        self.collected = 0
        self.open: List[str] = []  # the names of the open elements, the root first
        self.ready: List[Union[Citation, DeleteCitation]] = []
        self.into: Optional[List[str]] = None  # the text being collected, and how deep its element is
        self.into_depth = 0
        self.math = 0  # MathML elements open within it
        self.deleted: List[List[str]] = []
        self._new_citation()

    def take(self) -> List[Union[Citation, DeleteCitation]]:
        ready, self.ready = self.ready, []
        return ready

    def _new_citation(self) -> None:
        self.collected = 0
        self.pmid: List[str] = []
        self.title: List[str] = []
        self.book_title: List[str] = []
        self.sections: List[Tuple[str, List[str]]] = []

    def _start(self, name: str, attributes: dict) -> None:
        self.open.append(name)
        if self.into is not None:
            self.math += name.rpartition(":")[2] == "math"
            return
        if len(self.open) == 1 and name not in ROOTS:
            raise CorpusError(f"{self.path}, line {self.parser.CurrentLineNumber}: the root element is <{name}>, "
                              f"not {', '.join(ROOTS)}: not MEDLINE/PubMed XML")
        if name not in _READ:  # most elements: authors, MeSH headings, references
            return
        parent, grandparent = self.open[-2], self.open[-3] if len(self.open) > 2 else ""
        if name == "PMID" and parent in _CITATIONS:
            self._collect(self.pmid)
        elif name == "PMID" and parent == "DeleteCitation":
            self.deleted.append([])
            self._collect(self.deleted[-1])
        elif name == "ArticleTitle" and parent in ("Article", "BookDocument"):
            self._collect(self.title)
        elif name == "BookTitle" and parent == "Book" and grandparent == "BookDocument":
            self._collect(self.book_title)
        elif name == "AbstractText" and parent == "Abstract" and grandparent in ("Article", "BookDocument"):
            self.sections.append((_one_line(attributes.get("Label", "")), []))
            self._collect(self.sections[-1][1])
        elif name in _CITATIONS:
            self._new_citation()

    def _collect(self, into: List[str]) -> None:
        self.into, self.into_depth = into, len(self.open)

    def _end(self, name: str) -> None:
        self.open.pop()
        if self.into is not None:
            if len(self.open) < self.into_depth:
                self.into = None
            elif self.math and name.rpartition(":")[2] == "math":
                self.math -= 1
        elif name in _CITATIONS:
            self.ready.append(self._citation())
        elif name == "DeleteCitation":
            self.ready.append(DeleteCitation([_one_line("".join(parts)) for parts in self.deleted]))
            self.deleted = []

    def _text(self, data: str) -> None:
        if self.into is not None and not self.math:
            self.collected += len(data)
            if self.collected > self.most:
                raise CorpusError(f"{self.path}, line {self.parser.CurrentLineNumber}: a citation's text passes "
                                  f"{self.most:,} characters (SPACY_BIOSYN_MAX_LINE_BYTES), where an abstract "
                                  "holds a few thousand: not a PubMed citation")
            self.into.append(data)

    def _doctype(self, name: str, system_id, public_id, has_internal_subset: bool) -> None:
        if has_internal_subset:  # NLM's files have none; one could give attributes defaults (a Label)
            raise CorpusError(f"{self.path}, line {self.parser.CurrentLineNumber}: the DOCTYPE declares "
                              "its own markup (an internal subset), which MEDLINE XML never does; none is read")

    def _citation(self) -> Citation:
        pmid = _one_line("".join(self.pmid))
        if not pmid:
            raise CorpusError(f"{self.path}, line {self.parser.CurrentLineNumber}: a citation without a PMID")
        title = _one_line("".join(self.title)) or _one_line("".join(self.book_title))
        sections = ((label, _one_line("".join(parts))) for label, parts in self.sections)
        abstract = " ".join(f"{label}: {text}" if label else text for label, text in sections if text)
        if title and abstract:
            return Citation(pmid, f"{title} {abstract}", len(title))
        return Citation(pmid, title or abstract, None)

    def _undeclared(self, name: str, _parameter: bool) -> None:
        raise CorpusError(f"{self.path}, line {self.parser.CurrentLineNumber}: the entity &{name}; is declared "
                          "nowhere in the file (its DTD is never read): not well-formed MEDLINE XML")


def _one_line(text: str) -> str:
    return _XML_WHITESPACE.sub(" ", text).strip()

