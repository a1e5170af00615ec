"""What predict decided of each mention, written onto its span:
span._.parts, candidates, kb_ents, cui, concept_ids, nil_reason, ties and nil_best, and `span.kb_id_`;
entities left without an ID are dropped from doc.ents where drop_nil says
so. Nothing is decided here."""
from typing import Sequence

from spacy.tokens import Doc, Span

from ..linking.links import SpanLinks
from ..names import NIL


def annotate_span(span: Span, links: SpanLinks) -> None:
    """The span's linking attributes, as the engine says them."""
    span._.parts = links.parts
    span._.candidates = links.candidates
    span._.kb_ents = links.kb_ents
    span._.cui = links.cui
    span._.concept_ids = links.concept_ids
    span._.nil_reason = links.nil_reason
    span._.ties = list(links.ties)
    span._.nil_best = links.nil_best


def annotate_docs(docs: Sequence[Doc], links: Sequence, *, drop_nil: bool, set_kb_id: bool) -> None:
    """Annotate each doc's spans from `links` (component.DocLinks, one per
    doc); a span no linker served is left as it came."""
    for doc, doc_links in zip(docs, links):
        doc._.biosyn_abbreviations = doc_links.abbreviations
        ents = list(doc_links.spans)
        dropped = set()
        for i, (span, said) in enumerate(zip(ents, doc_links.links)):
            if said is None:
                continue
            annotate_span(span, said)
            if drop_nil and said.cui is None:
                dropped.add(i)
            elif set_kb_id:
                # Extension values are keyed by offsets, so the new span keeps them.
                ents[i] = Span(doc, span.start, span.end, label=span.label, kb_id=said.cui or NIL)
        if set_kb_id or dropped:
            doc.ents = [span for i, span in enumerate(ents) if i not in dropped]
