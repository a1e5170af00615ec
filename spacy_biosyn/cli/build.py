"""`build` and `index`: a vocabulary indexed into a pipeline, new or saved."""
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, List, Optional

import typer
from wasabi import msg

from ..errors import BiosynError
from ..names import DEFAULT_ENCODER_NAME, PIPE_NAME
from ..parts import EXACT_INDEX, FAISS_INDEX, SIZED_INDEX, TRANSFORMER_ENCODER
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

if TYPE_CHECKING:
    from spacy.language import Language

INDEXES = {"sized": SIZED_INDEX, "exact": EXACT_INDEX, "faiss": FAISS_INDEX}


DICTIONARY_HELP = "The vocabulary: a file or its URL (fetched once into a cache), in --format"


FORMAT_HELP = "biosyn, medic, ctd-chemicals, umls, obo, mesh or scispacy (default: detected from the file, and said)"


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
    import spacy

    from ..kb.vocabularies import read_vocabulary_file

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
    encoder_block = {"@misc": TRANSFORMER_ENCODER, "name": encoder}
    if from_biosyn is not None:
        from ..encoders.biosyn_checkpoint import PICKLED_TFIDF_FILE, read_biosyn_checkpoint

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

    from ..kb.vocabularies import read_vocabulary_file
    from ..pipeline.settings import configure_linker

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


def _index_and_save(nlp: "Language", index: Callable[[], None], output_dir: Path) -> None:
    """Run the indexing step, timed, then save the pipeline in one piece:
    a pipeline already at `output_dir` is replaced only once the new one is
    whole. A folder holding anything else is left alone."""
    from ..storage import save_pipeline

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
    from ..pipeline.settings import configure_linker

    configure_linker(nlp, encoder=nlp.get_pipe(PIPE_NAME).linker.encoder)


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
    from ..downloads import is_url

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
