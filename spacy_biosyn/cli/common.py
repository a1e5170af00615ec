"""What the commands share: the app they register on, the options several
take, and loading a pipeline (or opening its linking engine) or checking an
output folder with an error that names the fault.

spaCy, torch and the pipeline's modules are imported inside the commands
that use them: `--help` and a mistyped option answer in well under a second."""
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Union

import typer
from wasabi import msg

from ..names import DEFAULT_ENCODER_NAME
from ..parts import ONNX_ENCODER, TRANSFORMER_ENCODER

if TYPE_CHECKING:
    from spacy.language import Language

    from ..linking.engine import LinkingEngine

# Every command registers on it; --help lists them all.
app = typer.Typer(
    no_args_is_help=True, add_completion=False,
    help="spacy-biosyn: biomedical entity linking in spaCy pipelines, from vocabularies to trained linkers.",
)

# The PubTator types that become the NER's labels, for convert, evaluate and tune-nil alike.
LABEL_MAP_OPTION = typer.Option(
    None,
    help="Comma-separated TYPE=LABEL renames of the PubTator types; by default NCBI's four types "
    "(SpecificDisease, DiseaseClass, Modifier, CompositeMention) become Disease, as the NER recipes train",
)


def _label_map(option: Optional[str]) -> Dict[str, str]:
    from ..corpora.readers import NCBI_LABELS

    if option is None:
        return NCBI_LABELS
    pairs = [pair.split("=", 1) for pair in option.split(",") if pair]
    if any(len(pair) != 2 or not all(part.strip() for part in pair) for pair in pairs):
        raise typer.BadParameter(f"{option!r}: write TYPE=LABEL pairs, comma-separated", param_hint="--label-map")
    return {kind.strip(): label.strip() for kind, label in pairs}


ENCODER_HELP = f"Hugging Face model name or local folder (default: {DEFAULT_ENCODER_NAME}, the linker's own)"


ID_NAMESPACES_OPTION = typer.Option(
    None, "--id-namespaces",
    help='The namespaces of bare IDs: "medic" (MeSH, then OMIM: spacy_biosyn.MEDIC_NAMESPACES) or a JSON object of '
    "namespace -> the pattern its bare IDs match; IDs are reported with them, and scores compare bare IDs with "
    "prefixed ones (a corpus's OMIM:217000) only through them",
)


def _id_namespaces(option: Optional[str]) -> Optional[Dict[str, str]]:
    import json

    from ..kb.namespaces import MEDIC_NAMESPACES, IdNamespaces

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


def _named_config(name: str, encoder: Optional[str], device: Optional[str], pytorch: bool = False) -> dict:
    """A linker config for the named vocabulary `name`, refused in one line if there is none:
    its encoder in ONNX Runtime, as the component's default, or in PyTorch where asked or a device is named."""
    from ..named.catalogue import named_vocabulary

    try:
        named_vocabulary(name)
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="NAME") from None
    runtime = TRANSFORMER_ENCODER if pytorch or device is not None else ONNX_ENCODER
    block = {"@misc": runtime, "name": encoder or DEFAULT_ENCODER_NAME}
    return {"linker_name": name, "encoder": {**block, **_given({"device": device})}}


def _cell(text: str, width: int = 30) -> str:
    """A table cell: wasabi's columns are 30 wide, and a longer cell pushes its row out of line."""
    return text if len(text) <= width else text[: width - 1] + "…"


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


def _given(options: dict) -> dict:
    return {key: value for key, value in options.items() if value is not None}


def _open_engine(pipeline_dir: Path) -> "LinkingEngine":
    """The pipeline's linking engine, opened from its engine.cfg without
    spaCy; a pipeline saved before engines named their parts is loaded whole."""
    from ..names import PIPE_NAME
    from ..pipeline.saved_engine import has_saved_engine, open_saved_engine

    if has_saved_engine(pipeline_dir):
        return open_saved_engine(pipeline_dir)
    nlp = _load_pipeline(pipeline_dir)
    if PIPE_NAME not in nlp.pipe_names:
        msg.fail(f"the pipeline has no {PIPE_NAME} (its pipes: {', '.join(nlp.pipe_names) or 'none'})", exits=1)
    return nlp.get_pipe(PIPE_NAME).engine
