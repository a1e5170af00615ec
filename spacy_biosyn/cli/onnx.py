"""`onnx`: a pipeline's encoder run with ONNX Runtime."""
import time
from pathlib import Path

import typer
from wasabi import msg

from .common import _check_output_dir, _load_pipeline, app


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

    from ..files.storage import save_pipeline
    from ..pipeline.building import with_onnx_encoder

    _check_output_dir(output_dir)
    nlp = _load_pipeline(pipeline_dir)
    start = time.perf_counter()
    try:
        with_onnx_encoder(nlp, quantize)
    except ValueError as error:
        msg.fail(f"{pipeline_dir}: {error}", exits=1)
    save_pipeline(nlp, output_dir)
    reencoded = f"; names re-encoded in {time.perf_counter() - start:.1f}s" if quantize else ""
    msg.good(f"ONNX encoder{' (int8)' if quantize else ''} saved with the pipeline to {output_dir}{reencoded}")
