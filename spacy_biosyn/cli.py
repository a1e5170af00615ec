"""`python -m spacy_biosyn linkers | download | build | index | evaluate | tune-nil | convert | assemble | onnx | train | train-ner | pretrain-encoder | train-reranker | link | link-corpus`."""
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, Union

import typer
from wasabi import msg

from .errors import BiosynError, CorpusError
from .names import DEFAULT_ENCODER_NAME, PIPE_NAME

if TYPE_CHECKING:
    from spacy.language import Language
    from thinc.api import Config

# spaCy, torch and the pipeline's modules are imported inside the commands
# that use them: `--help` and a mistyped option answer in well under a second.

app = typer.Typer(no_args_is_help=True, add_completion=False, help=__doc__)

MAX_K = 5
INDEXES = {"sized": "spacy_biosyn.SizedIndex.v1", "exact": "spacy_biosyn.ExactIndex.v2", "faiss": "spacy_biosyn.FaissIndex.v1"}
DICTIONARY_HELP = "The vocabulary: a file or its URL (fetched once into a cache), in --format"
FORMAT_HELP = "biosyn, medic, ctd-chemicals, umls, obo, mesh or scispacy (default: detected from the file, and said)"
# The PubTator types that become the NER's labels, for convert, evaluate and tune-nil alike.
LABEL_MAP_OPTION = typer.Option(
    None,
    help="Comma-separated TYPE=LABEL renames of the PubTator types; by default NCBI's four types "
    "(SpecificDisease, DiseaseClass, Modifier, CompositeMention) become Disease, as the NER recipes train",
)


def _label_map(option: Optional[str]) -> Dict[str, str]:
    from .corpus import NCBI_LABELS

    if option is None:
        return NCBI_LABELS
    pairs = [pair.split("=", 1) for pair in option.split(",") if pair]
    if any(len(pair) != 2 or not all(part.strip() for part in pair) for pair in pairs):
        raise typer.BadParameter(f"{option!r}: write TYPE=LABEL pairs, comma-separated", param_hint="--label-map")
    return {kind.strip(): label.strip() for kind, label in pairs}


ROUTE_HELP = (
    "LABEL=PATH: link spans of LABEL against their own vocabulary, a CUI||name file or a folder "
    "of .concept files whose mentions become the names (repeatable)"
)


ENCODER_HELP = f"Hugging Face model name or local folder (default: {DEFAULT_ENCODER_NAME}, the linker's own)"
ID_NAMESPACES_OPTION = typer.Option(
    None, "--id-namespaces",
    help='The namespaces of bare IDs: "medic" (MeSH, then OMIM: spacy_biosyn.MEDIC_NAMESPACES) or a JSON object of '
    "namespace -> the pattern its bare IDs match; IDs are reported with them, and scores compare bare IDs with "
    "prefixed ones (a corpus's OMIM:217000) only through them",
)


def _id_namespaces(option: Optional[str]) -> Optional[Dict[str, str]]:
    import json

    from .kb.namespaces import MEDIC_NAMESPACES, IdNamespaces

    if option is None:
        return None
    if option.strip().casefold() == "medic":
        return dict(MEDIC_NAMESPACES)
    try:
        namespaces = json.loads(option)
        IdNamespaces(namespaces)
    except ValueError as error:
        raise typer.BadParameter(f"{option!r}: {error}; give medic or a JSON object such as "
                                 '{"MESH": "D[0-9]{6}"}', param_hint="--id-namespaces") from None
    return namespaces


@app.command()
def linkers() -> None:
    """The named vocabularies (add_pipe("biosyn_linker", config={"linker_name": NAME})):
    publisher, terms, stated size, index, and the encoders each is cached for."""
    from .kb.catalogue import CATALOGUE
    from .kb.named import cached_linkers, linkers_folder

    rows = []
    for entry in CATALOGUE.values():
        cached = cached_linkers(entry.name)
        encoders = ", ".join(sorted({Path(str(c["encoder"].get("name"))).name for c in cached})) or "no"
        rows.append((entry.name, _cell(entry.publisher), entry.size, entry.index, encoders))
    msg.table(rows, header=("name", "publisher", "size (as published)", "index", "cached for"), divider=True)
    for entry in CATALOGUE.values():
        print(f"{entry.name}: {entry.title}\n  files: {' '.join(entry.urls)}\n  page: {entry.page}\n  terms: {entry.terms}")
    print(f"Cache: {linkers_folder()} ($SPACY_BIOSYN_CACHE); mirror: $SPACY_BIOSYN_MIRROR")


@app.command()
def download(
    name: str = typer.Argument(..., help="A named vocabulary (python -m spacy_biosyn linkers)"),
    encoder: Optional[str] = typer.Option(None, help=ENCODER_HELP),
    device: Optional[str] = typer.Option(None, help="Where the encoder runs: auto (a GPU if there is one), cpu, cuda"),
    onnx: bool = typer.Option(
        False, "--onnx", help="For pipes whose encoder is spacy_biosyn.OnnxEncoder.v1 (extra onnx): each runtime has its own cache"
    ),
    refresh: bool = typer.Option(False, "--refresh", help="Fetch the files again (and build again if they changed)"),
) -> None:
    """Fetch, encode and index a named vocabulary into the cache ahead of
    time, so that add_pipe(..., config={"linker_name": NAME}) links at once."""
    import spacy

    if onnx and device is not None:
        raise typer.BadParameter("the ONNX encoder runs on the CPU", param_hint="--device")
    nlp = spacy.blank("en")
    linker = nlp.add_pipe(PIPE_NAME, config=_named_config(name, encoder, device, onnx))
    start = time.perf_counter()
    linker.initialize(refresh=refresh)
    from .kb.named import linkers_folder

    names = len(linker.linker.dictionary)
    msg.good(f"{name}: {names:,} names ready in {time.perf_counter() - start:.1f}s, cached in {linkers_folder()}")


