"""`build` and `index`: a vocabulary indexed into a pipeline, new or saved."""
from pathlib import Path
from typing import Callable, Dict, List, Optional

import typer
from wasabi import msg

from ..errors import BiosynError
from ..files.fetching import redacted
from ..names import DEFAULT_ENCODER_NAME, PIPE_NAME
from ..parts import EXACT_INDEX, FAISS_INDEX, ONNX_ENCODER, SIZED_INDEX, TRANSFORMER_ENCODER
from ..vocabularies.formats import FORMAT_HELP
from .common import (
    ENCODER_HELP,
    ID_NAMESPACES_OPTION,
    _check_output_dir,
    _given,
    _id_namespaces,
    _load_pipeline,
    _named_config,
    app,
)

INDEXES = {"sized": SIZED_INDEX, "exact": EXACT_INDEX, "faiss": FAISS_INDEX}


DICTIONARY_HELP = "The vocabulary: a file or its URL (fetched once into a cache), in --format"


ROUTE_HELP = (
    "LABEL=PATH: link spans of LABEL against their own vocabulary, a CUI||name file or a folder "
    "of .concept files whose mentions become the names (repeatable)"
)


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
    from ..pipeline.building import build_pipeline
    from ..vocabularies.formats import read_vocabulary_file

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
        _check_output_dir(output_dir)
        return _report(build_pipeline({**config, **settings}, output_dir, lang=lang), output_dir)
    if encoder is not None and from_biosyn is not None:
        raise typer.BadParameter("give --encoder or --from-biosyn, not both", param_hint="--encoder")
    encoder = encoder or DEFAULT_ENCODER_NAME
    if index not in INDEXES:
        raise typer.BadParameter(f"{index!r}: choose one of {', '.join(INDEXES)}", param_hint="--index")
    routes = _routes(route)
    vocabulary, format = _vocabulary(dictionary, format, read_vocabulary_file)
    encoder_block = {"@misc": TRANSFORMER_ENCODER if device is not None else ONNX_ENCODER, "name": encoder}
    if from_biosyn is not None:
        from ..encoders.biosyn_checkpoint import PICKLED_TFIDF_FILE, read_biosyn_checkpoint

        checkpoint = read_biosyn_checkpoint(from_biosyn)
        encoder_block = checkpoint.encoder
        settings.setdefault("sparse_weight", checkpoint.sparse_weight)
        msg.info(f"{from_biosyn}: BioSyn's [CLS] vectors and inner product, lambda {checkpoint.sparse_weight:.4f}")
        if checkpoint.skipped_pickle:
            msg.info(f"{PICKLED_TFIDF_FILE} is not read (unpickling runs code): the tf-idf is fitted on the dictionary, as BioSyn fits it")
    # Options left unset keep the component's and encoder's own defaults.
    encoder_block.update(_given({"pooling": pooling, "similarity": similarity, "device": device, "batch_size": batch_size}))
    config = dict(settings)
    config.update(
        encoder=encoder_block,
        index={"@misc": INDEXES[index]},
        dictionary_labels=dictionary_labels.split(",") if dictionary_labels else None,
    )
    _check_output_dir(output_dir)
    report = build_pipeline(config, output_dir, lang=lang, dictionary=vocabulary, routes=routes, synonyms=synonyms,
                            preferred_ids_from=preferred_ids_from)
    _report(report, output_dir)


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

    from ..pipeline.building import reindex_pipeline
    from ..vocabularies.formats import read_vocabulary_file

    namespaces = _id_namespaces(id_namespaces)
    vocabulary, _ = _vocabulary(dictionary, format, read_vocabulary_file)
    routes = _routes(route)
    if routes_dir is not None:
        routes.update((entry.stem, entry) for entry in sorted(routes_dir.iterdir()) if not entry.name.startswith("."))
    _check_output_dir(output_dir)
    nlp = _load_pipeline(pipeline_dir)
    _place_encoder(nlp.get_pipe(PIPE_NAME).engine.encoder, device, batch_size)
    report = reindex_pipeline(nlp, output_dir, vocabulary, routes=routes, preferred_ids_from=preferred_ids_from,
                              id_namespaces=namespaces)
    _report(report, output_dir)


def _report(report, output_dir: Path) -> None:
    msg.good(f"Indexed {report.names} names in {report.seconds:.1f}s ({report.names / report.seconds:.0f} names/s); "
             f"pipeline saved to {output_dir}")
    if report.nil_default is not None:
        msg.info(f"nil_threshold \"auto\" is {report.nil_default.threshold} here: {report.nil_default.source}")


def _place_encoder(encoder, device: Optional[str], batch_size: Optional[int]) -> None:
    """This run's device and batch size; the saved config keeps its own."""
    if batch_size is not None:
        if batch_size < 1:
            raise typer.BadParameter(f"{batch_size}: must be at least 1", param_hint="--batch-size")
        encoder.batch_size = batch_size
    if device is not None:
        if not hasattr(encoder, "move_to"):
            raise typer.BadParameter(f"the {type(encoder).__name__} runs on the CPU only", param_hint="--device")
        encoder.move_to(device)


def _vocabulary(source: str, format: Optional[str], read: Callable):
    """`read(source, format)` (a reader block, or a dictionary) with the
    format said, or a bad --dictionary / --format named."""
    from ..files.fetching import is_url

    if not is_url(source) and not Path(source).is_file():
        raise typer.BadParameter(f"{source!r}: no such file", param_hint="--dictionary")
    try:
        result, found = read(source, format)
    except BiosynError as error:
        if format is not None and str(error).startswith("format "):
            raise typer.BadParameter(str(error), param_hint="--format") from None
        raise
    msg.info(f"{redacted(str(source))}: read as {found}" + ("" if format else " (detected; --format to choose)"))
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
