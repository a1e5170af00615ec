"""GET /health, GET /info and the page at / (its scripts and styles are
static files, mounted at /static by the app)."""
import platform
from importlib import metadata, resources
from pathlib import Path
from typing import Dict

import srsly
from confection import Config
from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from ...kb.namespaces import MEDIC_NAMESPACES
from ...linking.engine import LinkingEngine
from ...names import PIPE_NAME
from ...pipeline.concept_pages import URL_TEMPLATES
from ..batching import LinkingStopped, LinkingThread
from ..dependencies import linking_thread
from ..settings import ServiceSettings
from ..schema import Health, Info

router = APIRouter()
PAGE = resources.files("spacy_biosyn.service").joinpath("page")


@router.get("/health", response_model=Health, summary="Whether the service links")
async def health(linking: LinkingThread = Depends(linking_thread)) -> Dict[str, str]:
    if not linking.is_alive():
        raise LinkingStopped()
    return {"status": "ok"}


@router.get("/info", response_model=Info, summary="The pipeline, its vocabulary, encoder, settings and limits")
async def info(request: Request) -> Dict[str, object]:
    return request.app.state.info


@router.get("/", include_in_schema=False)
async def index() -> Response:
    return Response(PAGE.joinpath("index.html").read_bytes(), media_type="text/html; charset=utf-8")


def describe(pipeline: Path, engine: LinkingEngine, settings: ServiceSettings) -> Dict[str, object]:
    """What /info says of the saved pipeline in `pipeline`, read from its
    meta.json and config.cfg as spaCy reads them (without spaCy), and of its
    linker's engine: nothing of the server's folders, only file names."""
    config = Config().from_disk(pipeline / "config.cfg", interpolate=False)
    meta = srsly.read_json(pipeline / "meta.json") if (pipeline / "meta.json").is_file() else {}
    block = config["components"][PIPE_NAME]
    try:
        names = len(engine.vocabulary().dictionary)
    except ValueError:  # routes alone, no dictionary
        names = None
    encoder = block.get("encoder")
    encoder_info = ({"runtime": encoder.get("@misc", ""), "model": Path(str(encoder.get("name", ""))).name}
                    if isinstance(encoder, dict) else {"runtime": "spacy_biosyn.TransformerEncoder.v1", "model": Path(str(encoder)).name})
    versions = {"spacy-biosyn": metadata.version("spacy-biosyn")}
    for package in ("spacy", "python", "onnxruntime", "torch"):
        try:
            versions[package] = platform.python_version() if package == "python" else metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    disabled = set(config["nlp"].get("disabled") or ())
    return {
        "pipeline": {"name": f"{meta.get('lang')}_{meta.get('name')}", "version": meta.get("version"),
                     "lang": config["nlp"]["lang"], "components": [c for c in config["nlp"]["pipeline"] if c not in disabled]},
        "linker": {
            "vocabulary": block.get("linker_name") or Path(str(block.get("dictionary") or "")).name or None,
            "names": names,
            "encoder": encoder_info,
            "settings": engine.settings.model_dump(mode="json"),
            # nil_threshold as each route resolved it ("auto" a number, or none), and why
            "nil": {route: {"threshold": rule.threshold, "source": rule.source,
                            "model": None if rule.model is None else rule.model.source}
                    for route, rule in engine.nil_rules().items()},
        },
        "limits": settings.model_dump(),
        "versions": versions,
        # kb_url's tables, for the page to link IDs as kb_url does
        "concept_pages": {"templates": URL_TEMPLATES, "bare_ids": MEDIC_NAMESPACES},
    }