def _named_config(name: str, encoder: Optional[str], device: Optional[str], onnx: bool = False) -> dict:
    """A linker config for the named vocabulary `name`, refused in one line if there is none."""
    from .kb.catalogue import named_vocabulary

    try:
        named_vocabulary(name)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="NAME") from None
    runtime = "spacy_biosyn.OnnxEncoder.v1" if onnx else "spacy_biosyn.TransformerEncoder.v1"
    block = {"@misc": runtime, "name": encoder or DEFAULT_ENCODER_NAME}
    return {"linker_name": name, "encoder": {**block, **_given({"device": device})}}


@app.command()
def build(
    output_dir: Path = typer.Argument(..., help="Folder for the spaCy pipeline"),
    dictionary: Optional[str] = typer.Option(None, help=DICTIONARY_HELP),
    linker_name: Optional[str] = typer.Option(
        None, help="A named vocabulary instead of --dictionary (python -m spacy_biosyn linkers), from the cache"
    ),
    encoder: Optional[str] = typer.Option(None, help=ENCODER_HELP),
    from_biosyn: Optional[str] = typer.Option(
        None, help="A checkpoint saved by BioSyn's code (folder or Hugging Face name): its encoder, with its lambda"
    ),
    format: Optional[str] = typer.Option(None, help=FORMAT_HELP),
    pooling: Optional[str] = typer.Option(None, help="cls or mean (default: cls, as BioSyn and SapBERT)"),
    similarity: Optional[str] = typer.Option(None, help="cosine or dot (default: cosine; dot with --from-biosyn)"),
    device: Optional[str] = typer.Option(None, help="Where the encoder runs: auto (a GPU if there is one), cpu, cuda, cuda:1"),
    batch_size: Optional[int] = typer.Option(None, help="Names encoded at once"),
    index: str = typer.Option(
        "sized", help="sized (exact below a million names, faiss from there on), exact (every name scored), or "
        "faiss for millions of names (extra faiss)"
    ),
    sparse_weight: Optional[float] = typer.Option(None, help="lambda in S = dense + lambda * sparse"),
    top_k: Optional[int] = typer.Option(None, help="Candidates kept per mention"),
    synonyms: List[Path] = typer.Option(
        [], exists=True, help="CUI||name file or folder of training .concept files to add (repeatable)"
    ),
    preferred_ids_from: List[Path] = typer.Option(
        [], exists=True, help="Annotated corpora whose gold IDs pick each concept's preferred ID (repeatable)"
    ),
    route: List[str] = typer.Option([], help=ROUTE_HELP),
    dictionary_labels: Optional[str] = typer.Option(
        None, help="Comma-separated entity labels linked against DICT (default: every label without a route)"
    ),
    id_namespaces: Optional[str] = ID_NAMESPACES_OPTION,
    lang: str = typer.Option("en", help="Language of the blank pipeline"),
) -> None:
    """Build a pipeline whose linker indexes DICTIONARY (or the named
    vocabulary LINKER_NAME) with ENCODER, or with the encoder and lambda of a
    BioSyn checkpoint (no training)."""
    import spacy

    from .kb.vocabularies import read_vocabulary_file

    if (dictionary is None) == (linker_name is None):
        raise typer.BadParameter("give --dictionary or --linker-name (one of them)", param_hint="--dictionary")
    settings = _given({"sparse_weight": sparse_weight, "top_k": top_k, "id_namespaces": _id_namespaces(id_namespaces)})
    if linker_name is not None:
        unused = {"--from-biosyn": from_biosyn, "--format": format, "--synonyms": synonyms, "--route": route,
                  "--preferred-ids-from": preferred_ids_from, "--dictionary-labels": dictionary_labels,
                  "--index": None if index == "sized" else index}
        given = [option for option, value in unused.items() if value]
        if given:
            raise typer.BadParameter(f"{', '.join(given)} go(es) with --dictionary, not a named vocabulary",
                                     param_hint="--linker-name")
        config = _named_config(linker_name, encoder, device)
        config["encoder"].update(_given({"pooling": pooling, "similarity": similarity, "batch_size": batch_size}))
        nlp = spacy.blank(lang)
        linker = nlp.add_pipe(PIPE_NAME, config={**config, **settings})
        return _index_and_save(nlp, linker.initialize, output_dir)
    if encoder is not None and from_biosyn is not None:
        raise typer.BadParameter("give --encoder or --from-biosyn, not both", param_hint="--encoder")
    encoder = encoder or DEFAULT_ENCODER_NAME
    if index not in INDEXES:
        raise typer.BadParameter(f"{index!r}: choose one of {', '.join(INDEXES)}", param_hint="--index")
    routes = _routes(route)
    vocabulary, format = _vocabulary(dictionary, format, read_vocabulary_file)
    encoder_block = {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": encoder}
    if from_biosyn is not None:
        from .encoders.biosyn_checkpoint import PICKLED_TFIDF_FILE, read_biosyn_checkpoint

        checkpoint = read_biosyn_checkpoint(from_biosyn)
        encoder_block = checkpoint.encoder
        settings.setdefault("sparse_weight", checkpoint.sparse_weight)
        msg.info(f"{from_biosyn}: BioSyn's [CLS] vectors and inner product, lambda {checkpoint.sparse_weight:.4f}")
        if checkpoint.skipped_pickle:
            msg.info(f"{PICKLED_TFIDF_FILE} is not read (unpickling runs code): the tf-idf is fitted on the dictionary, as BioSyn fits it")
    nlp = spacy.blank(lang)
    # Options left unset keep the component's and encoder's own defaults.
    encoder_block.update(_given({"pooling": pooling, "similarity": similarity, "device": device, "batch_size": batch_size}))
    config = dict(settings)
    config.update(
        encoder=encoder_block,
        index={"@misc": INDEXES[index]},
        dictionary_labels=dictionary_labels.split(",") if dictionary_labels else None,
    )
    linker = nlp.add_pipe(PIPE_NAME, config=config)
    # The data reach the pipe through initialize() alone: the saved pipeline
    # holds their content, and its config.cfg no path of this machine.
    _index_and_save(nlp, lambda: linker.initialize(
        nlp=nlp, dictionary=vocabulary, routes=routes, synonyms=synonyms, preferred_ids_from=preferred_ids_from,
    ), output_dir)


@app.command()
def index(
    pipeline_dir: Path = typer.Argument(..., exists=True, help="A saved spaCy pipeline"),
    output_dir: Path = typer.Argument(..., help="Folder for the re-indexed pipeline"),
    dictionary: str = typer.Option(..., help=DICTIONARY_HELP),
    format: Optional[str] = typer.Option(None, help=FORMAT_HELP),
    device: Optional[str] = typer.Option(None, help="Where a PyTorch encoder runs for this indexing: cpu, cuda, cuda:1"),
    batch_size: Optional[int] = typer.Option(None, help="Names encoded at once"),
    preferred_ids_from: List[Path] = typer.Option(
        [], exists=True, help="Annotated corpora whose gold IDs pick each concept's preferred ID (repeatable)"
    ),
    route: List[str] = typer.Option([], help=ROUTE_HELP),
    routes_dir: Optional[Path] = typer.Option(
        None, exists=True, file_okay=False,
        help="A folder of route vocabularies named by their label (Chemical/, Chemical.txt), as --route takes them",
    ),
    id_namespaces: Optional[str] = ID_NAMESPACES_OPTION,
) -> None:
    """Index another dictionary with a pipeline's (trained) encoder and
    tf-idf: one model serves dictionaries larger than the one it was trained on."""

    from .kb.vocabularies import read_vocabulary_file
    from .pipeline.settings import configure_linker

    namespaces = _id_namespaces(id_namespaces)
    vocabulary, _ = _vocabulary(dictionary, format, read_vocabulary_file)
    routes = _routes(route)
    if routes_dir is not None:
        routes.update((entry.stem, entry) for entry in sorted(routes_dir.iterdir()) if not entry.name.startswith("."))
    nlp = _load_pipeline(pipeline_dir)
    linker = nlp.get_pipe(PIPE_NAME)
    if namespaces is not None:
        configure_linker(nlp, id_namespaces=namespaces)
    _place_encoder(linker.linker.encoder, device, batch_size)
    if preferred_ids_from:
        linker.learn_preferred_ids(preferred_ids_from)

    def index_all() -> None:
        linker.set_dictionary(vocabulary)
        for label, path in routes.items():
            linker.add_route(label, path)

    _index_and_save(nlp, index_all, output_dir)


@app.command()
def evaluate(
    pipeline_dir: Path = typer.Argument(
        ..., exists=True, help="A saved spaCy pipeline; with --end-to-end also its predictions as PubTator (a file, or a link-corpus folder)"
    ),
    queries: Path = typer.Argument(
        ..., exists=True, help="Folder of BioSyn .concept files, or a PubTator file"
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
    import srsly

    from .corpus import pubtator_to_examples, read_concept_queries, read_pubtator
    from .evaluation.queries import evaluate as evaluate_queries
    from .evaluation.queries import evaluate_examples
    from .pipeline.settings import configure_linker

    namespaces = _id_namespaces(id_namespaces)
    if end_to_end:
        return _evaluate_end_to_end(pipeline_dir, queries, labels, _label_map(label_map), output, namespaces)
    if label_map is not None:  # gold spans keep their corpus types, which routes match
        raise typer.BadParameter("goes with --end-to-end, where gold types meet the NER's labels", param_hint="--label-map")
    nlp = _load_pipeline(pipeline_dir)
    linker = nlp.get_pipe(PIPE_NAME)
    linker.top_k = max(linker.top_k, MAX_K)
    if namespaces is not None:
        configure_linker(nlp, id_namespaces=namespaces)
    namespaces = linker.settings.id_namespaces
    if dictionary is not None:
        linker.set_dictionary(dictionary)
    if _is_pubtator(queries):
        wanted = set(labels.split(",")) if labels else None
        examples = pubtator_to_examples(nlp, read_pubtator(queries), wanted)
        metrics = evaluate_examples(linker.pipe, examples, max_k=MAX_K, id_namespaces=namespaces)
        if not metrics["n"]:
            msg.fail(f"{queries}: no mention with a gold ID to score", exits=1)
    else:
        concept_queries = read_concept_queries(queries)
        contexts = None
        if linker.reranker is not None:
            if texts is None:
                msg.warn("The pipeline re-ranks with context: give --texts ABSTRACTS.PubTator, or it reads each mention alone")
            else:
                from .training.reranking import query_contexts

                contexts = query_contexts(concept_queries, read_pubtator(texts), linker.reranker.context_chars)
        metrics = evaluate_queries(linker.rank, concept_queries, max_k=MAX_K, contexts=contexts, id_namespaces=namespaces)
    msg.table(
        [(name, f"{100 * value:.2f}") for name, value in metrics.items() if name.startswith("link_")],
        header=("metric", "%"),
    )
    msg.info(f"{metrics['n']} mentions scored, {metrics.get('unscored', 0)} CUI-less skipped")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(output, metrics)


def _evaluate_end_to_end(
    pipeline_dir: Path, pubtator: Path, labels: Optional[str], label_map: Dict[str, str], output: Optional[Path],
    namespaces: Optional[Dict[str, str]],
) -> None:
    """Score a pipeline run on the gold abstracts, or its predictions saved
    as PubTator (a file, or a link-corpus folder of PubTator shards); IDs
    compare through `namespaces`, by default a pipeline's own."""
    import spacy
    import srsly

    from .corpus import iter_pubtator, read_pubtator
    from .evaluation.end_to_end import END_TO_END_TASKS, end_to_end_scores, linked_examples, predicted_examples
    from .corpus_linking.worker import check_pipeline
    from .pipeline.settings import configure_linker

    if not _is_pubtator(pubtator):
        msg.fail(f"{pubtator}: --end-to-end takes a PubTator file", exits=1)
    documents = read_pubtator(pubtator)
    if (pipeline_dir / "config.cfg").exists():
        check_pipeline(pipeline_dir, gold_spans=False, instead="give a pipeline with an NER (assemble one), or "
                       "score its linker on the gold spans: evaluate without --end-to-end")
        nlp = _load_pipeline(pipeline_dir)
        if namespaces is not None:
            configure_linker(nlp, id_namespaces=namespaces)
        namespaces = nlp.get_pipe(PIPE_NAME).settings.id_namespaces
        examples = linked_examples(nlp, documents, label_map)
    else:
        files = sorted(pipeline_dir.glob("shard-*.pubtator")) if pipeline_dir.is_dir() else [pipeline_dir]
        if not files:
            msg.fail(f"{pipeline_dir}: neither a pipeline nor predictions (PubTator, or link-corpus PubTator shards)", exits=1)
        predictions = (document for path in files for document in iter_pubtator(path))
        examples = predicted_examples(spacy.blank("en"), predictions, documents, label_map)
        if namespaces is None and _prefixed_against_bare(examples):
            msg.warn("The predictions' IDs have namespaces (MESH:D001943) and the gold IDs have none: they never "
                     "match unless --id-namespaces says which namespace a bare ID is in (medic for NCBI and BC5CDR)")
    metrics = end_to_end_scores(examples, labels.split(",") if labels else None, id_namespaces=namespaces)
    rows = [("all", metrics), *metrics["per_type"].items()]
    keys = [f"{task}_{m}" for task in END_TO_END_TASKS for m in "prf"]
    msg.table([(label, *(f"{100 * scores[k]:.2f}" for k in keys)) for label, scores in rows], header=("label", *keys))
    msg.info(f"{metrics['n_docs']} documents")
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        srsly.write_json(output, metrics)


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
) -> None:
    """Choose the linker's nil_threshold on dev abstracts for end-to-end F:
    an entity whose best score is below it gets no ID (span._.cui None),
    which an NER's false positives ("hematopoiesis") mostly are. Dropped
    (drop_nil), such an entity also leaves doc.ents: NER precision rises,
    recall may fall, linking and document scores stay as they are. The
    pipeline is saved with both settings in its config."""

    from .corpus import read_pubtator
    from .evaluation.nil import NIL_METRICS, NIL_SPANS, choose_nil_threshold
    from .storage import save_pipeline

    # Checked before the pipeline loads, and named as the command line names them
    if metric not in NIL_METRICS:
        raise typer.BadParameter(f"{metric!r}: choose one of {', '.join(NIL_METRICS)}", param_hint="--metric")
    if nil_spans not in NIL_SPANS:
        raise typer.BadParameter(f"{nil_spans!r}: choose one of {', '.join(NIL_SPANS)}", param_hint="--nil-spans")
    renames = _label_map(label_map)
    _check_output_dir(output_dir)
    documents = read_pubtator(pubtator)
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


@app.command()
def assemble(
    ner_pipeline: str = typer.Argument(
        ..., help="A pipeline's folder or installed package whose components find entities (spacy train's model-best, en_ner_bc5cdr_md)"
    ),
    linker_pipeline: str = typer.Argument(..., help="A pipeline's folder or package with a biosyn_linker (build or index)"),
    output_dir: Path = typer.Argument(..., help="Folder for the pipeline from text to IDs"),
    document_entities: bool = typer.Option(
        True, help="Put biosyn_document_entities between them: the document's entities made to agree (docs/raw-text.md)"
    ),
) -> None:
    """One pipeline from raw text to IDs: the NER pipeline's components
    (its tokenizer included), biosyn_document_entities, then the linker."""

    from .storage import save_pipeline

    _check_output_dir(output_dir)
    nlp, linker = _load_pipeline(ner_pipeline), _load_pipeline(linker_pipeline)
    if PIPE_NAME not in linker.pipe_names:
        msg.fail(f"{linker_pipeline}: no {PIPE_NAME} in it (its pipes: {', '.join(linker.pipe_names) or 'none'})", exits=1)
    taken = [name for name in (PIPE_NAME, "biosyn_document_entities" if document_entities else None) if name in nlp.pipe_names]
    if taken:
        msg.fail(f"{ner_pipeline} already holds {', '.join(taken)}: give the pipeline whose components find entities", exits=1)
    if document_entities:
        nlp.add_pipe("biosyn_document_entities")
    nlp.add_pipe(PIPE_NAME, source=linker)
    save_pipeline(nlp, output_dir)
    msg.good(f"{' -> '.join(nlp.pipe_names)} saved to {output_dir}")


@app.command()
def onnx(
    pipeline_dir: Path = typer.Argument(..., exists=True, help="A saved pipeline with a biosyn_linker"),
    output_dir: Path = typer.Argument(..., help="Folder for the pipeline with the ONNX encoder"),
    quantize: bool = typer.Option(
        False, "--quantize", help="int8 weights: faster, less exact; every name is re-encoded with them"
    ),
) -> None:
    """Run the linker's encoder with ONNX Runtime: the same model exported
    to ONNX, so that loading the pipeline skips transformers' model classes.
    The pipeline then links but does not train."""

    from .encoders.onnx import OnnxEncoder
    from .encoders.transformer import TransformerEncoder
    from .pipeline.settings import configure_linker
    from .storage import save_pipeline

    _check_output_dir(output_dir)
    nlp = _load_pipeline(pipeline_dir)
    pipe = nlp.get_pipe(PIPE_NAME)
    source = pipe.linker.encoder
    if not isinstance(source, TransformerEncoder):
        msg.fail(f"{pipeline_dir}: its encoder is not a PyTorch one ({type(source).__name__}); convert the pipeline it came from", exits=1)
    encoder = OnnxEncoder(**source.settings, quantize=quantize).export(source)
    start = time.perf_counter()
    configure_linker(nlp, encoder=encoder, reencode=quantize)
    save_pipeline(nlp, output_dir)
    reencoded = f"; names re-encoded in {time.perf_counter() - start:.1f}s" if quantize else ""
    msg.good(f"ONNX encoder{' (int8)' if quantize else ''} saved with the pipeline to {output_dir}{reencoded}")


@app.command()
def convert(
    pubtator: Path = typer.Argument(..., exists=True, dir_okay=False, help="A PubTator file"),
    output: Path = typer.Argument(..., dir_okay=False, help="The .spacy file (DocBin) to write"),
    pool: List[Path] = typer.Option(
        [],
        exists=True,
        help="Another corpus's PubTator file, or a folder of them (its .txt files), to train on as well (repeatable); tokens "
        "matching a name of a label only another corpus annotates are left missing, not outside",
    ),
    names: List[str] = typer.Option(
        [],
        help="LABEL=VOCABULARY (repeatable): that label's names for --replace-copies and --name-examples, "
        "from a vocabulary file in any format `build --dictionary` reads, normalized as the linker reads them",
    ),
    replace_copies: int = typer.Option(
        0, min=0, help="Copies of each document with every entity of a --names label swapped for a random name of it"
    ),
    name_examples: int = typer.Option(0, min=0, help="Random names of each --names label added as one-entity documents"),
    seed: int = typer.Option(0, help="Seed of the random names"),
    label_map: Optional[str] = LABEL_MAP_OPTION,
    lang: str = typer.Option("en", help="Language whose tokenizer splits the text"),
    biomedical_tokenizer: bool = typer.Option(
        True, help="Split the text with the rules of spacy_biosyn.BiomedicalTokenizer.v1, as configs/ner*.cfg train with"
    ),
) -> None:
    """NER training data: the gold entities of a PubTator file (and of the
    pooled ones) as a DocBin for `spacy train`, each with its gold ID as
    kb_id; the vocabulary's copies and names, if asked for, come after them."""
    from collections import Counter

    import spacy

    from spacy.tokens import DocBin

    from .corpus import read_pubtator
    from .kb.vocabularies import read_vocabulary_file
    from .ner.corpus import pooled_docs, with_vocabulary
    from .ner.tokenizer import add_biomedical_rules

    renames = _label_map(label_map)
    if (replace_copies or name_examples) and not names:
        raise typer.BadParameter("--replace-copies and --name-examples need --names LABEL=VOCABULARY", param_hint="--names")
    pooled = [file for path in pool for file in (sorted(path.glob("*.txt")) if path.is_dir() else [path])]
    corpora = [read_pubtator(path) for path in [pubtator, *pooled]]
    nlp = add_biomedical_rules(spacy.blank(lang)) if biomedical_tokenizer else spacy.blank(lang)
    docs = pooled_docs(nlp, corpora, renames)
    vocabularies = {}
    labels = {span.label_ for doc in docs for span in doc.ents}
    for pair in names:
        label, sep, path = pair.partition("=")
        if not (sep and label and path):
            raise typer.BadParameter(f"expected LABEL=VOCABULARY, got {pair!r}", param_hint="--names")
        if label not in labels or label in vocabularies:
            said = "given twice" if label in vocabularies else f"no entity has it (labels: {', '.join(sorted(labels))})"
            raise typer.BadParameter(f"{pair!r}: the label {label!r} is {said}", param_hint="--names")
        if "://" not in path and not Path(path).exists():
            raise typer.BadParameter(f"{pair!r}: no such file", param_hint="--names")
        vocabularies[label] = list(read_vocabulary_file(path)[0].names)
    docbin = DocBin(docs=with_vocabulary(nlp, docs, vocabularies, replace_copies, name_examples, seed))
    output.parent.mkdir(parents=True, exist_ok=True)
    docbin.to_disk(output)
    docs = list(docbin.get_docs(spacy.blank(lang).vocab))
    labels = Counter(span.label_ for doc in docs for span in doc.ents)
    missing = sum(token.ent_iob == 0 for doc in docs for token in doc)
    msg.good(f"{len(docs)} documents, entities {dict(labels)}, {missing} tokens missing: {output}")


# The training commands take any config value as --section.key VALUE.
TRAINING_COMMAND = {"allow_extra_args": True, "ignore_unknown_options": True}
GPU_ID_OPTION = typer.Option(
    None, "--gpu-id", "-g", help="GPU to train on; -1 for the CPU (default: the first GPU if there is one)"
)


@app.command(context_settings=TRAINING_COMMAND)
def train(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., exists=True, dir_okay=False, help="Training config"),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for model-best, model-last and log.jsonl"),
    gpu_id: Optional[int] = GPU_ID_OPTION,
) -> None:
    """Train encoder and lambda with BioSyn's synonym marginalization. Any
    config value can be overridden, e.g. --paths.train DIR --training.epochs 5."""
    from .training import train as run_training

    config, gpu_id = _training_config(ctx, config_path, gpu_id)
    run_training(config, output, gpu_id)


@app.command("train-ner", context_settings=TRAINING_COMMAND)
def train_ner(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., exists=True, dir_okay=False, help="An NER recipe (configs/ner-*.cfg)"),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for model-best and model-last"),
    gpu_id: Optional[int] = GPU_ID_OPTION,
) -> None:
    """Train an NER recipe with spaCy's trainer. A transformer recipe takes
    its shape (width, heads, layers, vocabulary, positions) from the
    config.json of the encoder it starts from (--paths.encoder), so a
    SapBERT or PubMedBERT folder needs no other override; any config value
    can be overridden, e.g. --paths.train FILE --training.max_steps 2000."""
    from spacy.cli._util import parse_config_overrides
    from spacy.cli.train import train as spacy_train

    from .ner.precision import with_encoder_shape

    config, gpu_id = _training_config(ctx, config_path, gpu_id)
    config, filled = with_encoder_shape(config, keep=parse_config_overrides(ctx.args))
    for name, shape in filled.items():
        msg.info(f"{name}: the encoder's shape, " + ", ".join(f"{key} {value}" for key, value in shape.items()))
    output.mkdir(parents=True, exist_ok=True)
    config.to_disk(output / "train.cfg")  # what was trained, overrides and shape included
    spacy_train(output / "train.cfg", output, use_gpu=gpu_id)


