"""Choosing a NIL threshold, without spaCy: what tune-nil may be asked
(NIL_METRICS, NIL_SPANS), the thresholds it tries, and the choice on gold
spans by the linking engine alone (no NER): each annotated mention linked
in its document, as `link-corpus --gold-spans` links it (abbreviations,
composites, the document's choice), with no threshold; then link P, R and
F at thresholds below which a mention is left NIL. Every gold span is scored: one whose
concept the vocabulary lacks is a false link when linked and a miss when
left NIL, so a threshold pays where the vocabulary is open (measured in
benchmarks/absent_concepts.py); CUI-less spans ("-1") are not scored."""
from typing import Collection, Dict, List, Mapping, NamedTuple, Optional, Sequence

from tqdm import tqdm

from ..corpora.readers import PubTatorDocument
from ..errors import BiosynError, CorpusError
from ..kb.namespaces import UNSCORED_CUIS, ConceptKeys, cui_is_gold
from ..linking.engine import LinkingEngine
from ..linking.links import link_score
from ..linking.mentions import Mention, MentionBatch

NIL_METRICS = ("link_f", "doc_f")
NIL_SPANS = ("keep", "drop", "choose")
# Fewer gold spans or documents than this choose a threshold from noise; none
# at all printed zeros and saved nil_threshold = null over a tuned value.
MIN_NIL_DOCUMENTS, MIN_NIL_GOLD_SPANS = 2, 10
# Documents linked in one engine call: the progress bar's step.
DOCUMENTS_PER_BATCH = 64


class GoldSpanLink(NamedTuple):
    gold: str  # the gold CUI field
    cui: Optional[str]  # what the span says with no threshold
    score: Optional[float]  # its link score; None where NIL anyway


class GoldSpanChoice(NamedTuple):
    threshold: Optional[float]
    unthresholded: Dict[str, float]
    thresholded: Dict[str, float]


def threshold_candidates(scores: Sequence[float], steps: int = 40) -> List[float]:
    """`steps` quantiles of the best link scores, each just below its
    score. Rounded: exact matches all score 1.0 up to float noise, and a
    threshold half a unit of the last place below a score keeps its ties."""
    top = sorted(round(score, 4) for score in scores)
    return sorted({round(top[q * (len(top) - 1) // steps] - 5e-5, 5) for q in range(1, steps)})


def check_enough_to_choose_on(
    documents: Sequence[PubTatorDocument], labels: Optional[Collection[str]], label_map: Mapping[str, str]
) -> None:
    spans = sum(1 for d in documents for a in d.annotations if labels is None or label_map.get(a.label, a.label) in labels)
    if len(documents) < MIN_NIL_DOCUMENTS or spans < MIN_NIL_GOLD_SPANS:
        scored = f" of the labels {', '.join(sorted(labels))}" if labels else ""
        raise CorpusError(
            f"{len(documents)} document(s) with {spans} gold span(s){scored}: too few to choose a NIL threshold on "
            f"(at least {MIN_NIL_DOCUMENTS} documents and {MIN_NIL_GOLD_SPANS} gold spans); give annotated dev abstracts"
        )


def link_gold_spans(engine: LinkingEngine, documents: Sequence[PubTatorDocument], label_map: Mapping[str, str],
                    labels: Optional[Collection[str]] = None) -> List[GoldSpanLink]:
    """Each scored gold span (of `labels`, after `label_map`) linked in its
    document by the engine, whose nil_threshold the caller has set."""
    detector = engine.abbreviation_detector
    if getattr(detector, "reads_doc", False):
        raise BiosynError("the linker's abbreviation detector reads a spaCy Doc: choose the threshold on the "
                          "pipeline's own entities (tune-nil without --gold-spans)")
    linked: List[GoldSpanLink] = []
    for start in tqdm(range(0, len(documents), DOCUMENTS_PER_BATCH), desc="linking gold spans", unit="batch",
                      leave=False, disable=len(documents) <= DOCUMENTS_PER_BATCH):
        batch, golds = _batch(documents[start:start + DOCUMENTS_PER_BATCH], label_map, labels, detector)
        engine.link_batch(batch)
        for mention, gold in zip(batch.mentions, golds):
            links = mention.links
            cui = links.cui if links is not None else None
            linked.append(GoldSpanLink(gold, cui, link_score(links.parts) if cui else None))
    return linked


def _batch(documents: Sequence[PubTatorDocument], label_map: Mapping[str, str], labels: Optional[Collection[str]],
           detector) -> "tuple[MentionBatch, List[str]]":
    texts, abbreviations, mentions, golds = [], [], [], []
    for number, document in enumerate(documents):
        spans = [(a, label_map.get(a.label, a.label)) for a in document.annotations if a.cui.strip() not in UNSCORED_CUIS]
        spans = [(a, label) for a, label in spans if labels is None or label in labels]
        texts.append(document.text)
        # Ab3P is only worth its time on documents with spans to link, as the pipe runs it.
        abbreviations.append(detector(document.text) if detector is not None and spans else [])
        for annotation, label in spans:
            mentions.append(Mention(number, document.text[annotation.start:annotation.end], annotation.start,
                                    annotation.end, label))
            golds.append(annotation.cui)
    return MentionBatch(texts, abbreviations, mentions), golds


def gold_span_scores(linked: Sequence[GoldSpanLink], threshold: Optional[float], keys: ConceptKeys) -> Dict[str, float]:
    """link P, R and F of the gold spans with those scored under `threshold` left NIL."""
    kept = [span for span in linked if span.cui is not None and (threshold is None or span.score >= threshold)]
    right = sum(cui_is_gold(span.cui, span.gold, keys) for span in kept)
    precision = right / len(kept) if kept else 0.0
    recall = right / len(linked) if linked else 0.0
    f = 2 * precision * recall / (precision + recall) if right else 0.0
    return {"link_p": precision, "link_r": recall, "link_f": f, "nil": 1 - len(kept) / len(linked) if linked else 0.0}


def choose_on_gold_spans(engine: LinkingEngine, documents: Sequence[PubTatorDocument], label_map: Mapping[str, str],
                         labels: Optional[Collection[str]] = None) -> GoldSpanChoice:
    """The threshold of best link F on the documents' gold spans (of equal
    ones, the lowest: it keeps the most links); the engine is left with
    nil_threshold None, as it linked them."""
    check_enough_to_choose_on(documents, labels, label_map)
    engine.configure({"nil_threshold": None})
    linked = link_gold_spans(engine, documents, label_map, labels)
    if not linked:
        raise CorpusError("no gold span with an ID (of these labels) to choose a NIL threshold on")
    keys = ConceptKeys(engine.score_namespaces())
    scored = [(threshold, gold_span_scores(linked, threshold, keys))
              for threshold in [None, *threshold_candidates([s.score for s in linked if s.score is not None] or [0.0])]]
    threshold, best = max(scored, key=lambda result: result[1]["link_f"])  # max keeps the first of equals
    return GoldSpanChoice(threshold, scored[0][1], best)
