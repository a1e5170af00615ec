"""`onnx`: a pipeline run with ONNX Runtime, without PyTorch."""
import time
from pathlib import Path

import typer
from wasabi import msg

from .common import _check_output_dir, _load_pipeline, app


@app.command()
def onnx(
    pipeline_dir: Path = typer.Argument(..., exists=True, help="A saved pipeline with a biosyn_linker, a transformer NER or both"),
    output_dir: Path = typer.Argument(..., help="Folder for the pipeline with the ONNX encoder"),
    weights: str = typer.Option(
        None, "--weights", help="How the linker's graph stores its weights: fp32 (the default from PyTorch: the "
        "names' vectors stay), compact (fp16 and int8 embeddings, a third of the size) or int8 (faster, less "
        "exact); other than fp32 from PyTorch, every name is re-encoded. A transformer NER's graph is stored compact"
    ),
) -> None:
    """Run the pipeline with ONNX Runtime: the linker's encoder and the
    transformer NER's BERT exported to ONNX, so that loading it imports
    no PyTorch. The pipeline then links but does not train. A linker in
    ONNX Runtime already has its graph's weights stored anew with --weights."""

    from ..encoders.graph_weights import WEIGHTS
    from ..encoders.onnx import OnnxEncoder
    from ..files.storage import save_pipeline
    from ..names import PIPE_NAME
    from ..ner.onnx_export import with_onnx_ner
    from ..pipeline.building import with_onnx_encoder

    if weights not in (None, *WEIGHTS):
        raise typer.BadParameter(f"{weights!r}: choose one of {', '.join(WEIGHTS)}", param_hint="--weights")
    _check_output_dir(output_dir)
    nlp = _load_pipeline(pipeline_dir)
    start = time.perf_counter()
    try:
        done = [f"the NER's BERT ({name})" for name in with_onnx_ner(nlp)]
        linker = nlp.get_pipe(PIPE_NAME) if PIPE_NAME in nlp.pipe_names else None
        if linker is None and weights:
            raise ValueError(f"--weights is for a {PIPE_NAME}'s graph, and the pipeline has none")
        reencoded = False
        # A linker already in ONNX Runtime is no error where the NER was converted.
        if linker is not None and (weights or not done or not isinstance(linker.engine.encoder, OnnxEncoder)):
            reencoded = with_onnx_encoder(nlp, weights)
            done.append(f"the linker's encoder ({linker.engine.encoder.stored_weights} weights)")
    except ValueError as error:
        msg.fail(f"{pipeline_dir}: {error}", exits=1)
    if not done:
        msg.fail(f"{pipeline_dir}: no {PIPE_NAME} and no transformer NER: nothing to convert", exits=1)
    save_pipeline(nlp, output_dir)
    took = f"; names re-encoded in {time.perf_counter() - start:.1f}s" if reencoded else ""
    msg.good(f"{' and '.join(done)} in ONNX Runtime, saved with the pipeline to {output_dir}{took}")
