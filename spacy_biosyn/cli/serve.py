"""`serve`: a saved pipeline as a JSON API and a page (service/app.py)."""
import os
from pathlib import Path

import typer
from wasabi import msg

from ..service.limits import ServiceLimits
from .common import app

_PIPELINE, _LIMITS = "SPACY_BIOSYN_SERVE_PIPELINE", "SPACY_BIOSYN_SERVE_LIMITS"
_DEFAULT = ServiceLimits()


@app.command()
def serve(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved pipeline (NER + linker, or a linker for /link/mentions)"),
    host: str = typer.Option("127.0.0.1", help="The address to listen on; 0.0.0.0 opens it to every network the machine is on"),
    port: int = typer.Option(8080, min=1, max=65535),
    workers: int = typer.Option(1, min=1, help="Processes, each with the pipeline loaded once; on a CPU, about one per 2 cores"),
    max_body_bytes: int = typer.Option(_DEFAULT.max_body_bytes, min=1_000, help="The largest request body"),
    max_text_chars: int = typer.Option(_DEFAULT.max_text_chars, min=1, help="The longest text (nlp.max_length caps it too)"),
    max_texts: int = typer.Option(_DEFAULT.max_texts, min=1, help="Texts or documents in one request"),
    max_mentions: int = typer.Option(_DEFAULT.max_mentions, min=1, help="Mention strings in one request"),
    request_timeout: float = typer.Option(_DEFAULT.request_timeout_s, min=0.001, help="Seconds from a request's first byte to its answer"),
    batch_texts: int = typer.Option(_DEFAULT.batch_texts, min=1, help="Texts of concurrent requests linked in one nlp.pipe call"),
) -> None:
    """Serve a pipeline: POST /link (text, PubTator or BioC XML in and out),
    POST /link/mentions, GET /health, GET /info, GET /openapi.json, and a
    page at / that shows each entity's concept and candidates. Needs the
    `serve` extra: pip install "spacy-biosyn\\[serve]"."""
    try:
        import fastapi  # noqa: F401  (the workers' app; missing, each worker would fail with a traceback)
        import uvicorn
    except ImportError as error:
        msg.fail(f'serving needs the serve extra ({error.name} is missing): pip install "spacy-biosyn[serve]"', exits=1)
    limits = ServiceLimits(max_body_bytes=max_body_bytes, max_text_chars=max_text_chars, max_texts=max_texts,
                           max_mentions=max_mentions, request_timeout_s=request_timeout, batch_texts=batch_texts)
    # Each worker process builds its app from these (uvicorn starts workers by spawning, not forking).
    os.environ[_PIPELINE] = str(pipeline_dir.resolve())
    os.environ[_LIMITS] = limits.model_dump_json()
    uvicorn.run("spacy_biosyn.cli.serve:app_from_environment", factory=True, host=host, port=port, workers=workers,
                log_level="info", timeout_graceful_shutdown=int(request_timeout) + 1)


def app_from_environment():
    """The app of the pipeline `serve` named, for each uvicorn worker."""
    from ..service.app import create_app

    return create_app(Path(os.environ[_PIPELINE]), ServiceLimits.model_validate_json(os.environ[_LIMITS]))
