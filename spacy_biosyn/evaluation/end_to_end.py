"""Raw text in, IDs out: a whole pipeline's entities and links against a
corpus's gold entities, strict and lenient NER, linking and document-level
IDs (BioCreative V CDR's measure), overall and per label."""
from collections import Counter
from typing import Collection, Dict, Iterable, List, Mapping, Optional, Sequence

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from tqdm import tqdm

from ..corpora.docs import pubtator_to_doc
from ..corpora.pubtator_form import pubtator_form
from ..corpora.readers import PubTatorDocument
from ..errors import CorpusError
from ..kb.ids import split_cuis
from ..kb.namespaces import UNSCORED_CUIS, ConceptKeys, cui_is_gold
from ..linking.links import is_linked
from ..pipeline.accuracy import check_ids_meet
from ..pipeline.extensions import register_extensions

register_extensions()  # scores read span._.cui, set by the linker or by hand


def end_to_end_scores(
    examples: Iterable[Example], labels: Optional[Collection[str]] = None, drop_below: Optional[float] = None,
    id_namespaces: Optional[Mapping[str, str]] = None,
) -> Dict:
    """Raw text in, IDs out: how a whole pipeline's entities and links
    compare with the reference's gold entities (kb_id = gold IDs), as
    fractions, overall ("ents_p" ... "doc_f") and per label ("per_type"),
    keyed as spaCy's NER scores are where spaCy has the measure.

    - ents: strict, a predicted entity with the exact offsets and type of a
      gold one (spaCy's ents_p/r/f);
    - ents_lenient: a predicted entity that overlaps a gold one of its type
      (precision over predictions, recall over gold entities), so that
      boundary errors show as the gap to strict;
    - link: strict, also with `span._.cui` a gold ID (every part of a
      composite); CUI-less gold entities, and predictions at their offsets,
      are left out, and so are predictions without a cui (NIL);
    - doc: the set of IDs per document (the measure of BioCreative V CDR's
      disease normalization task), micro-averaged over documents.
    Labels compare case-insensitively: scispaCy's NER says DISEASE.
    `drop_below` scores the predictions as `drop_nil` would leave them:
    linked entities whose link score is under it are not predicted.
    IDs compare through `id_namespaces`, as the scores of `accuracy` do;
    where none meets and their forms differ, MismatchError says so.
    """
    keys = ConceptKeys(id_namespaces)
    wanted = None if labels is None else {label.casefold() for label in labels}
    counts: Dict[str, Counter] = {}
    n_docs = 0
    gold_ids, predicted_ids = [], []
    for example in examples:
        n_docs += 1
        gold = _entities(example.reference, wanted, gold=True)
        predicted = _entities(example.predicted, wanted, gold=False, drop_below=drop_below)
        gold_ids.extend(cui for ids in gold.values() for cui in ids)
        predicted_ids.extend(part for cui in predicted.values() if cui for part in cui.split("|"))
        # every ID of the linked concepts: a gold OMIM ID of a concept reported by its MeSH ID is one form met
        predicted_ids.extend(cui for span in example.predicted.ents for ids in span._.concept_ids or () for cui in ids)
        for label in {key[2] for key in gold} | {key[2] for key in predicted} | {"all"}:
            g = {k: v for k, v in gold.items() if label in ("all", k[2])}
            p = {k: v for k, v in predicted.items() if label in ("all", k[2])}
            c = counts.setdefault(label, Counter())
            c["ents_tp"] += len(g.keys() & p.keys())
            c["ents_pred"] += len(p)
            c["ents_gold"] += len(g)
            c["ents_lenient_tp_pred"] += sum(any(_overlap(k, key) for key in g) for k in p)
            c["ents_lenient_tp_gold"] += sum(any(_overlap(k, key) for key in p) for k in g)
            c["ents_lenient_pred"] += len(p)
            c["ents_lenient_gold"] += len(g)
            scored = {k for k, ids in g.items() if ids}
            linked = {k: cui for k, cui in p.items() if cui is not None and not (k in g and not g[k])}
            # Strict, as cui_acc: the span's IDs are its gold IDs, every part of a composite.
            c["link_tp"] += sum(k in scored and cui_is_gold(cui, "|".join(g[k]), keys) for k, cui in linked.items())
            c["link_pred"] += len(linked)
            c["link_gold"] += len(scored)
            doc_gold = {keys(cui) for ids in g.values() for cui in ids}
            doc_predicted = {keys(part) for cui in p.values() if cui for part in cui.split("|")}
            c["doc_tp"] += len(doc_gold & doc_predicted)
            c["doc_pred"] += len(doc_predicted)
            c["doc_gold"] += len(doc_gold)
    if not counts.get("all", Counter())["doc_tp"]:
        check_ids_meet(gold_ids, predicted_ids, keys)
    scores = _prf(counts.get("all", Counter()))
    scores["n_docs"] = n_docs
    scores["per_type"] = {label: _prf(c) for label, c in sorted(counts.items()) if label != "all"}
    return scores


