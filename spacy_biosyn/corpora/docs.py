"""Annotated documents as spaCy Docs: a PubTator document's gold entities
as doc.ents (with their IDs as kb_id), as NER training data, and as
Examples for scoring a linker on gold spans."""
from bisect import bisect_left, bisect_right
from typing import Collection, Iterable, List, Mapping, Optional

from spacy.language import Language
from spacy.tokens import Doc, DocBin, Span
from spacy.training import Example
from spacy.util import filter_spans

from .readers import PubTatorDocument


def pubtator_to_doc(
    nlp: Language,
    document: PubTatorDocument,
    labels: Optional[Collection[str]] = None,
    label_map: Optional[Mapping[str, str]] = None,
) -> Doc:
    """A Doc whose doc.ents are the gold annotations (of `labels`, if given),
    each with its annotation type (renamed by `label_map`) as label and its
    gold CUI field as kb_id ("-1" for a CUI-less mention). Tokens are split
    wherever an annotation starts or ends inside one, so every span has
    exactly its gold text ("BRCA1-associated"); of overlapping annotations
    the longest is kept (spaCy's filter_spans)."""
    annotations = [a for a in document.annotations if labels is None or a.label in labels]
    label_map = label_map or {}
    cuts = sorted({offset for a in annotations for offset in (a.start, a.end)})
    words, spaces = [], []
    for token in nlp.make_doc(document.text):
        start, end = token.idx, token.idx + len(token)
        edges = [start, *cuts[bisect_right(cuts, start) : bisect_left(cuts, end)], end]
        words.extend(document.text[a:b] for a, b in zip(edges, edges[1:]))
        spaces.extend([False] * (len(edges) - 2) + [bool(token.whitespace_)])
    doc = Doc(nlp.vocab, words=words, spaces=spaces)
    spans = [
        doc.char_span(a.start, a.end, label=label_map.get(a.label, a.label), kb_id=a.cui, alignment_mode="expand")
        for a in annotations
    ]
    doc.ents = filter_spans([span for span in spans if span is not None])
    return doc


def pubtator_to_docbin(
    nlp: Language, documents: Iterable[PubTatorDocument], label_map: Optional[Mapping[str, str]] = None
) -> DocBin:
    """NER training data: each document as a Doc of its gold entities,
    labels renamed by `label_map`, gold IDs kept as kb_id."""
    return DocBin(docs=(pubtator_to_doc(nlp, document, label_map=label_map) for document in documents))


def pubtator_to_examples(
    nlp: Language, documents: Iterable[PubTatorDocument], labels: Optional[Collection[str]] = None
) -> List[Example]:
    """Examples for linking with gold spans: the reference is
    `pubtator_to_doc`'s doc, the predicted doc has the same entities without
    their IDs, for the linker to fill in (`nlp.evaluate`, `link_scores`)."""
    examples = []
    for document in documents:
        reference = pubtator_to_doc(nlp, document, labels)
        examples.append(Example(unlinked_copy(reference), reference))
    return examples


def unlinked_copy(reference: Doc) -> Doc:
    """A copy of `reference` whose entities have no IDs: what a linker fills in."""
    predicted = reference.copy()
    predicted.ents = [Span(predicted, e.start, e.end, label=e.label) for e in reference.ents]
    return predicted
