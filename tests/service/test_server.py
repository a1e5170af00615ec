"""The real server, `python -m spacy_biosyn serve`, on 127.0.0.1 only: a
bounded load (a fixed number of requests from concurrent clients, each
answer checked against `link --json`), clients that send too slowly or
leave mid-request, and the next request answered after each."""
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from helpers import SERVED_ABSTRACT
from typer.testing import CliRunner

# Without the serve extra these tests skip, saying so (a conftest cannot skip its folder).
pytest.importorskip("fastapi", reason="the serve extra is not installed")

from spacy_biosyn.cli import app as cli

CLIENTS, REQUESTS = 8, 48


def texts():
    variants = ["breast cancer", "ovarian cancer", "Huntington disease", "nothing"]
    return [f"Patient {n} has {variants[n % 4]}; the family history notes {variants[(n + 1) % 4]}." for n in range(REQUESTS)]


def test_a_bounded_load_of_concurrent_clients_gets_exactly_link_json(live_server, served_pipeline):
    expected = {}
    for text in texts()[:4] + [SERVED_ABSTRACT]:
        result = CliRunner().invoke(cli, ["link", str(served_pipeline), text, "--json"])
        expected[text] = [json.loads(line) for line in result.output.splitlines()]

    def post(text):
        return text, httpx.post(f"{live_server}/link", json={"text": text}, timeout=60)

    with ThreadPoolExecutor(CLIENTS) as pool:
        answers = list(pool.map(post, texts() + [SERVED_ABSTRACT] * CLIENTS))
    assert len(answers) == REQUESTS + CLIENTS
    for text, answer in answers:
        assert answer.status_code == 200, answer.text
        entities = answer.json()["entities"]
        assert [text[e["start"]:e["end"]] for e in entities] == [e["text"] for e in entities]  # its own text's
        if text in expected:
            assert same_rows(entities, expected[text])


def same_rows(served, printed, tolerance=1e-4):
    """The rows alike, scores to `tolerance`: a score's last bits depend on
    which batch first encoded the mention."""
    def rounded(rows):
        return [{**row, "score": None, "candidates": [{**c, "score": None} for c in row["candidates"]]} for row in rows]

    def scores(rows):
        return [s for row in rows for s in [row["score"] or 0.0] + [c["score"] for c in row["candidates"]]]

    return rounded(served) == rounded(printed) and all(abs(a - b) <= tolerance for a, b in zip(scores(served), scores(printed)))


def raw_request(url: str, head: bytes, body_part: bytes) -> socket.socket:
    host, port = url.removeprefix("http://").split(":")
    connection = socket.create_connection((host, int(port)), timeout=30)
    connection.sendall(head + body_part)
    return connection


def read_answer(connection: socket.socket) -> str:
    """One HTTP answer, head and body, however the packets split it."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += connection.recv(65536)
    return (head + b"\r\n\r\n" + body).decode()


def test_slow_clients_and_clients_that_leave_cost_the_others_nothing(live_server):
    head = (b"POST /link HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
    leaving = raw_request(live_server, head, b'{"text": "breast')
    leaving.close()  # gone mid-body
    slow = raw_request(live_server, head, b'{"text": "ovar')  # sends no more: the server gives up at its time limit
    started = time.monotonic()
    assert httpx.post(f"{live_server}/link", json={"text": "breast cancer"}, timeout=30).status_code == 200
    assert time.monotonic() - started < 5  # not kept waiting behind the slow one
    answer = read_answer(slow)  # --request-timeout 5
    slow.close()
    assert answer.startswith("HTTP/1.1 408") and '"request_timeout"' in answer
    assert httpx.get(f"{live_server}/health", timeout=10).json() == {"status": "ok"}


def test_the_server_listens_on_127_0_0_1_alone_unless_told(live_server):
    import inspect

    from spacy_biosyn.cli.serve import serve

    assert inspect.signature(serve).parameters["host"].default.default == "127.0.0.1"
    port = int(live_server.rsplit(":", 1)[1])
    outside = [address for *_, (address, *_) in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
               if not address.startswith("127.")]
    for address in outside[:1]:
        try:
            socket.create_connection((address, port), timeout=2).close()
        except OSError:
            continue
        raise AssertionError(f"the server answered on {address}")