@app.command("pretrain-encoder", context_settings=TRAINING_COMMAND)
def pretrain_encoder(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., exists=True, dir_okay=False, help="Config (configs/pretrain-encoder.cfg)"),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for encoder/, config.cfg and log.jsonl"),
    gpu_id: Optional[int] = GPU_ID_OPTION,
) -> None:
    """Align the name encoder on a vocabulary's synonyms (SapBERT's
    self-alignment) before `train`; OUTPUT/encoder is read wherever
    assets/encoder is. Any config value can be overridden, e.g.
    --paths.dictionary FILE --pretraining.max_steps 100."""
    from .training.alignment import pretrain_encoder as run_alignment

    config, gpu_id = _training_config(ctx, config_path, gpu_id)
    run_alignment(config, output, gpu_id)


@app.command("train-reranker", context_settings=TRAINING_COMMAND)
def train_reranker(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., exists=True, dir_okay=False, help="Re-ranker config (configs/reranker.cfg)"),
    output: Path = typer.Option(..., "--output", "-o", help="Folder for model-best and log.jsonl"),
) -> None:
    """Train a cross-encoder re-ranker on a linker pipeline's candidates for
    the training mentions in their abstracts; model-best is that pipeline
    with the re-ranker, kept only if it beats the first stage on dev. Any
    config value can be overridden, e.g. --paths.pipeline DIR --training.epochs 1."""
    from spacy.cli._util import parse_config_overrides
    from spacy.util import load_config

    from .training.reranking import train_reranker as run_training

    config = load_config(config_path, overrides=parse_config_overrides(ctx.args), interpolate=False)
    run_training(config, output)


