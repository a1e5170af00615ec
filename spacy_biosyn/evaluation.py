"""Acc@k under BioSyn's protocol, so numbers compare with the published ones.

A query's mention field may hold several mentions joined by `|` or `+` (the
parts of a composite mention); each is ranked on its own, and the query is
right at k only when every part has, among its k best names, a name sharing a
CUI with the gold field. As in BioSyn's evaluation, the gold field's IDs form
one set that each part is matched against. IDs are compared without a
namespace prefix: the raw NCBI corpus writes OMIM:217000 where the
dictionaries write 217000.
"""
from collections import Counter
from typing import Any, Callable, Collection, Dict, Iterable, List, NamedTuple, Optional, Sequence

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example
from tqdm import tqdm

from .corpus import NCBI_LABELS, PubTatorDocument, Query, pubtator_to_doc
from .encoders.base import encoder_label
from .errors import CorpusError
from .kb.dictionary import bare_id, split_cuis
from .kb.linker import Candidate
from .names import PIPE_NAME
from .pipeline.annotate import is_linked, link_score
from .pipeline.extensions import register_extensions

register_extensions()  # scores read span._.cui, set by the linker or by hand

Ranker = Callable[..., List[List[Candidate]]]

# Gold CUI fields of mentions that cannot be scored (CUI-less), as BioSyn drops them.
UNSCORED_CUIS = {"", "-1"}


def evaluate(
    rank: Ranker, queries: Sequence[Query], max_k: int = 5, contexts: Optional[Sequence[Any]] = None
) -> Dict[str, float]:
    """Acc@k of a ranker on `.concept` queries, whose mention fields hold
    the parts of a composite already split (by BioSyn, with the gold CUIs).
    CUI-less queries (-1) are not scored, as in `link_scores`; their number
    is reported. With `contexts` (one per query, such as the re-ranker's
    MentionInContext), the ranker is called as rank(texts, contexts), each
    part with its query's context. Returns fractions, {"link_acc_1": ...,
    "link_acc_<max_k>": ..., "n": ..., "unscored": ...}."""
    if contexts is not None and len(contexts) != len(queries):
        raise ValueError(f"{len(queries)} queries but {len(contexts)} contexts")
    scored = [i for i, q in enumerate(queries) if q.cui.strip() not in UNSCORED_CUIS]
    parts = [queries[i].mention.replace("+", "|").split("|") for i in scored]
    texts = [p for query_parts in parts for p in query_parts]
    if contexts is None:
        ranked = iter(rank(texts))
    else:
        ranked = iter(rank(texts, [contexts[i] for i, query_parts in zip(scored, parts) for _ in query_parts]))
    predictions = [[next(ranked) for _ in query_parts] for query_parts in parts]
    metrics = accuracy(predictions, [queries[i].cui for i in scored], max_k)
    metrics["unscored"] = len(queries) - len(scored)
    return metrics


def evaluate_examples(
    pipe: Callable[[Iterable[Doc]], Iterable[Doc]], examples: Sequence[Example], max_k: int = 5,
    labels: Optional[Collection[str]] = None,
) -> Dict[str, float]:
    """Link the predicted docs of `examples` in place with `pipe` (a
    component's or a pipeline's), then score them (`link_scores`)."""
    for _ in pipe(eg.predicted for eg in examples):
        pass
    return link_scores(examples, max_k, labels)


def link_scores(
    examples: Iterable[Example], max_k: int = 5, labels: Optional[Collection[str]] = None
) -> Dict[str, float]:
    """Acc@k and cui_acc (`link_acc_<k>`, `link_cui_acc`) of linked Examples: the reference's entities (of
    `labels`, if given) carry their gold CUI fields as kb_id
    (corpus.pubtator_to_examples), the predicted doc's entities the
    pipeline's links. A gold entity without a predicted entity at the same
    offsets is a miss at every k. cui_acc is the share whose `span._.cui`,
    the ID users read, is a gold ID (for a composite, every part's ID);
    CUI-less entities are not scored, and their number is reported; with
    nothing to score, only the counts are."""
    parts, golds, cuis, unscored = [], [], [], 0
    for example in examples:
        predicted = {(s.start_char, s.end_char): s for s in example.predicted.ents}
        for gold in example.reference.ents:
            if labels is not None and gold.label_ not in labels:
                continue
            if gold.kb_id_ in UNSCORED_CUIS:
                unscored += 1
                continue
            span = predicted.get((gold.start_char, gold.end_char))
            parts.append([part.candidates for part in span._.parts or []] if span is not None else [])
            cuis.append(span._.cui if span is not None else None)
            golds.append(gold.kb_id_)
    if not golds:
        return {"n": 0, "unscored": unscored}
    metrics = accuracy(parts, golds, max_k)
    hits = sum(cui_is_gold(cui, gold) for cui, gold in zip(cuis, golds))
    metrics.update(link_cui_acc=hits / len(golds), unscored=unscored)
    return metrics


