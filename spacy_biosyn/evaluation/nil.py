"""The NIL threshold chosen on dev abstracts: the score under which a
span gets no ID, for the best end-to-end linking or document F, and whether
the spans it leaves unlinked stay in doc.ents."""
from contextlib import contextmanager
from typing import Any, Collection, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence

from spacy.language import Language
from spacy.training import Example

from ..corpora.readers import PubTatorDocument
from ..encoders.base import encoder_label
from ..errors import CorpusError
from ..linking.links import link_score
from ..pipeline.configure import configure_linker
from .end_to_end import end_to_end_scores, linked_examples
from .nil_choice import NIL_METRICS, NIL_SPANS, check_enough_to_choose_on, threshold_candidates


def nil_threshold_sweep(
    examples: Sequence[Example], labels: Optional[Collection[str]] = None, metric: str = "link_f", steps: int = 40,
    id_namespaces: Optional[Mapping[str, str]] = None,
) -> List[tuple]:
    """End-to-end scores of linked Examples (linked with no nil_threshold)
    at thresholds below which `span._.cui` would be None: no threshold, then
    `steps` quantiles of the entities' best scores. Returns (threshold,
    scores) pairs, best `metric` first; of equal ones, the lowest threshold
    (it keeps the most links). IDs compare through `id_namespaces`. The
    Examples' `span._.cui` are left as found."""
    top_scores = [score for _, _, score in _linked_spans(examples)]
    if not top_scores:
        raise CorpusError("the pipeline linked no entity in these documents: there is no score to choose a NIL threshold from")
    results = []
    for threshold in [None, *threshold_candidates(top_scores, steps)]:
        with unlinked_below(examples, threshold):
            results.append((threshold, end_to_end_scores(examples, labels, id_namespaces=id_namespaces)))
    # stable: the earlier (lower) threshold wins a tie
    return sorted(results, key=lambda result: -result[1][metric])


def _linked_spans(examples: Sequence[Example]) -> List[tuple]:
    """(span, its cui, its link score) of every predicted span with a score."""
    linked = ((span, span._.cui, link_score(span._.parts)) for eg in examples for span in eg.predicted.ents if span._.parts)
    return [found for found in linked if found[2] is not None]


@contextmanager
def unlinked_below(examples: Sequence[Example], threshold: Optional[float]) -> Iterator[None]:
    """Within the block, the predicted spans of `examples` (linked with no
    threshold) whose link score is under `threshold` have span._.cui None,
    as the pipe would have left them; None changes nothing."""
    linked = _linked_spans(examples) if threshold is not None else []
    try:
        for span, cui, score in linked:
            if score < threshold:
                span._.cui = None
        yield
    finally:
        for span, cui, _ in linked:
            span._.cui = cui


class NilChoice(NamedTuple):
    threshold: float
    drop_nil: bool
    # end-to-end scores with no threshold, with the threshold, and with the
    # spans it leaves unlinked dropped
    unthresholded: Dict[str, Any]
    thresholded: Dict[str, Any]
    dropped: Dict[str, Any]


def choose_nil_threshold(
    nlp: Language,
    documents: Sequence[PubTatorDocument],
    label_map: Mapping[str, str],
    labels: Optional[Collection[str]] = None,
    metric: str = "link_f",
    nil_spans: str = "keep",
) -> NilChoice:
    """Set the linker's nil_threshold to the one of best end-to-end `metric`
    (link_f or doc_f) on dev PubTator documents, whose types `label_map`
    renames to the NER's labels, and its drop_nil: "drop", "keep", or
    "choose" (drop the spans left unlinked where that raises NER F). Set
    with `configure_linker`, so a saved pipeline keeps them, with the
    encoder the threshold holds for (nil_threshold_encoder)."""
    if metric not in NIL_METRICS:
        raise ValueError(f"metric {metric!r}: choose one of {', '.join(NIL_METRICS)}")
    if nil_spans not in NIL_SPANS:
        raise ValueError(f"nil_spans {nil_spans!r}: choose one of {', '.join(NIL_SPANS)}")
    check_enough_to_choose_on(documents, labels, label_map)
    linker = configure_linker(nlp, nil_threshold=None)
    examples = linked_examples(nlp, documents, label_map)
    namespaces = linker.engine.score_namespaces()
    results = nil_threshold_sweep(examples, labels, metric, id_namespaces=namespaces)
    (threshold, thresholded), unthresholded = results[0], next(scores for t, scores in results if t is None)
    dropped = end_to_end_scores(examples, labels, drop_below=threshold, id_namespaces=namespaces)
    drop_nil = nil_spans == "drop" or (nil_spans == "choose" and dropped["ents_f"] > thresholded["ents_f"])
    configure_linker(
        nlp, nil_threshold=threshold, drop_nil=drop_nil,
        nil_threshold_encoder=None if threshold is None else encoder_label(linker.engine.encoder),
    )
    return NilChoice(threshold, drop_nil, unthresholded, thresholded, dropped)