@app.command()
def link(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved pipeline from text to IDs (NER + linker)"),
    texts: Optional[List[str]] = typer.Argument(
        None, help="The text to link; with --mentions, mention strings (default: standard input, a mention a line)"
    ),
    mentions: bool = typer.Option(
        False, "--mentions", help="Link mention strings, each as one entity, as linker.rank() ranks them (no NER needed)"
    ),
    json_output: bool = typer.Option(False, "--json", help="One JSON object per entity, a line each, instead of a table"),
) -> None:
    """Link one text: each entity with its offsets, label, ID, score and
    best name, as link-corpus writes its rows. With --mentions, link mention
    strings ("breast cancer", "BRCA1-associated tumours"), each as a whole
    entity, as BioSyn's inference.py --mention does."""
    import json

    from .corpus_linking.output import document_rows
    from .corpus_linking.sources import Document
    from .corpus_linking.worker import check_pipeline
    from .preprocess.text import without_lone_surrogates

    if mentions:
        given = texts or [line for line in sys.stdin.read().splitlines() if line.strip()]
        rows = _mention_rows(_load_pipeline(pipeline_dir), [without_lone_surrogates(t) for t in given])
    else:
        if texts and len(texts) > 1:
            raise typer.BadParameter(f"{len(texts)} texts: give one (quoted), or mention strings with --mentions",
                                     param_hint="TEXTS")
        check_pipeline(pipeline_dir, gold_spans=False, instead="give a pipeline with an NER (python -m spacy_biosyn "
                       "assemble), or link mention strings with --mentions")
        text = without_lone_surrogates(texts[0] if texts else sys.stdin.read())
        nlp = _load_pipeline(pipeline_dir)
        rows = document_rows(Document("text", text, None), nlp(text), None)
    if json_output:
        for row in rows:
            print(json.dumps({k: row[k] for k in ("start", "end", "text", "label", "id", "score", "candidates")}, ensure_ascii=False))
        return
    table = [
        (row["start"], row["end"], _cell(row["text"]), row["label"], row["id"] or "-",
         "-" if row["score"] is None else f"{row['score']:.3f}", _cell(row["candidates"][0]["name"]) if row["candidates"] else "-")
        for row in rows
    ]
    msg.table(table, header=("start", "end", "mention", "label", "ID", "score", "best name"), divider=True)