def cui_is_gold(cui: Optional[str], gold_field: str) -> bool:
    """Whether a span._.cui is right against a gold CUI field: every ID it
    names (a composite's, joined by '|') is one of the gold IDs, namespaces
    aside; None never is."""
    return cui is not None and _all_gold(cui.split("|"), _gold_ids(gold_field))


def _gold_ids(gold_field: str) -> set:
    """The IDs of a gold CUI field, without namespace."""
    return {bare_id(cui) for cui in split_cuis(gold_field)}


def _all_gold(ids: Iterable[str], gold: set) -> bool:
    return all(bare_id(cui) in gold for cui in ids)


def accuracy(
    predictions: Sequence[List[List[Candidate]]], golds: Sequence[str], max_k: int
) -> Dict[str, float]:
    """Acc@1..max_k (fractions, keyed by `acc_key`) from each mention's
    per-part candidate lists and its gold CUI field. A mention with no parts
    (only punctuation) is a miss."""
    if not predictions:
        raise ValueError("no mentions to evaluate")
    hits = [0] * max_k
    for parts, gold_field in zip(predictions, golds):
        rank = hit_rank(parts, gold_field)
        for k in range(1, max_k + 1):
            hits[k - 1] += rank is not None and rank < k
    metrics: Dict[str, float] = {acc_key(k): hits[k - 1] / len(predictions) for k in range(1, max_k + 1)}
    metrics["n"] = len(predictions)
    return metrics


def acc_key(k: int) -> str:
    """The score key of Acc@k, named as the component's scores are (spaCy's
    keys have no Acc@k)."""
    return f"link_acc_{k}"


def hit_rank(parts: List[List[Candidate]], gold_field: str) -> Optional[int]:
    """The smallest k - 1 at which a mention is right (every part has a
    gold CUI among its k best), or None if no k is."""
    gold = _gold_ids(gold_field)
    first_hits = [_first_hit(candidates, gold) for candidates in parts]
    if not parts or None in first_hits:
        return None
    return max(first_hits)


def _first_hit(candidates: List[Candidate], gold: set):
    """Rank (0-based) of the first candidate with a gold CUI, or None."""
    for rank, candidate in enumerate(candidates):
        if gold.intersection(map(bare_id, candidate.cuis)):
            return rank
    return None


