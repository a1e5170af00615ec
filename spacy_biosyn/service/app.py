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
read an answer unless CORS origins are given."""
import asyncio
import json
import logging
import platform
from contextlib import asynccontextmanager
from importlib import metadata, resources
from pathlib import Path
from typing import Dict, List, Optional

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ..corpora.documents import Document
from ..corpora.readers import Annotation
from ..corpus_linking.worker import check_pipeline
from ..errors import BiosynError
from ..kb.namespaces import MEDIC_NAMESPACES
from ..linking.rows import ROW_FIELDS
from ..names import PIPE_NAME
from ..pipeline.concept_pages import URL_TEMPLATES
from ..preprocess.text import without_lone_surrogates
from . import formats
from .batching import ComponentFailed, LinkingStopped, LinkingThread, warm_up
from .limits import ServiceLimits
from .schema import (ErrorBody, Health, Info, LinkedMentions, LinkedText, LinkedTexts, LinkRequest,
                     MentionsRequest)

log = logging.getLogger("spacy_biosyn.service")
PAGE_FILES = {"": ("index.html", "text/html; charset=utf-8"), "page.js": ("page.js", "text/javascript; charset=utf-8"),
              "page.css": ("page.css", "text/css; charset=utf-8")}


class ServiceError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _errors(*statuses: int) -> Dict[int, dict]:
    return {status: {"model": ErrorBody} for status in statuses}


def create_app(pipeline: Path, limits: Optional[ServiceLimits] = None) -> FastAPI:
    """The service of the saved pipeline in `pipeline`, loaded now."""
    import spacy

    limits = limits or ServiceLimits()
    pipeline = Path(pipeline)
    check_pipeline(pipeline, gold_spans=True)
    try:
        check_pipeline(pipeline, gold_spans=False)
        no_ner = None
    except BiosynError as error:
        # the error names the folder, which no answer tells
        no_ner = (f"{str(error).replace(str(pipeline), 'the pipeline')}; this service links the entities a "
                  "request gives ({\"text\", \"entities\": [...]}, or a PubTator or BioC body with ?spans=given), "
                  "and mention strings at POST /link/mentions")
    nlp = spacy.load(pipeline)
    # A named vocabulary not yet cached is built now, not inside the first request's time limit.
    nlp.get_pipe(PIPE_NAME).engine.ensure_ready()
    warm_up(nlp)
    linking = LinkingThread(nlp, limits.batch_texts)
    info = _info(nlp, limits)
    page = {name: (resources.files(__package__).joinpath("page", file).read_bytes(), kind)
            for name, (file, kind) in PAGE_FILES.items()}
    max_chars = min(limits.max_text_chars, nlp.max_length)

    app = FastAPI(
        title="spacy-biosyn", version=info["versions"]["spacy-biosyn"],
        summary="Biomedical entity linking: each entity's concept ID, score and ranked candidates",
        docs_url=None, redoc_url=None,  # their pages load scripts from a CDN; /openapi.json is the schema
        lifespan=lambda app: _stopping(linking),
    )

    @app.middleware("http")
    async def _checked_host(request: Request, call_next):
        host = request.headers.get("host", "")
        if not limits.allows_host(host):
            return error_response(400, "host_not_allowed", f"Host {host!r:.80}: this service answers for "
                                  f"{', '.join(limits.allowed_hosts)} (serve --allowed-hosts)")
        return await call_next(request)

    if limits.cors_origins:
        app.add_middleware(CORSMiddleware, allow_origins=list(limits.cors_origins), allow_methods=["GET", "POST"],
                           allow_headers=["content-type", "accept"])

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, error: ServiceError):
        return error_response(error.status, error.code, error.message)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, error: HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        return error_response(error.status_code, code, f"{request.method} {request.url.path}: {error.detail}")

    @app.exception_handler(ComponentFailed)
    async def _component_failed(request: Request, error: ComponentFailed):
        return error_response(500, "internal_error", str(error))  # logged with its id by the linking thread

    @app.exception_handler(LinkingStopped)
    async def _stopped(request: Request, error: LinkingStopped):
        return error_response(503, "not_linking", str(error))

    @app.exception_handler(Exception)
    async def _failed(request: Request, error: Exception):
        log.exception("%s %s failed", request.method, request.url.path)
        return error_response(500, "internal_error", f"linking failed ({type(error).__name__}); the server's log has the details")

    async def within(awaitable, deadline: float, status: int, code: str, message: str):
        try:
            return await asyncio.wait_for(awaitable, max(deadline - asyncio.get_running_loop().time(), 0.001))
        except asyncio.TimeoutError:
            raise ServiceError(status, code, message) from None

    async def read_body(request: Request, deadline: float) -> bytes:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limits.max_body_bytes:
            raise ServiceError(413, "body_too_large", f"the body is {int(declared):,} bytes, over the limit of "
                               f"{limits.max_body_bytes:,} (max_body_bytes): send fewer or shorter texts per request")

        async def chunks() -> bytes:
            body = bytearray()
            try:
                async for chunk in request.stream():
                    body += chunk
                    if len(body) > limits.max_body_bytes:
                        raise ServiceError(413, "body_too_large", f"the body is over the limit of {limits.max_body_bytes:,} "
                                           "bytes (max_body_bytes): send fewer or shorter texts per request")
            except ClientDisconnect:  # nobody is left to answer: nothing is linked, nothing logged as a failure
                raise ServiceError(400, "client_disconnected", "the client left before its body arrived") from None
            return bytes(body)

        return await within(chunks(), deadline, 408, "request_timeout",
                            f"the body did not arrive within {limits.request_timeout_s:g} s (request_timeout_s)")

    def checked_texts(texts: List[str], what: str) -> List[str]:
        for number, text in enumerate(texts):
            if len(text) > max_chars:
                where = what if len(texts) == 1 else f"{what}[{number}]"
                raise ServiceError(422, "text_too_long", f"{where} is {len(text):,} characters, over the limit of "
                                   f"{max_chars:,} (max_text_chars, nlp.max_length): split it")
        return [without_lone_surrogates(text) for text in texts]

    async def documents_of(body: bytes, content_type: str, given: bool) -> "tuple[List[Document], bool, bool]":
        """The request's documents, whether it gave one text (answered as
        one), and whether it gave their entities: a JSON text's own, or
        (`given`) a PubTator or BioC body's annotations."""
        if content_type in (formats.JSON, ""):
            request = parsed(body, LinkRequest)
            texts = [request.text] if request.text is not None else request.texts
            one = request.text is not None
            if request.entities is not None:
                count(1, limits.max_texts, "texts", "max_texts")
                text = checked_texts(texts, "text")[0]
                spans = [Annotation(e.start, e.end, text[e.start:e.end], e.label, "") for e in request.entities]
                return [checked_spans(Document("1", text, spans), "entities")], True, True
        elif content_type == formats.PLAIN:
            try:
                texts, one = [body.decode("utf-8-sig")], True
            except UnicodeDecodeError as error:
                raise ServiceError(400, "invalid_body", f"the body is not UTF-8 text (byte {error.start + 1})") from None
        elif content_type in formats.BODY_TYPES:
            try:  # off the event loop, which keeps answering others meanwhile
                documents = await run_in_threadpool(formats.read_body, body, content_type, limits.max_texts)
            except ValueError as error:
                raise ServiceError(400, "invalid_body", str(error)) from None
            count(len(documents), limits.max_texts, "documents", "max_texts")
            documents = [d._replace(text=t) for d, t in zip(documents, checked_texts([d.text for d in documents], "document"))]
            if given:
                return [checked_spans(d, f"document {d.id!r:.40}") for d in documents], False, True
            return documents, False, False
        else:
            raise ServiceError(415, "unsupported_media_type", f"Content-Type {content_type!r}: send one of "
                               f"{', '.join(formats.BODY_TYPES)}")
        count(len(texts), limits.max_texts, "texts", "max_texts")
        texts = checked_texts(texts, "text" if one else "texts")
        return [Document(str(number), text, None) for number, text in enumerate(texts, start=1)], one, False

    def checked_spans(document: Document, where: str) -> Document:
        """The document, its given spans refused where one lies outside its
        text, is empty or overlaps another: each is linked whole, alone."""
        spans = sorted(enumerate(document.annotations or []), key=lambda item: (item[1].start, item[1].end))
        for number, (i, span) in enumerate(spans):
            named = f"{where}: entity {i} ({span.start}-{span.end})"
            if not 0 <= span.start < span.end <= len(document.text):
                raise ServiceError(422, "invalid_span", f"{named} does not lie inside the text of "
                                   f"{len(document.text):,} characters with start < end")
            if number and span.start < spans[number - 1][1].end:
                j, other = spans[number - 1]
                raise ServiceError(422, "invalid_span", f"{named} overlaps entity {j} ({other.start}-{other.end}): "
                                   "give each span once, not nested")
        return document

    def count(found: int, most: int, what: str, limit: str) -> None:
        if found > most:
            raise ServiceError(422, "too_many", f"{found:,} {what} in one request, over the limit of {most:,} ({limit}): "
                               "send them in several requests")

    @app.post("/link", summary="Find and link the entities of texts", responses={
        200: {"model": LinkedTexts, "description": "`LinkedText` for a request with 'text', `LinkedTexts` otherwise; "
              "PubTator or BioC XML where Accept asks for text/x-pubtator or application/xml"},
        **_errors(400, 406, 408, 409, 413, 415, 422, 504)}, openapi_extra={"parameters": [{
            "name": "spans", "in": "query", "required": False,
            "schema": {"type": "string", "enum": ["found", "given"], "default": "found"},
            "description": "given: a PubTator or BioC body's annotations are the entities, linked in their document "
                           "by the linker alone (as link-corpus --gold-spans); a JSON body gives its own 'entities'"}],
            "requestBody": {"required": True, "content": {
            formats.JSON: {"schema": LinkRequest.model_json_schema()},
            formats.PLAIN: {"schema": {"type": "string", "description": "One text"}},
            formats.PUBTATOR: {"schema": {"type": "string", "description": "PubTator documents (title and abstract lines)"}},
            formats.BIOC_XML: {"schema": {"type": "string", "description": "A BioC XML collection"}}}}})
    async def link(request: Request) -> Response:
        deadline = asyncio.get_running_loop().time() + limits.request_timeout_s
        answer = formats.answer_type(request.headers.get("accept"))
        if answer is None:
            raise ServiceError(406, "not_acceptable", f"Accept {request.headers.get('accept')!r}: this service answers "
                               f"{', '.join(formats.ANSWER_TYPES)}")
        spans = request.query_params.get("spans", "found")
        if spans not in ("found", "given"):
            raise ServiceError(422, "invalid_request", f"spans={spans!r:.40}: 'found' (the pipeline finds the "
                               "entities) or 'given' (a PubTator or BioC body's annotations are the entities)")
        body = await read_body(request, deadline)
        content_type = formats.media_type(request.headers.get("content-type"))
        documents, one, given = await documents_of(body, content_type, spans == "given")
        if no_ner and not given:
            raise ServiceError(409, "no_ner", no_ner)
        rows = await within(linking.link_documents(documents, given), deadline, 504, "timeout",
                            f"linking took longer than {limits.request_timeout_s:g} s (request_timeout_s): send fewer texts")
        if answer != formats.JSON:
            try:
                return Response(await run_in_threadpool(formats.write_answer, documents, rows, answer), media_type=answer)
            except ValueError as error:  # what PubTator cannot hold
                raise ServiceError(406, "not_acceptable", f"{error}: PubTator cannot write it; ask for {formats.JSON} "
                                   f"or {formats.BIOC_XML}") from None
        linked = [{"entities": [_row(row) for row in document_rows]} for document_rows in rows]
        return JSONResponse(linked[0] if one else {"documents": linked})

    @app.post("/link/mentions", summary="Link mention strings, each as one whole entity", responses={
        200: {"model": LinkedMentions}, **_errors(400, 408, 413, 415, 422, 504)},
        openapi_extra={"requestBody": {"required": True, "content": {formats.JSON: {"schema": MentionsRequest.model_json_schema()}}}})
    async def link_mentions(request: Request) -> Response:
        deadline = asyncio.get_running_loop().time() + limits.request_timeout_s
        content_type = formats.media_type(request.headers.get("content-type"))
        if content_type not in (formats.JSON, ""):
            raise ServiceError(415, "unsupported_media_type", f"Content-Type {content_type!r}: send {formats.JSON}")
        mentions = parsed(await read_body(request, deadline), MentionsRequest).mentions
        count(len(mentions), limits.max_mentions, "mentions", "max_mentions")
        rows = await within(linking.link_mentions(checked_texts(mentions, "mentions")), deadline, 504, "timeout",
                            f"linking took longer than {limits.request_timeout_s:g} s (request_timeout_s): send fewer mentions")
        return JSONResponse({"mentions": [_row(row) for row in rows]})

    @app.get("/health", response_model=Health, summary="Whether the service links")
    def health() -> JSONResponse:
        if not linking.is_alive():
            raise LinkingStopped()
        return JSONResponse({"status": "ok"})

    @app.get("/info", response_model=Info, summary="The pipeline, its vocabulary, encoder, settings and limits")
    def about() -> Dict[str, object]:
        return info

    @app.get("/", include_in_schema=False)
    def index() -> Response:
        return Response(page[""][0], media_type=page[""][1])

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in page or not name:
            raise ServiceError(404, "not_found", f"/static/{name}: no such file")
        return Response(page[name][0], media_type=page[name][1])

    return app