def _mention_rows(nlp: "Language", mentions: List[str]) -> List[dict]:
    """A row for each mention string, linked as one entity of a label the
    linker serves, by the pipeline's linker alone (its NER is not run)."""
    from spacy.tokens import Span

    from .corpus_linking.output import document_rows
    from .corpus_linking.sources import Document

    if PIPE_NAME not in nlp.pipe_names:
        msg.fail(f"the pipeline has no {PIPE_NAME} (its pipes: {', '.join(nlp.pipe_names) or 'none'})", exits=1)
    linker = nlp.get_pipe(PIPE_NAME)
    linker.configure({"drop_nil": False})  # a row for every mention, NIL ones too
    label = (linker.settings.dictionary_labels or ["ENTITY"])[0]
    docs = []
    for mention in mentions:
        doc = nlp.make_doc(mention)
        doc.ents = [Span(doc, 0, len(doc), label=label)] if len(doc) else []
        docs.append(doc)
    return [row for mention, doc in zip(mentions, linker.pipe(docs))
            for row in document_rows(Document("mention", mention, None), doc, None)]


def _cell(text: str, width: int = 30) -> str:
    """A table cell: wasabi's columns are 30 wide, and a longer cell pushes its row out of line."""
    return text if len(text) <= width else text[: width - 1] + "…"