def end_to_end_scores(
    examples: Iterable[Example], labels: Optional[Collection[str]] = None, drop_below: Optional[float] = None
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
    """
    wanted = None if labels is None else {label.casefold() for label in labels}
    counts: Dict[str, Counter] = {}
    n_docs = 0
    for example in examples:
        n_docs += 1
        gold = _entities(example.reference, wanted, gold=True)
        predicted = _entities(example.predicted, wanted, gold=False, drop_below=drop_below)
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
            c["link_tp"] += sum(
                k in scored and _all_gold(cui.split("|"), {bare_id(i) for i in g[k]}) for k, cui in linked.items()
            )
            c["link_pred"] += len(linked)
            c["link_gold"] += len(scored)
            doc_gold = {bare_id(cui) for ids in g.values() for cui in ids}
            doc_predicted = {bare_id(part) for cui in p.values() if cui for part in cui.split("|")}
            c["doc_tp"] += len(doc_gold & doc_predicted)
            c["doc_pred"] += len(doc_predicted)
            c["doc_gold"] += len(doc_gold)
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


def nil_threshold_sweep(
    examples: Sequence[Example], labels: Optional[Collection[str]] = None, metric: str = "link_f", steps: int = 40
) -> List[tuple]:
    """End-to-end scores of linked Examples (linked with no nil_threshold)
    at thresholds below which `span._.cui` would be None: no threshold, then
    `steps` quantiles of the entities' best scores. Returns (threshold,
    scores) pairs, best `metric` first; of equal ones, the lowest threshold
    (it keeps the most links). The Examples' `span._.cui` are left as found."""
    linked = [
        (span, span._.cui, link_score(span._.parts))
        for eg in examples for span in eg.predicted.ents if span._.parts and link_score(span._.parts) is not None
    ]
    # Rounded: exact matches all score 1 + lambda up to float noise, and a
    # threshold half a unit of the last place below a score keeps all its ties.
    top_scores = sorted(round(score, 4) for _, _, score in linked)
    if not top_scores:
        raise CorpusError("the pipeline linked no entity in these documents: there is no score to choose a NIL threshold from")
    quantiles = {round(top_scores[q * (len(top_scores) - 1) // steps] - 5e-5, 5) for q in range(1, steps)}
    results = []
    try:
        for threshold in [None, *sorted(quantiles)]:
            for span, cui, score in linked:
                span._.cui = cui if threshold is None or score >= threshold else None
            results.append((threshold, end_to_end_scores(examples, labels)))
    finally:
        for span, cui, _ in linked:
            span._.cui = cui
    # stable: the earlier (lower) threshold wins a tie
    return sorted(results, key=lambda result: -result[1][metric])


def linked_examples(nlp: Language, documents: Sequence[PubTatorDocument], progress: bool = True) -> List[Example]:
    """The pipeline's doc of each PubTator document's raw text beside its
    gold spans, typed as the NER types them (NCBI's four types: Disease)."""
    texts = tqdm((document.text for document in documents), total=len(documents), desc="Linking", unit="doc",
                 disable=not progress, leave=False)
    return [
        Example(doc, pubtator_to_doc(nlp, document, label_map=NCBI_LABELS))
        for doc, document in zip(nlp.pipe(texts), documents)
    ]


def predicted_examples(
    nlp: Language, predictions: Iterable[PubTatorDocument], documents: Sequence[PubTatorDocument]
) -> List[Example]:
    """A pipeline's output saved as PubTator (link-corpus --output-format
    pubtator) beside the gold documents, for `end_to_end_scores`: each
    annotation is a predicted entity, its ID `span._.cui` (none when the
    field is empty: NIL). Typed as `linked_examples` types them."""
    predicted = {}
    for document in predictions:
        predicted.setdefault(document.doc_id, document)
    examples = []
    for document in documents:
        prediction = predicted.get(document.doc_id)
        if prediction is None:
            raise CorpusError(f"document {document.doc_id}: not among the predictions")
        if prediction.text != document.text:
            raise CorpusError(f"document {document.doc_id}: the predictions hold another text than the gold document")
        doc = pubtator_to_doc(nlp, prediction, label_map=NCBI_LABELS)
        for span in doc.ents:
            span._.cui = span.kb_id_ or None
        examples.append(Example(doc, pubtator_to_doc(nlp, document, label_map=NCBI_LABELS)))
    return examples


NIL_METRICS = ("link_f", "doc_f")
# Fewer gold spans or documents than this choose a threshold from noise; none
# at all printed zeros and saved nil_threshold = null over a tuned value.
MIN_NIL_DOCUMENTS, MIN_NIL_GOLD_SPANS = 2, 10
NIL_SPANS = ("keep", "drop", "choose")


class NilChoice(NamedTuple):
    threshold: float
    drop_nil: bool
    # end-to-end scores with no threshold, with the threshold, and with the
    # spans it leaves unlinked dropped
    unthresholded: Dict[str, Any]
    thresholded: Dict[str, Any]
    dropped: Dict[str, Any]


def _check_enough_to_choose_on(documents: Sequence[PubTatorDocument], labels: Optional[Collection[str]]) -> None:
    spans = sum(1 for d in documents for a in d.annotations if labels is None or NCBI_LABELS.get(a.label, a.label) in labels)
    if len(documents) < MIN_NIL_DOCUMENTS or spans < MIN_NIL_GOLD_SPANS:
        scored = f" of the labels {', '.join(sorted(labels))}" if labels else ""
        raise CorpusError(
            f"{len(documents)} document(s) with {spans} gold span(s){scored}: too few to choose a NIL threshold on "
            f"(at least {MIN_NIL_DOCUMENTS} documents and {MIN_NIL_GOLD_SPANS} gold spans); give annotated dev abstracts"
        )


def choose_nil_threshold(
    nlp: Language,
    documents: Sequence[PubTatorDocument],
    labels: Optional[Collection[str]] = None,
    metric: str = "link_f",
    nil_spans: str = "keep",
) -> NilChoice:
    """Set the linker's nil_threshold to the one of best end-to-end `metric`
    (link_f or doc_f) on dev PubTator documents, and its drop_nil: "drop",
    "keep", or "choose" (drop the spans left unlinked where that raises
    NER F). Both go into the pipe's config too, which is what spacy.load
    builds it from, so a saved pipeline keeps them, with the encoder the
    threshold holds for (nil_threshold_encoder)."""
    if metric not in NIL_METRICS:
        raise ValueError(f"metric {metric!r}: choose one of {', '.join(NIL_METRICS)}")
    if nil_spans not in NIL_SPANS:
        raise ValueError(f"nil_spans {nil_spans!r}: choose one of {', '.join(NIL_SPANS)}")
    _check_enough_to_choose_on(documents, labels)
    linker = nlp.get_pipe(PIPE_NAME)
    linker.nil_threshold = None
    examples = linked_examples(nlp, documents)
    results = nil_threshold_sweep(examples, labels, metric)
    (threshold, thresholded), unthresholded = results[0], next(scores for t, scores in results if t is None)
    dropped = end_to_end_scores(examples, labels, drop_below=threshold)
    drop_nil = nil_spans == "drop" or (nil_spans == "choose" and dropped["ents_f"] > thresholded["ents_f"])
    linker.nil_threshold, linker.drop_nil = threshold, drop_nil
    nlp.get_pipe_config(PIPE_NAME).update(
        nil_threshold=threshold, nil_threshold_encoder=None if threshold is None else encoder_label(linker.routes.encoder),
        drop_nil=drop_nil,
    )
    return NilChoice(threshold, drop_nil, unthresholded, thresholded, dropped)