def _entities(doc: Doc, wanted: Optional[set], gold: bool, drop_below: Optional[float] = None) -> Dict[tuple, object]:
    """(start, end, label) -> the gold IDs (a tuple; empty when CUI-less), or
    the predicted cui."""
    found = {}
    for span in doc.ents:
        label = span.label_.casefold()
        if drop_below is not None and span._.parts and not is_linked(span._.parts, drop_below):
            continue
        if wanted is None or label in wanted:
            key = (span.start_char, span.end_char, label)
            if gold:
                found[key] = () if span.kb_id_ in UNSCORED_CUIS else split_cuis(span.kb_id_)
            else:
                found[key] = span._.cui
    return found


def _overlap(a: tuple, b: tuple) -> bool:
    """Two (start, end, label) entities of one label share a character."""
    return a[2] == b[2] and a[0] < b[1] and b[0] < a[1]


# Metric groups of end_to_end_scores, in the order tables print them.
END_TO_END_TASKS = ("ents", "ents_lenient", "link", "doc")


def _prf(counts: Counter) -> Dict[str, float]:
    scores = {}
    for task in END_TO_END_TASKS:
        pred, gold = counts[f"{task}_pred"], counts[f"{task}_gold"]
        # Lenient matching is not one-to-one: a long prediction can cover two gold entities.
        tp_pred, tp_gold = (
            (counts[f"{task}_tp_pred"], counts[f"{task}_tp_gold"]) if task == "ents_lenient" else (counts[f"{task}_tp"],) * 2
        )
        p = tp_pred / pred if pred else 0.0
        r = tp_gold / gold if gold else 0.0
        scores.update({f"{task}_p": p, f"{task}_r": r, f"{task}_f": 2 * p * r / (p + r) if p + r else 0.0})
    return scores


def linked_examples(
    nlp: Language, documents: Sequence[PubTatorDocument], label_map: Mapping[str, str], progress: bool = True
) -> List[Example]:
    """The pipeline's doc of each PubTator document's raw text beside its
    gold spans, whose types `label_map` renames to the labels the NER
    gives (corpus.NCBI_LABELS: NCBI's four types as Disease)."""
    texts = tqdm((document.text for document in documents), total=len(documents), desc="Linking", unit="doc",
                 disable=not progress, leave=False)
    return [
        Example(doc, pubtator_to_doc(nlp, document, label_map=label_map))
        for doc, document in zip(nlp.pipe(texts), documents)
    ]


def predicted_examples(
    nlp: Language, predictions: Iterable[PubTatorDocument], documents: Sequence[PubTatorDocument],
    label_map: Mapping[str, str],
) -> List[Example]:
    """A pipeline's output saved as PubTator (link-corpus --output-format
    pubtator) beside the gold documents, for `end_to_end_scores`: each
    annotation is a predicted entity, its ID `span._.cui` (none when the
    field is empty or -1: NIL). Typed as `linked_examples` types them. The
    predictions hold the gold text as PubTator carries it (pubtator_form:
    line breaks as spaces), and the gold spans alike."""
    predicted = {}
    for document in predictions:
        predicted.setdefault(document.doc_id, document)
    examples = []
    for document in documents:
        prediction = predicted.get(document.doc_id)
        if prediction is None:
            raise CorpusError(f"document {document.doc_id}: not among the predictions")
        if prediction.text != document.text:
            document = _as_written(document)
        if prediction.text != document.text:
            raise CorpusError(f"document {document.doc_id}: the predictions hold another text than the gold document")
        doc = pubtator_to_doc(nlp, prediction, label_map=label_map)
        for span in doc.ents:
            span._.cui = None if span.kb_id_ in UNSCORED_CUIS else span.kb_id_
        examples.append(Example(doc, pubtator_to_doc(nlp, document, label_map=label_map)))
    return examples


def _as_written(document: PubTatorDocument) -> PubTatorDocument:
    """A gold document as link-corpus writes its text in PubTator."""
    form = pubtator_form(document.text, [(a.start, a.end) for a in document.annotations], document.title_end)
    text = form.text
    annotations = [a._replace(start=span[0], end=span[1], text=text[span[0]:span[1]])
                   for a, span in zip(document.annotations, form.spans) if span is not None]
    return document._replace(text=text, annotations=annotations)