@app.command("link-corpus")
def link_corpus(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved spaCy pipeline"),
    input: str = typer.Argument(
        ..., help="A file, a folder or a glob of PubTator, BioC XML/JSON, JSONL, Parquet or plain-text files (one document each), or - for standard input"
    ),
    output_dir: Path = typer.Argument(..., help="Folder for the shards and _manifest.json; a re-run resumes it"),
    engine: str = typer.Option("local", help="local (nlp.pipe), ray (Ray Data) or dask (distributed)"),
    workers: int = typer.Option(1, help="Worker processes, each loading the pipeline once"),
    batch_size: int = typer.Option(64, help="Documents per nlp.pipe batch"),
    shard_size: int = typer.Option(1000, help="Documents per output shard: the unit a re-run skips"),
    input_format: Optional[str] = typer.Option(
        None, help="pubtator, bioc-xml, bioc-json, jsonl, parquet or text (default: by suffix; a .txt file by its first line)"
    ),
    output_format: str = typer.Option("parquet", help="parquet or jsonl (a row per entity), pubtator or bioc (BioC XML)"),
    gold_spans: bool = typer.Option(False, "--gold-spans", help="Link the input's annotations (PubTator, BioC) instead of running the NER"),
    labels: Optional[str] = typer.Option(None, help="With --gold-spans: comma-separated annotation types to link"),
    address: Optional[str] = typer.Option(None, help="An existing Ray or Dask cluster; without it a local one is started"),
    gpu: bool = typer.Option(False, "--gpu", help="One GPU per worker"),
    threads: Optional[int] = typer.Option(None, help="Torch threads per Ray or Dask worker (default: the cores shared out); the local engine's forked workers use one each"),
) -> None:
    """Link a whole corpus into shards with a manifest: Parquet or JSONL,
    one row per entity (doc id, offsets, text, label, ID, score, ranked
    candidates), or PubTator or BioC XML, each document with its entities
    and their IDs. Shards are written whole, so a killed run resumes where
    it stopped."""
    from .corpus_linking import link_corpus as run

    summary = run(
        pipeline_dir, input, output_dir, engine=engine, workers=workers, batch_size=batch_size,
        shard_size=shard_size, input_format=input_format, output_format=output_format, gold_spans=gold_spans,
        labels=labels.split(",") if labels else None, address=address, gpu=gpu, threads=threads,
    )
    msg.good(
        f"{summary['documents']} documents, {summary['mentions']} mentions in {summary['seconds']:.1f}s "
        f"({summary['documents_per_s']} documents/s, {summary['mentions_per_s']} mentions/s; "
        f"{summary['skipped_shards']} shards already done): {output_dir}"
    )
    if summary["too_long"]:
        msg.warn(f"{summary['too_long']} document(s) over the pipeline's max_length were not linked (named above)")


