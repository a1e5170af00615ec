"""A small text pipeline to serve (an entity ruler stands in for an NER),
the app in process, and the real server on 127.0.0.1 for the tests that
need sockets and a browser."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
import spacy
from helpers import DISEASES, SERVED_PATTERNS

from spacy_biosyn import MEDIC_NAMESPACES



@pytest.fixture(scope="session")
def served_pipeline(tmp_path_factory, tiny_encoder) -> Path:
    folder = tmp_path_factory.mktemp("served")
    (folder / "diseases.txt").write_text(DISEASES)
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    nlp.add_pipe("biosyn_linker", config={"dictionary": str(folder / "diseases.txt"), "encoder": tiny_encoder,
                                          "sparse_weight": 10.0, "id_namespaces": MEDIC_NAMESPACES, "nil_threshold": 0.9})
    nlp.initialize()
    ruler.add_patterns(SERVED_PATTERNS)  # initialize() empties a ruler
    nlp.to_disk(folder / "pipeline")
    return folder / "pipeline"


@pytest.fixture(scope="session")
def client(served_pipeline):
    from fastapi.testclient import TestClient

    from spacy_biosyn.service.app import create_app

    with TestClient(create_app(served_pipeline)) as client:
        yield client


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def live_server(served_pipeline):
    """`python -m spacy_biosyn serve` on a free port of 127.0.0.1, stopped after the session."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "spacy_biosyn", "serve", str(served_pipeline), "--port", str(port), "--request-timeout", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the server stopped: {server.stdout.read()}")
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.2)
    else:
        server.kill()
        pytest.fail("the server did not answer /health within 120 s")
    yield url
    server.terminate()
    output = server.communicate(timeout=30)[0]
    assert "Traceback" not in output, output
