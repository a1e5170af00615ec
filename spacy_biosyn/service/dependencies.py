"""What a request sends, read within the service's limits: the FastAPI
dependencies that give the endpoints the served pipeline's parts and
typed requests. A body is counted as it streams in and refused past
max_body_bytes or request_timeout_s; a JSON body is read by Python's JSON
reader, which takes the lone surrogates JSON may spell ("\\ud800") that the
texts then lose as U+FFFD, and validated by its pydantic model; a PubTator
or BioC XML body is read by link-corpus's readers."""
import asyncio
import json
from typing import List, NamedTuple, Type, TypeVar

from fastapi import Depends, Query, Request
from pydantic import BaseModel, ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect

from ..corpora.documents import Document
from ..corpora.readers import Annotation
from ..preprocess.text import without_lone_surrogates
from . import formats
from .batching import LinkingThread
from .errors import ServiceError
from .settings import ServiceSettings
from .schema import LinkRequest, MentionsRequest

Model = TypeVar("Model", bound=BaseModel)


class Texts(NamedTuple):
    """A /link request's documents, read and checked."""

    documents: List[Document]
    # One text, answered as one entity list rather than a list of documents.
    one: bool
    # Their entities are given (a JSON text's, or ?spans=given), not found.
    given: bool


async def service_settings(request: Request) -> ServiceSettings:
    return request.app.state.settings


async def linking_thread(request: Request) -> LinkingThread:
    return request.app.state.linking


async def deadline(settings: ServiceSettings = Depends(service_settings)) -> float:
    """When the answer is due (one time for all of a request's dependencies)."""
    return asyncio.get_running_loop().time() + settings.request_timeout_s


async def within(awaitable, due: float, status: int, code: str, message: str):
    try:
        return await asyncio.wait_for(awaitable, max(due - asyncio.get_running_loop().time(), 0.001))
    except asyncio.TimeoutError:
        raise ServiceError(status, code, message) from None


async def answer_type(request: Request) -> str:
    """The media type the answer is written in, as Accept asks."""
    answer = formats.answer_type(request.headers.get("accept"))
    if answer is None:
        raise ServiceError(406, "not_acceptable", f"Accept {request.headers.get('accept')!r}: this service answers "
                           f"{', '.join(formats.ANSWER_TYPES)}")
    return answer


async def spans_given(spans: str = Query(
        "found", json_schema_extra={"enum": ["found", "given"]},
        description="given: a PubTator or BioC body's annotations are the entities, linked in their document by the "
                    "linker alone (as link-corpus --gold-spans); a JSON body gives its own 'entities'")) -> bool:
    if spans not in ("found", "given"):
        raise ServiceError(422, "invalid_request", f"spans={spans!r:.40}: 'found' (the pipeline finds the "
                           "entities) or 'given' (a PubTator or BioC body's annotations are the entities)")
    return spans == "given"


async def bounded_body(request: Request, due: float = Depends(deadline),
                       settings: ServiceSettings = Depends(service_settings)) -> bytes:
    """The body, refused past max_body_bytes (declared, or as it streams
    in) and past the request's time limit."""
    most = settings.max_body_bytes
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > most:
        raise ServiceError(413, "body_too_large", f"the body is {int(declared):,} bytes, over the limit of "
                           f"{most:,} (max_body_bytes): send fewer or shorter texts per request")

    async def chunks() -> bytes:
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > most:
                    raise ServiceError(413, "body_too_large", f"the body is over the limit of {most:,} "
                                       "bytes (max_body_bytes): send fewer or shorter texts per request")
        except ClientDisconnect:  # nobody is left to answer: nothing is linked, nothing logged as a failure
            raise ServiceError(400, "client_disconnected", "the client left before its body arrived") from None
        return bytes(body)

    return await within(chunks(), due, 408, "request_timeout",
                        f"the body did not arrive within {settings.request_timeout_s:g} s (request_timeout_s)")