def main() -> None:
    """The command line: an error about the user's input is one line naming
    the file, line or setting at fault, not a traceback."""
    try:
        app(prog_name="python -m spacy_biosyn")
    except BiosynError as error:
        print(f"✘ {error}", file=sys.stderr)  # one line: wasabi would wrap it
        sys.exit(1)


def _training_config(ctx: typer.Context, config_path: Path, gpu_id: Optional[int]) -> "Tuple[Config, int]":
    """A training config with the command line's overrides, and the device:
    the first GPU if there is one and --gpu-id is not given."""
    import torch
    from spacy.cli._util import parse_config_overrides
    from spacy.util import load_config

    if gpu_id is None:
        gpu_id = 0 if torch.cuda.is_available() else -1
    msg.info(f"Training on {'GPU ' + str(gpu_id) if gpu_id >= 0 else 'the CPU'}")
    return load_config(config_path, overrides=parse_config_overrides(ctx.args), interpolate=False), gpu_id


def _index_and_save(nlp: "Language", index: Callable[[], None], output_dir: Path) -> None:
    """Run the indexing step, timed, then save the pipeline in one piece:
    a pipeline already at `output_dir` is replaced only once the new one is
    whole. A folder holding anything else is left alone."""
    from .storage import save_pipeline

    _check_output_dir(output_dir)
    start = time.perf_counter()
    index()
    seconds = time.perf_counter() - start
    _portable_encoder(nlp)
    save_pipeline(nlp, output_dir)
    pipe = nlp.get_pipe(PIPE_NAME)
    names = len(pipe.linker.dictionary)
    msg.good(f"Indexed {names} names in {seconds:.1f}s ({names / seconds:.0f} names/s); pipeline saved to {output_dir}")
    if pipe.settings.nil_threshold == "auto" and pipe.reranker is None:
        found = pipe.linker.nil_default
        msg.info(f"nil_threshold \"auto\" is {found.threshold} here: {found.source}")


