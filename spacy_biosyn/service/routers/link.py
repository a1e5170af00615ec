"""POST /link (texts, PubTator or BioC XML in; JSON, PubTator or BioC XML
out, as Accept asks) and POST /link/mentions: the rows of `link --json`
and `link --mentions --json`."""
from typing import Dict, List, Union

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from .. import formats
from ..batching import LinkingThread
from ..dependencies import Texts, answer_type, deadline, link_request, linking_thread, mentions_request, service_settings, within
from ..errors import ServiceError, documented
from ..settings import ServiceSettings
from ..schema import LinkedMentions, LinkedText, LinkedTexts, LinkRequest, MentionsRequest

router = APIRouter()


def _bodies(**schemas: dict) -> dict:
    """An OpenAPI requestBody of these media types: the endpoints read
    their bodies themselves, bounded (dependencies.bounded_body)."""
    return {"requestBody": {"required": True, "content": {kind: {"schema": schema} for kind, schema in schemas.items()}}}


def _text(description: str) -> dict:
    return {"type": "string", "description": description}


@router.post("/link", summary="Find and link the entities of texts", response_model=Union[LinkedText, LinkedTexts],
             responses={200: {"description": "`LinkedText` for a request with 'text', `LinkedTexts` otherwise; "
                              "PubTator or BioC XML where Accept asks for text/x-pubtator or application/xml"},
                        **documented(400, 406, 408, 409, 413, 415, 422, 504)},
             openapi_extra=_bodies(**{formats.JSON: LinkRequest.model_json_schema(), formats.PLAIN: _text("One text"),
                                      formats.PUBTATOR: _text("PubTator documents (title and abstract lines)"),
                                      formats.BIOC_XML: _text("A BioC XML collection")}))
async def link(request: Request, answer: str = Depends(answer_type), asked: Texts = Depends(link_request),
               due: float = Depends(deadline), linking: LinkingThread = Depends(linking_thread),
               settings: ServiceSettings = Depends(service_settings)) -> Union[Response, Dict[str, object]]:
    state = request.app.state
    if state.no_texts or (state.no_ner and not asked.given):
        raise ServiceError(409, "no_ner", state.no_ner)  # no_texts where that is set (app.py)
    rows = await within(linking.link_documents(asked.documents, asked.given), due, 504, "timeout",
                        f"linking took longer than {settings.request_timeout_s:g} s (request_timeout_s): send fewer texts")
    if answer != formats.JSON:
        try:
            written = await run_in_threadpool(formats.write_answer, asked.documents, rows, answer)
        except ValueError as error:  # what PubTator cannot hold
            raise ServiceError(406, "not_acceptable", f"{error}: PubTator cannot write it; ask for {formats.JSON} "
                               f"or {formats.BIOC_XML}") from None
        return Response(written, media_type=answer)
    linked = [{"entities": document_rows} for document_rows in rows]
    return linked[0] if asked.one else {"documents": linked}


@router.post("/link/mentions", summary="Link mention strings, each as one whole entity", response_model=LinkedMentions,
             responses=documented(400, 408, 413, 415, 422, 504),
             openapi_extra=_bodies(**{formats.JSON: MentionsRequest.model_json_schema()}))
async def link_mentions(mentions: List[str] = Depends(mentions_request), due: float = Depends(deadline),
                        linking: LinkingThread = Depends(linking_thread),
                        settings: ServiceSettings = Depends(service_settings)) -> Dict[str, object]:
    rows = await within(linking.link_mentions(mentions), due, 504, "timeout",
                        f"linking took longer than {settings.request_timeout_s:g} s (request_timeout_s): send fewer mentions")
    return {"mentions": rows}
