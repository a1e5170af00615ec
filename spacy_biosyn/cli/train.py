"""`train`, `train-ner`, `pretrain-encoder`, `train-reranker`: spaCy configs trained, with the command line's overrides."""
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Tuple

import typer
from wasabi import msg

from ..encoders.hub import import_torch
from .common import app

if TYPE_CHECKING:
    from thinc.api import Config

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
    import_torch("training")
    config, gpu_id = _training_config(ctx, config_path, gpu_id)
    from ..training import train as run_training

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

    config, gpu_id = _training_config(ctx, config_path, gpu_id)
    from ..ner.precision import train_ner as run_training

    run_training(config, output, gpu_id, keep=parse_config_overrides(ctx.args), announce=msg.info)


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
    import_torch("pretrain-encoder")
    config, gpu_id = _training_config(ctx, config_path, gpu_id)
    from ..training.alignment import pretrain_encoder as run_alignment

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

    import_torch("train-reranker")
    from ..training.reranking import train_reranker as run_training

    config = load_config(config_path, overrides=parse_config_overrides(ctx.args), interpolate=False)
    run_training(config, output)


def _training_config(ctx: typer.Context, config_path: Path, gpu_id: Optional[int]) -> "Tuple[Config, int]":
    """A training config with the command line's overrides, and the device:
    the first GPU if there is one and --gpu-id is not given (the CPU
    without PyTorch, where spaCy's CNN NER still trains)."""
    from spacy.cli._util import parse_config_overrides
    from spacy.util import load_config
    from thinc.compat import has_torch_cuda_gpu  # False without PyTorch

    if gpu_id is None:
        gpu_id = 0 if has_torch_cuda_gpu else -1
    msg.info(f"Training on {'GPU ' + str(gpu_id) if gpu_id >= 0 else 'the CPU'}")
    return load_config(config_path, overrides=parse_config_overrides(ctx.args), interpolate=False), gpu_id