def _portable_encoder(nlp: "Language") -> None:
    """The saved config.cfg names the encoder as its config_block does: by
    its name (a local folder's last part) and on no device of this machine,
    so that the pipeline loads anywhere and says what it was built from."""
    from .pipeline.settings import configure_linker

    configure_linker(nlp, encoder=nlp.get_pipe(PIPE_NAME).linker.encoder)


def _prefixed_against_bare(examples) -> bool:
    """Whether every predicted ID has a namespace and no gold ID has one."""
    predicted = [span.kb_id_ for eg in examples for span in eg.predicted.ents if span._.cui]
    gold = [span.kb_id_ for eg in examples for span in eg.reference.ents]
    return bool(predicted) and all(":" in cui for cui in predicted) and not any(":" in cui for cui in gold)


def _load_pipeline(source: Union[str, Path]) -> "Language":
    """spacy.load, with a folder that is no saved pipeline, or a name that
    is neither a folder nor an installed package, said in one line."""
    import spacy

    path = Path(source)
    if path.is_dir() and not (path / "config.cfg").exists():
        msg.fail(f"{path}: not a saved spaCy pipeline (no config.cfg): give the folder that build, index, assemble "
                 "or spacy train wrote", exits=1)
    try:
        return spacy.load(source)
    except OSError as error:  # spaCy's E050: neither a package nor a folder
        msg.fail(str(error), exits=1)


def _check_output_dir(output_dir: Path) -> None:
    """Before any work: a pipeline folder may be replaced, nothing else."""
    if output_dir.exists() and not output_dir.is_dir():
        msg.fail(f"{output_dir} is a file: give a new folder, or the folder of a saved pipeline", exits=1)
    if output_dir.is_dir() and any(output_dir.iterdir()) and not (output_dir / "config.cfg").exists():
        msg.fail(f"{output_dir} is not empty and holds no spaCy pipeline: give an empty or new folder", exits=1)


def _is_pubtator(path: Path) -> bool:
    """A single file that is not a `.concept` file is read as PubTator."""
    return path.is_file() and path.suffix != ".concept"


def _place_encoder(encoder, device: Optional[str], batch_size: Optional[int]) -> None:
    """This run's device and batch size; the saved config keeps its own."""
    if batch_size is not None:
        if batch_size < 1:
            raise typer.BadParameter(f"{batch_size}: must be at least 1", param_hint="--batch-size")
        encoder.batch_size = batch_size
    if device is not None:
        if not hasattr(encoder, "device"):
            raise typer.BadParameter(f"the {type(encoder).__name__} runs on the CPU only", param_hint="--device")
        import torch

        encoder.device = torch.device(device)
        encoder.model.to(encoder.device)


def _vocabulary(source: str, format: Optional[str], read: Callable):
    """`read(source, format)` (a reader block, or a dictionary) with the
    format said, or a bad --dictionary / --format named."""
    from .downloads import is_url

    if not is_url(source) and not Path(source).is_file():
        raise typer.BadParameter(f"{source!r}: no such file", param_hint="--dictionary")
    try:
        result, found = read(source, format)
    except BiosynError as error:
        if format is not None and str(error).startswith("format "):
            raise typer.BadParameter(str(error), param_hint="--format") from None
        raise
    msg.info(f"{source}: read as {found}" + ("" if format else " (detected; --format to choose)"))
    return result, found


def _routes(options: List[str]) -> Dict[str, Path]:
    """`--route Chemical=PATH` options, checked before any slow step."""
    routes = {}
    for option in options:
        label, _, path = option.partition("=")
        if not label.strip() or not path:
            raise typer.BadParameter(f"{option!r}: expected LABEL=PATH", param_hint="--route")
        if not Path(path).exists():
            raise typer.BadParameter(f"{option!r}: {path} does not exist", param_hint="--route")
        routes[label.strip()] = Path(path)
    return routes


def _given(options: dict) -> dict:
    return {key: value for key, value in options.items() if value is not None}
