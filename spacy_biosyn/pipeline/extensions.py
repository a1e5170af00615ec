"""The Doc and Span extensions the linker sets, typed on every read.

DocBin and `nlp.pipe(n_process=N)` carry extension values through msgpack,
which turns tuples, and so NamedTuples, into lists: a `Candidate` would come
back as `["breast cancer", [["D001943"]], 1.125]`. Each extension here keeps
its value in a storage extension (`biosyn_stored_<name>`) and rebuilds the
types whenever it is read, so a round trip changes nothing a user sees.
The list-valued ones read [] on a span nothing linked, as scispaCy's
`kb_ents` does; `cui`, `concept_ids`, `nil_reason` and `nil_best` read None. `ties`
holds a `Tie` (IDs, rule) per part whose best name several concepts share.
"""
from typing import Any, Callable, List, Optional

from spacy.tokens import Doc, Span

from ..preprocess.abbreviations import detect_abbreviations
from ..linking.links import Tie
from ..ty import Abbreviation, AbbreviationDetector, Candidate, LinkedPart


def _candidates(raw) -> List[Candidate]:
    return [Candidate(name, tuple(tuple(ids) for ids in concepts), score) for name, concepts, score in raw]


def _parts(raw) -> List[LinkedPart]:
    return [LinkedPart(text, _candidates(candidates)) for text, candidates in raw]


def _kb_ents(raw) -> List[tuple]:
    return [(cui, score) for cui, score in raw]


def _concept_ids(raw) -> List[tuple]:
    return [tuple(ids) for ids in raw]


def _ties(raw) -> List[Tie]:
    return [Tie(tuple(ids), rule) for ids, rule in raw]


def _abbreviations(raw) -> List[Abbreviation]:
    return [Abbreviation(*fields) for fields in raw]


# name -> (rebuilds the types, what an unset value reads as)
SPAN_EXTENSIONS = {
    "concept_ids": (_concept_ids, lambda: None),
    "kb_ents": (_kb_ents, list),
    "candidates": (_candidates, list),
    "parts": (_parts, list),
    "ties": (_ties, list),
    "nil_best": (tuple, lambda: None),
}
DOC_EXTENSIONS = {"biosyn_abbreviations": (_abbreviations, lambda: None)}


def _register(cls, name: str, convert: Callable[[Any], Any], unset: Callable[[], Any]) -> None:
    stored = f"biosyn_stored_{name}"
    if cls.has_extension(name):
        return
    cls.set_extension(stored, default=None)

    def getter(obj) -> Optional[Any]:
        raw = getattr(obj._, stored)
        return unset() if raw is None else convert(raw)

    def setter(obj, value) -> None:
        setattr(obj._, stored, value)

    cls.set_extension(name, getter=getter, setter=setter)


def register_extensions() -> None:
    """Register every extension once; importing the component or the
    evaluation module does it."""
    for name in ("cui", "nil_reason"):
        if not Span.has_extension(name):
            Span.set_extension(name, default=None)
    for name, (convert, unset) in SPAN_EXTENSIONS.items():
        _register(Span, name, convert, unset)
    for name, (convert, unset) in DOC_EXTENSIONS.items():
        _register(Doc, name, convert, unset)


def doc_abbreviations(doc: Doc, detector: AbbreviationDetector) -> List[Abbreviation]:
    """The doc's abbreviations as an earlier component found them
    (`doc._.biosyn_abbreviations`), else as `detector` finds them now: Ab3P
    runs once per doc, however many components read its pairs."""
    found = doc._.biosyn_abbreviations
    return detect_abbreviations(detector, doc) if found is None else found
