"""`serve`: a saved pipeline as a JSON API and a page (service/app.py)."""
import ipaddress
import os
import socket
from pathlib import Path
from typing import List

import typer
from wasabi import msg

from ..service.limits import LIMITS, LOOPBACK_HOSTS
from .common import app


def _limit(name: str, help: str):
    default, least, most = LIMITS[name]
    return typer.Option(default, min=least, max=most, help=help)


def _host(value: str) -> str:
    if not value.strip():
        raise typer.BadParameter("an empty address would listen on every network the machine is on: give 127.0.0.1, "
                                 "or 0.0.0.0 to open it on purpose")
    return value


@app.command()
def serve(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved pipeline (NER + linker, or a linker for /link/mentions)"),
    host: str = typer.Option("127.0.0.1", callback=_host, help="The address to listen on; 0.0.0.0 opens it to every network the machine is on"),
    port: int = typer.Option(8080, min=1, max=65535),
    workers: int = typer.Option(1, min=1, max=256, help="Processes, each with the pipeline loaded once; on a CPU, about one per 2 cores"),
    allowed_hosts: List[str] = typer.Option([], "--allowed-hosts", help="A name the Host header may give (repeat it; "
                                            "'*' any): by default localhost, 127.0.0.1 and [::1] on a loopback address, "
                                            "any elsewhere"),
    cors_origins: List[str] = typer.Option([], "--cors-origin", help="A web origin whose pages may read the answers "
                                           "(repeat it); none by default"),
    max_body_bytes: int = _limit("max_body_bytes", "The largest request body"),
    max_text_chars: int = _limit("max_text_chars", "The longest text (nlp.max_length caps it too)"),
    max_texts: int = _limit("max_texts", "Texts or documents in one request"),
    max_mentions: int = _limit("max_mentions", "Mention strings in one request"),
    request_timeout: float = _limit("request_timeout_s", "Seconds from a request's first byte to its answer"),
    batch_texts: int = _limit("batch_texts", "Texts of concurrent requests linked in one nlp.pipe call"),
) -> None:
    """Serve a pipeline: POST /link (text, PubTator or BioC XML in and out),
    POST /link/mentions, GET /health, GET /info, GET /openapi.json, and a
    page at / that shows each entity's concept and candidates. Needs the
    `serve` extra: pip install "spacy-biosyn\\[serve]"."""
    try:
        import uvicorn

        # the workers' app; missing, each worker would fail with a traceback
        from ..service.app import PIPELINE_VARIABLE
        from ..service.settings import ServiceSettings
    except ImportError as error:
        msg.fail(f'serving needs the serve extra ({error.name} is missing): pip install "spacy-biosyn[serve]"', exits=1)
    _check_free(host, port)  # before any worker spends its start loading the pipeline
    settings = ServiceSettings(max_body_bytes=max_body_bytes, max_text_chars=max_text_chars, max_texts=max_texts,
                               max_mentions=max_mentions, request_timeout_s=request_timeout, batch_texts=batch_texts,
                               allowed_hosts=tuple(allowed_hosts) or (LOOPBACK_HOSTS if _is_loopback(host) else ("*",)),
                               cors_origins=tuple(cors_origins))
    # Each worker process builds its app from these (uvicorn starts workers by spawning, not forking).
    os.environ.update({PIPELINE_VARIABLE: str(pipeline_dir.resolve()), **settings.as_environment()})
    uvicorn.run("spacy_biosyn.service.app:app_from_settings", factory=True, host=host, port=port, workers=workers,
                log_level="info", timeout_graceful_shutdown=int(request_timeout) + 1)


def _is_loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: whatever it resolves to, the user named it
        return False


def _check_free(host: str, port: int) -> None:
    """Fail in one line where the address cannot be listened on, as uvicorn would bind it."""
    try:
        for family, kind, proto, _, address in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                probe.bind(address)
            return
    except OSError as error:
        msg.fail(f"cannot listen on {host}:{port} ({error.strerror or error}): is another server there? "
                 "Give another --port", exits=1)