@asynccontextmanager
async def _stopping(linking: LinkingThread):
    yield
    linking.stop()


def parsed(body: bytes, model: "type[BaseModel]"):
    """A JSON body as `model`; Python's JSON reader, which takes the lone
    surrogates JSON may spell ("\\ud800") that the texts then lose as U+FFFD."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        reason = "nested too deep" if isinstance(error, RecursionError) else str(error)
        raise ServiceError(400, "invalid_json", f"the body is not JSON: {reason}") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ServiceError(422, "invalid_request", _said(error.errors())) from None


def _said(errors: List[dict]) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in errors[:5])


def _row(row: dict) -> dict:
    return {field: row[field] for field in ROW_FIELDS}


def _info(nlp, limits: ServiceLimits) -> Dict[str, object]:
    """What /info says: nothing of the server's folders, only file names."""
    linker = nlp.get_pipe(PIPE_NAME)
    config = nlp.config["components"][PIPE_NAME]
    try:
        names = len(linker.engine.vocabulary().dictionary)
    except ValueError:  # routes alone, no dictionary
        names = None
    encoder = config.get("encoder")
    encoder_info = ({"runtime": encoder.get("@misc", ""), "model": Path(str(encoder.get("name", ""))).name}
                    if isinstance(encoder, dict) else {"runtime": "spacy_biosyn.TransformerEncoder.v1", "model": Path(str(encoder)).name})
    versions = {"spacy-biosyn": metadata.version("spacy-biosyn"), "spacy": metadata.version("spacy"),
                "python": platform.python_version()}
    for runtime in ("onnxruntime", "torch"):
        try:
            versions[runtime] = metadata.version(runtime)
        except metadata.PackageNotFoundError:
            pass
    return {
        "pipeline": {"name": f"{nlp.meta.get('lang')}_{nlp.meta.get('name')}", "version": nlp.meta.get("version"),
                     "lang": nlp.lang, "components": nlp.pipe_names},
        "linker": {
            "vocabulary": config.get("linker_name") or Path(str(config.get("dictionary") or "")).name or None,
            "names": names,
            "encoder": encoder_info,
            "settings": linker.settings.model_dump(mode="json"),
            # nil_threshold as each route resolved it ("auto" a number, or none), and why
            "nil": {route: {"threshold": rule.threshold, "source": rule.source,
                            "model": None if rule.model is None else rule.model.source}
                    for route, rule in linker.engine.nil_rules().items()},
        },
        "limits": limits.model_dump(),
        "versions": versions,
        # kb_url's tables, for the page to link IDs as kb_url does
        "concept_pages": {"templates": URL_TEMPLATES, "bare_ids": MEDIC_NAMESPACES},
    }