async def link_request(request: Request, given: bool = Depends(spans_given), body: bytes = Depends(bounded_body),
                       settings: ServiceSettings = Depends(service_settings)) -> Texts:
    """The documents of a /link body: JSON (a text, with its entities or
    not, or texts), plain text, or PubTator or BioC XML documents, whose
    annotations are the entities where `given`."""
    content_type = formats.media_type(request.headers.get("content-type"))
    max_chars = request.app.state.max_text_chars
    if content_type in (formats.JSON, ""):
        asked = parsed(body, LinkRequest)
        one = asked.text is not None
        texts = [asked.text] if one else asked.texts
        if asked.entities is not None:
            count(1, settings.max_texts, "texts", "max_texts")
            text = checked_texts(texts, "text", max_chars)[0]
            spans = [Annotation(e.start, e.end, text[e.start:e.end], e.label, "") for e in asked.entities]
            return Texts([checked_spans(Document("1", text, spans), "entities")], True, True)
    elif content_type == formats.PLAIN:
        try:
            texts, one = [body.decode("utf-8-sig")], True
        except UnicodeDecodeError as error:
            raise ServiceError(400, "invalid_body", f"the body is not UTF-8 text (byte {error.start + 1})") from None
    elif content_type in formats.BODY_TYPES:
        try:  # off the event loop, which keeps answering others meanwhile
            documents = await run_in_threadpool(formats.read_body, body, content_type, settings.max_texts)
        except ValueError as error:
            raise ServiceError(400, "invalid_body", str(error)) from None
        count(len(documents), settings.max_texts, "documents", "max_texts")
        texts = checked_texts([d.text for d in documents], "document", max_chars)
        documents = [d._replace(text=text) for d, text in zip(documents, texts)]
        if given:
            return Texts([checked_spans(d, f"document {d.id!r:.40}") for d in documents], False, True)
        return Texts(documents, False, False)
    else:
        raise ServiceError(415, "unsupported_media_type", f"Content-Type {content_type!r}: send one of "
                           f"{', '.join(formats.BODY_TYPES)}")
    count(len(texts), settings.max_texts, "texts", "max_texts")
    texts = checked_texts(texts, "text" if one else "texts", max_chars)
    return Texts([Document(str(number), text, None) for number, text in enumerate(texts, start=1)], one, False)


async def json_body(request: Request) -> None:
    content_type = formats.media_type(request.headers.get("content-type"))
    if content_type not in (formats.JSON, ""):
        raise ServiceError(415, "unsupported_media_type", f"Content-Type {content_type!r}: send {formats.JSON}")


async def mentions_request(request: Request, _: None = Depends(json_body), body: bytes = Depends(bounded_body),
                           settings: ServiceSettings = Depends(service_settings)) -> List[str]:
    """The mention strings of a /link/mentions body, checked."""
    mentions = parsed(body, MentionsRequest).mentions
    count(len(mentions), settings.max_mentions, "mentions", "max_mentions")
    return checked_texts(mentions, "mentions", request.app.state.max_text_chars)


def parsed(body: bytes, model: Type[Model]) -> Model:
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError is a ValueError
        reason = "nested too deep" if isinstance(error, RecursionError) else str(error)
        raise ServiceError(400, "invalid_json", f"the body is not JSON: {reason}") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        said = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in error.errors()[:5])
        raise ServiceError(422, "invalid_request", said) from None


def checked_texts(texts: List[str], what: str, max_chars: int) -> List[str]:
    for number, text in enumerate(texts):
        if len(text) > max_chars:
            where = what if len(texts) == 1 else f"{what}[{number}]"
            raise ServiceError(422, "text_too_long", f"{where} is {len(text):,} characters, over the limit of "
                               f"{max_chars:,} (max_text_chars, nlp.max_length): split it")
    return [without_lone_surrogates(text) for text in texts]


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
