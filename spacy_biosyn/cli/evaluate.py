"""`evaluate`: Acc@k on BioSyn's queries or gold spans, or end-to-end scores of a text pipeline."""
from pathlib import Path
from typing import Dict, Optional

import typer
from wasabi import msg

from ..errors import CorpusError
from ..names import PIPE_NAME
from .common import ID_NAMESPACES_OPTION, LABEL_MAP_OPTION, _id_namespaces, _label_map, _load_pipeline, app


@app.command()
def evaluate(
    pipeline_dir: Path = typer.Argument(
        ..., exists=True, help="A saved spaCy pipeline; with --end-to-end also its predictions as PubTator (a file, or a link-corpus folder)"
    ),
    queries: Path = typer.Argument(
        ..., exists=True, help="Folder of BioSyn .concept files, or a PubTator file (--end-to-end: or a folder of them)"
    ),
    dictionary: Optional[Path] = typer.Option(
        None, exists=True, dir_okay=False, help="Re-index against this dictionary first"
    ),
    labels: Optional[str] = typer.Option(
        None, help="PubTator only: comma-separated entity types to link, e.g. Disease"
    ),
    label_map: Optional[str] = LABEL_MAP_OPTION,
    output: Optional[Path] = typer.Option(None, dir_okay=False, help="Write the metrics here as JSON"),
    texts: Optional[Path] = typer.Option(
        None, exists=True, dir_okay=False,
        help=".concept queries only: the PubTator abstracts they come from, which a re-ranker reads as context",
    ),
    end_to_end: bool = typer.Option(
        False, "--end-to-end", help="PubTator only: run the whole pipeline (its NER too) on the raw text"
    ),
    id_namespaces: Optional[str] = typer.Option(
        None, "--id-namespaces", help=f"{ID_NAMESPACES_OPTION.help} (default: the pipeline's own)"
    ),
) -> None:
    """Acc@1..Acc@5 of the pipeline's linker. `.concept` queries are ranked
    as BioSyn preprocessed them; a PubTator file's gold spans are linked in
    their raw abstracts, the pipeline doing all preprocessing itself, and
    cui_acc adds the share whose span._.cui (the ID users read) is gold.
    With --end-to-end the pipeline finds the entities itself: strict NER,
    strict linking and document-level ID precision, recall and F."""
    from ..evaluation.pipelines import MAX_K, evaluate_linker
    from ..pipeline.configure import configure_linker

    namespaces = _id_namespaces(id_namespaces)
    if end_to_end:
        return _evaluate_end_to_end(pipeline_dir, queries, labels, _label_map(label_map), output, namespaces)
    if label_map is not None:  # gold spans keep their corpus types, which routes match
        raise typer.BadParameter("goes with --end-to-end, where gold types meet the NER's labels", param_hint="--label-map")
    nlp = _load_pipeline(pipeline_dir)
    if namespaces is not None:
        configure_linker(nlp, id_namespaces=namespaces)
    try:
        metrics = evaluate_linker(nlp, queries, labels=labels.split(",") if labels else None, texts=texts,
                                  dictionary=dictionary, max_k=MAX_K)
    except CorpusError as error:  # nothing to score: said as the command's outcome
        msg.fail(str(error), exits=1)
    msg.table(
        [(name, f"{100 * value:.2f}") for name, value in metrics.items() if name.startswith("link_")],
        header=("metric", "%"),
    )
    msg.info(f"{metrics['n']} mentions scored, {metrics.get('unscored', 0)} CUI-less skipped")
    _write(metrics, output)


def _evaluate_end_to_end(
    pipeline_dir: Path, pubtator: Path, labels: Optional[str], label_map: Dict[str, str], output: Optional[Path],
    namespaces: Optional[Dict[str, str]],
) -> None:
    """Score a pipeline run on the gold abstracts, or its predictions saved
    as PubTator (a file, or a link-corpus folder of PubTator shards); IDs
    compare through `namespaces`, by default a pipeline's own. `pubtator`
    may be a folder: each of its files is scored on its own (the project's
    pooled datasets, text of other guidelines), and `output` holds each
    file's metrics by its name."""
    import spacy

    from ..corpora.readers import read_pubtator
    from ..corpus_linking.worker import check_pipeline
    from ..evaluation.end_to_end import END_TO_END_TASKS, end_to_end_scores, linked_examples, predicted_examples
    from ..evaluation.pipelines import is_pubtator, saved_predictions
    from ..kb.namespaces import recognized_namespaces
    from ..pipeline.configure import configure_linker

    files = sorted(f for f in pubtator.iterdir() if is_pubtator(f)) if pubtator.is_dir() else [pubtator]
    if not pubtator.is_dir() and not is_pubtator(pubtator):
        msg.fail(f"{pubtator}: --end-to-end takes a PubTator file, or a folder of them", exits=1)
    nlp = predictions = None
    if (pipeline_dir / "config.cfg").exists():
        check_pipeline(pipeline_dir, gold_spans=False, instead="give a pipeline with an NER (assemble one), or "
                       "score its linker on the gold spans: evaluate without --end-to-end")
        nlp = _load_pipeline(pipeline_dir)
        if namespaces is not None:
            configure_linker(nlp, id_namespaces=namespaces)
        namespaces = nlp.get_pipe(PIPE_NAME).engine.score_namespaces()
    else:
        try:
            predictions = saved_predictions(pipeline_dir)
        except CorpusError as error:
            msg.fail(str(error), exits=1)
    results = {}
    for file in files:
        documents = read_pubtator(file)
        if nlp is not None:
            examples = linked_examples(nlp, documents, label_map)
            file_namespaces = namespaces
        else:
            examples = predicted_examples(spacy.blank("en"), predictions, documents, label_map)
            # the predictions' ID systems stand for their vocabulary's
            file_namespaces = namespaces if namespaces is not None else recognized_namespaces(
                part for eg in examples for span in eg.predicted.ents if span._.cui for part in span._.cui.split("|")
            )
        metrics = end_to_end_scores(examples, labels.split(",") if labels else None, id_namespaces=file_namespaces)
        rows = [("all", metrics), *metrics["per_type"].items()]
        keys = [f"{task}_{m}" for task in END_TO_END_TASKS for m in "prf"]
        if pubtator.is_dir():
            msg.divider(file.name)
        msg.table([(label, *(f"{100 * scores[k]:.2f}" for k in keys)) for label, scores in rows],
                  header=("label", *keys))
        msg.info(f"{metrics['n_docs']} documents")
        results[file.name] = metrics
    if pubtator.is_dir() and not files:
        msg.info(f"{pubtator} holds no PubTator file: nothing to score")
    _write(results if pubtator.is_dir() else results[pubtator.name], output)


def _write(metrics: dict, output: Optional[Path]) -> None:
    import srsly

    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(output, metrics)

