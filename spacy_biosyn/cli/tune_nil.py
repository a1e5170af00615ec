"""`tune-nil`: the NIL threshold chosen on dev abstracts."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ..errors import CorpusError
from .common import LABEL_MAP_OPTION, _check_output_dir, _label_map, _load_pipeline, _open_engine, app


@app.command("tune-nil")
def tune_nil(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved pipeline from text to IDs (NER + linker)"),
    pubtator: Path = typer.Argument(..., exists=True, dir_okay=False, help="Dev abstracts (PubTator) to choose the threshold on"),
    output_dir: Path = typer.Argument(..., help="Folder for the pipeline with the chosen nil_threshold"),
    metric: str = typer.Option("link_f", help="The end-to-end score to maximize: link_f or doc_f"),
    labels: Optional[str] = typer.Option(None, help="Comma-separated entity labels to score (default: all)"),
    label_map: Optional[str] = LABEL_MAP_OPTION,
    nil_spans: str = typer.Option(
        "keep", help="keep the entities left without an ID, drop them from doc.ents (drop_nil), or choose: drop them if that raises NER F on dev"
    ),
    gold_spans: bool = typer.Option(False, "--gold-spans", help="Choose on the abstracts' annotated mentions, linked by "
                                    "the linker alone (no NER; the pipeline may be a linker only), for link F"),
) -> None:
    """Choose the linker's nil_threshold on dev abstracts for end-to-end F:
    an entity whose best score is below it gets no ID (span._.cui None),
    which an NER's false positives ("hematopoiesis") mostly are. Dropped
    (drop_nil), such an entity also leaves doc.ents: NER precision rises,
    recall may fall, linking and document scores stay as they are. The
    pipeline is saved with both settings in its config.

    With --gold-spans, the annotated mentions are linked by the linker's
    engine alone (without spaCy, unless the pipeline was saved before
    engines named their parts; the pipeline's folder is copied with the
    threshold written into its config.cfg): a mention whose concept the
    vocabulary lacks should be left NIL, one it has linked."""

    from ..corpora.readers import read_pubtator
    from ..evaluation.nil_choice import NIL_METRICS, NIL_SPANS

    # Checked before the pipeline loads, and named as the command line names them
    if metric not in NIL_METRICS:
        raise typer.BadParameter(f"{metric!r}: choose one of {', '.join(NIL_METRICS)}", param_hint="--metric")
    if nil_spans not in NIL_SPANS:
        raise typer.BadParameter(f"{nil_spans!r}: choose one of {', '.join(NIL_SPANS)}", param_hint="--nil-spans")
    if gold_spans and (metric != "link_f" or nil_spans != "keep"):
        raise typer.BadParameter("on gold spans, the threshold is chosen for link F, and no span is the NER's to drop",
                                 param_hint="--gold-spans with --metric or --nil-spans")
    renames = _label_map(label_map)
    _check_output_dir(output_dir)
    documents = read_pubtator(pubtator)
    if gold_spans:
        _tune_on_gold_spans(pipeline_dir, pubtator, documents, output_dir, renames, labels)
        return
    from ..evaluation.nil import choose_nil_threshold
    from ..files.storage import save_pipeline

    nlp = _load_pipeline(pipeline_dir)
    try:
        choice = choose_nil_threshold(nlp, documents, renames, labels.split(",") if labels else None, metric, nil_spans)
    except CorpusError as error:
        raise CorpusError(f"{pubtator}: {error}") from None
    columns = (choice.unthresholded, choice.thresholded, choice.dropped)
    msg.table(
        [(name, *(f"{100 * scores[key]:.2f}" for scores in columns))
         for name, key in (("linking F", "link_f"), ("document F", "doc_f"), ("linking P", "link_p"), ("NER F", "ents_f"))],
        header=("dev", "no threshold", f"nil_threshold {choice.threshold}", "NIL spans dropped"),
    )
    save_pipeline(nlp, output_dir)
    msg.good(
        f"nil_threshold = {choice.threshold} (best {metric} on {len(documents)} documents), drop_nil = {choice.drop_nil}; saved to {output_dir}"
    )


def _tune_on_gold_spans(pipeline_dir: Path, pubtator: Path, documents, output_dir: Path, renames, labels) -> None:
    """The threshold of best link F on the gold spans, chosen by the engine alone and saved by a config.cfg edit."""
    from ..encoders.base import encoder_label
    from ..evaluation.nil_choice import choose_on_gold_spans
    from ..pipeline.saved_engine import save_with_edited_settings

    engine = _open_engine(pipeline_dir)
    try:
        choice = choose_on_gold_spans(engine, documents, renames, labels.split(",") if labels else None)
    except CorpusError as error:
        raise CorpusError(f"{pubtator}: {error}") from None
    msg.table(
        [(name, *(f"{100 * scores[key]:.2f}" for scores in (choice.unthresholded, choice.thresholded)))
         for name, key in (("linking F", "link_f"), ("linking P", "link_p"), ("linking R", "link_r"), ("left NIL", "nil"))],
        header=("dev gold spans", "no threshold", f"nil_threshold {choice.threshold}"),
    )
    chosen = {"nil_threshold": choice.threshold,
              "nil_threshold_encoder": None if choice.threshold is None else encoder_label(engine.encoder)}
    save_with_edited_settings(pipeline_dir, output_dir, chosen)
    msg.good(f"nil_threshold = {choice.threshold} (best link F on the gold spans of {len(documents)} documents); "
             f"saved to {output_dir}")
