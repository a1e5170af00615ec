"""Every error the service answers is a JSON `{"error": {"code", "message"}}`
with its status, never a traceback: `ServiceError` for what the service
refuses, and handlers that give Starlette's own errors (404, 405) and
anything unforeseen the same shape."""
import logging
from typing import Dict

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from .schema import ErrorBody

log = logging.getLogger("spacy_biosyn.service")


class ServiceError(Exception):
    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_response(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def documented(*statuses: int) -> Dict[int, dict]:
    """The OpenAPI `responses` of an endpoint that can answer these errors."""
    return {status: {"model": ErrorBody} for status in statuses}


def add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ServiceError)
    async def _refused(request: Request, error: ServiceError):
        return error_response(error.status, error.code, error.message)

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, error: HTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code, "http_error")
        return error_response(error.status_code, code, f"{request.method} {request.url.path}: {error.detail}")

    @app.exception_handler(Exception)
    async def _failed(request: Request, error: Exception):
        log.exception("%s %s failed", request.method, request.url.path)
        return error_response(500, "internal_error", f"linking failed ({type(error).__name__}); the server's log has the details")
