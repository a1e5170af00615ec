"""The HTTP face of a saved pipeline: `create_app(pipeline)` loads it once
(per worker process) and answers

- POST /link: a text, several, or a PubTator or BioC XML body -> each
  entity's offsets, label, ID (null for NIL), score and ranked concepts, the
  rows of `link --json`; JSON, PubTator or BioC XML as Accept asks;
- POST /link/mentions: mention strings -> a row each, as `link --mentions`;
- GET /health, GET /info, GET /openapi.json, and the page at /.

Every error is a JSON `{"error": {"code", "message"}}` with its status,
never a traceback; no request names a file or a pipeline, and no answer
the server's folders. A request whose Host header names none of the
allowed hosts is refused (DNS rebinding), and no other site's page may
read an answer unless CORS origins are given.

`app_from_settings` is the app of the pipeline and settings that the
environment names (SPACY_BIOSYN_SERVE_PIPELINE and settings.py's variables):
`serve` starts each uvicorn worker with it, and so can a deployment's own
uvicorn or gunicorn (`uvicorn --factory spacy_biosyn.service.app:app_from_settings`)."""
import mimetypes
import os
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles

from ..errors import BiosynError
from ..pipeline.saved_engine import open_saved_engine
from .batching import LinkingThread
from .errors import add_error_handlers, error_response
from .linkers import EngineLinker, PipelineLinker
from .settings import ENV_PREFIX, ServiceSettings
from .routers import link, meta

PIPELINE_VARIABLE = f"{ENV_PREFIX}PIPELINE"
# RFC 9239's type for scripts, which Python before 3.12 guesses as application/javascript
mimetypes.add_type("text/javascript", ".js")


def create_app(pipeline: Path, settings: Optional[ServiceSettings] = None) -> FastAPI:
    """The service of the saved pipeline in `pipeline`, loaded now: with
    spaCy, the whole pipeline; where spaCy is not installed, its linker's
    engine alone, which links mention strings."""
    settings = settings or ServiceSettings()
    pipeline = Path(pipeline)
    linker = _linker(pipeline)
    # A named vocabulary not yet cached is built now, not inside the first request's time limit.
    linker.engine.ensure_ready()
    linker.warm_up()
    info = meta.describe(pipeline, linker.engine, settings)

    app = FastAPI(
        title="spacy-biosyn", version=info["versions"]["spacy-biosyn"],
        summary="Biomedical entity linking: each entity's concept ID, score and ranked candidates",
        docs_url=None, redoc_url=None,  # their pages load scripts from a CDN; /openapi.json is the schema
        lifespan=_stopping,
    )
    app.state.settings = settings
    app.state.info = info
    app.state.max_text_chars = min(settings.max_text_chars, linker.max_length or settings.max_text_chars)
    # Why no text is linked (POST /link), or why none of its entities is found.
    app.state.no_texts = linker.no_texts
    app.state.no_ner = linker.no_texts or _without_ner(pipeline)
    # Started here, not at the lifespan's start: a test's ASGI transport runs no lifespan.
    app.state.linking = LinkingThread(linker, settings.batch_texts)

    @app.middleware("http")
    async def _checked_host(request: Request, call_next):
        host = request.headers.get("host", "")
        if not settings.allows_host(host):
            return error_response(400, "host_not_allowed", f"Host {host!r:.80}: this service answers for "
                                  f"{', '.join(settings.allowed_hosts)} (serve --allowed-hosts)")
        return await call_next(request)

    if settings.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["content-type", "accept"])
    add_error_handlers(app)
    app.include_router(link.router)
    app.include_router(meta.router)
    app.mount("/static", StaticFiles(packages=[("spacy_biosyn.service", "page")]), name="static")
    return app


def app_from_settings() -> FastAPI:
    """The app of the pipeline and settings the environment names, for each uvicorn worker."""
    try:
        pipeline = os.environ[PIPELINE_VARIABLE]
    except KeyError:
        raise BiosynError(f"{PIPELINE_VARIABLE} is not set: name the saved pipeline to serve") from None
    return create_app(Path(pipeline), ServiceSettings())


def _linker(pipeline: Path) -> EngineLinker:
    """The pipeline loaded by spaCy, or its engine where spaCy is not installed."""
    try:
        import spacy
    except ImportError:
        return EngineLinker(open_saved_engine(pipeline))
    from ..corpus_linking.worker import check_pipeline

    check_pipeline(pipeline, gold_spans=True)
    return PipelineLinker(spacy.load(pipeline))


def _without_ner(pipeline: Path) -> Optional[str]:
    """Why the pipeline cannot find entities in a text, where it cannot."""
    from ..corpus_linking.worker import check_pipeline

    try:
        check_pipeline(pipeline, gold_spans=False)
    except BiosynError as error:
        # the error names the folder, which no answer tells
        return (f"{str(error).replace(str(pipeline), 'the pipeline')}; this service links the entities a "
                "request gives ({\"text\", \"entities\": [...]}, or a PubTator or BioC body with ?spans=given), "
                "and mention strings at POST /link/mentions")
    return None


@asynccontextmanager
async def _stopping(app: FastAPI):
    yield
    app.state.linking.stop()
