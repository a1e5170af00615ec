"""The API in process: the rows of `link --json`, in every format asked,
limits and bad requests answered with their JSON errors, and concurrent
clients each getting their own answers."""
import asyncio
import json

import httpx
import pytest
from helpers import SERVED_ABSTRACT as ABSTRACT
from typer.testing import CliRunner

# Without the serve extra these tests skip, saying so (a conftest cannot skip its folder).
pytest.importorskip("fastapi", reason="the serve extra is not installed")

from spacy_biosyn.cli import app as cli
from spacy_biosyn.service.app import create_app
from spacy_biosyn.service.settings import ServiceSettings


def link_json(pipeline, *args, input=None):
    result = CliRunner().invoke(cli, ["link", str(pipeline), *args, "--json"], input=input)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()]


def test_a_text_gets_the_rows_link_json_prints(client, served_pipeline):
    answer = client.post("/link", json={"text": ABSTRACT})
    assert answer.status_code == 200
    entities = answer.json()["entities"]
    assert [(e["text"], e["id"]) for e in entities] == [
        ("breast cancer", "MESH:D001943"), ("ovarian cancer", "MESH:D010051"), ("Huntington disease", "MESH:D006816"),
        ("unknown syndrome", None)]
    assert entities[0]["candidates"][0] == {"id": "MESH:D001943", "name": "breast cancer",
                                            "concept_name": "breast cancer", "score": 1.0}
    assert entities == link_json(served_pipeline, ABSTRACT)


def test_each_concept_is_shown_by_its_own_name_beside_the_name_the_mention_matched(client, served_pipeline):
    mention = client.post("/link/mentions", json={"mentions": ["mammary carcinoma"]}).json()["mentions"][0]
    assert mention["candidates"][0] == {"id": "MESH:D001943", "name": "mammary carcinoma",
                                        "concept_name": "breast cancer", "score": 1.0}
    table = CliRunner().invoke(cli, ["link", str(served_pipeline), "--mentions", "mammary carcinoma"])
    assert "breast cancer (mammary carcin" in table.output  # the cell cut to its width


def test_texts_are_answered_in_order_and_plain_text_as_one(client):
    texts = ["ovarian cancer", "nothing to link here", "breast cancer"]
    documents = client.post("/link", json={"texts": texts}).json()["documents"]
    assert [[e["id"] for e in d["entities"]] for d in documents] == [["MESH:D010051"], [], ["MESH:D001943"]]
    plain = client.post("/link", content="breast cancer".encode(), headers={"content-type": "text/plain; charset=utf-8"})
    assert plain.json() == {"entities": documents[2]["entities"]}


def test_mentions_get_the_rows_of_link_mentions(client, served_pipeline):
    mentions = ["Breast Cancer", "huntington chorea", "xyzzy"]
    answer = client.post("/link/mentions", json={"mentions": mentions})
    assert answer.status_code == 200
    assert answer.json()["mentions"] == link_json(served_pipeline, "--mentions", input="\n".join(mentions) + "\n")
    assert [row["id"] for row in answer.json()["mentions"]] == ["MESH:D001943", "MESH:D006816", None]


PUBTATOR = "123|t|Breast cancer in carriers\n123|a|Ovarian cancer too.\n\n"


def test_pubtator_in_and_pubtator_or_bioc_out(client):
    pubtator = client.post("/link", content=PUBTATOR.encode(), headers={"content-type": "text/x-pubtator",
                                                                        "accept": "text/x-pubtator"})
    assert pubtator.status_code == 200 and pubtator.headers["content-type"].startswith("text/x-pubtator")
    assert pubtator.text.splitlines()[2:4] == ["123\t0\t13\tBreast cancer\tDisease\tMESH:D001943",
                                               "123\t26\t40\tOvarian cancer\tDisease\tMESH:D010051"]
    bioc = client.post("/link", content=PUBTATOR.encode(), headers={"content-type": "text/x-pubtator",
                                                                    "accept": "application/xml"})
    assert bioc.status_code == 200 and '<infon key="identifier">MESH:D010051</infon>' in bioc.text
    again = client.post("/link", content=bioc.content, headers={"content-type": "application/xml"})
    assert [e["id"] for e in again.json()["documents"][0]["entities"]] == ["MESH:D001943", "MESH:D010051"]


BAD = [
    ("malformed JSON", b'{"text": ', "application/json", 400, "invalid_json"),
    ("JSON nested too deep", b"[" * 100_000, "application/json", 400, "invalid_json"),
    ("a number for a text", b'{"text": 3}', "application/json", 422, "invalid_request"),
    ("a list with a number", b'{"texts": ["a", 2]}', "application/json", 422, "invalid_request"),
    ("both text and texts", b'{"text": "a", "texts": ["b"]}', "application/json", 422, "invalid_request"),
    ("an unknown field", b'{"txt": "a"}', "application/json", 422, "invalid_request"),
    ("not UTF-8", b"\xff\xfe\x00", "text/plain", 400, "invalid_body"),
    ("not PubTator", b"no pipes here", "text/x-pubtator", 400, "invalid_body"),
    ("not BioC XML", b"<collection><document>", "application/xml", 400, "invalid_body"),
    ("an image", b"\x89PNG", "image/png", 415, "unsupported_media_type"),
    # unpacked, a small gzip body could be gigabytes
    ("gzip-compressed PubTator", __import__("gzip").compress(b"1|t|breast cancer\n\n"), "text/x-pubtator", 400, "invalid_body"),
]


@pytest.mark.parametrize("case,body,content_type,status,code", BAD, ids=[case[0] for case in BAD])
def test_a_bad_request_gets_its_json_error_and_the_next_one_is_answered(client, case, body, content_type, status, code):
    answer = client.post("/link", content=body, headers={"content-type": content_type})
    assert (answer.status_code, answer.json()["error"]["code"]) == (status, code), answer.text
    assert "Traceback" not in answer.text and "spacy-biosyn-serve-" not in answer.text  # nor the server's scratch folder
    assert client.post("/link", json={"text": "breast cancer"}).json()["entities"][0]["id"] == "MESH:D001943"


def test_nul_bytes_and_lone_surrogates_are_linked_as_link_json_reads_them(client):
    nul = client.post("/link", content=b'{"text": "a\\u0000 breast cancer"}', headers={"content-type": "application/json"})
    assert nul.json()["entities"][0]["start"] == 3
    surrogate = client.post("/link", content=b'{"text": "\\ud800 ovarian cancer"}', headers={"content-type": "application/json"})
    assert [(e["start"], e["id"]) for e in surrogate.json()["entities"]] == [(2, "MESH:D010051")]


def test_bioc_ids_missing_are_numbered_and_ids_pubtator_cannot_hold_are_refused_for_pubtator(client):
    bioc = ("<collection><source/><date/><key/><document><id></id><passage><offset>0</offset><text>breast cancer</text>"
            "</passage></document><document><id>a|b</id><passage><offset>0</offset><text>ovarian cancer</text></passage>"
            "</document></collection>")
    as_bioc = client.post("/link", content=bioc.encode(), headers={"content-type": "application/xml", "accept": "application/xml"})
    assert as_bioc.status_code == 200 and "<id>1</id>" in as_bioc.text and "<id>a|b</id>" in as_bioc.text
    as_pubtator = client.post("/link", content=bioc.encode(), headers={"content-type": "application/xml",
                                                                       "accept": "text/x-pubtator"})
    assert as_pubtator.status_code == 406 and "'a|b'" in as_pubtator.json()["error"]["message"]
    refused = client.post("/link", json={"text": "breast cancer"}, headers={"accept": "text/x-pubtator;q=0, application/json"})
    assert refused.headers["content-type"] == "application/json"


def test_a_request_that_breaks_the_pipeline_fails_alone(served_pipeline, monkeypatch):
    import time

    from spacy_biosyn.corpus_linking import output
    from spacy_biosyn.service import batching

    document_rows = output.document_rows

    def breaks_on_boom(document, doc, gold, names):
        if "boom" in document.text:
            raise RuntimeError("a component failed")
        return document_rows(document, doc, gold, names)

    monkeypatch.setattr(output, "document_rows", breaks_on_boom)
    link = batching.LinkingThread._link
    monkeypatch.setattr(batching.LinkingThread, "_link", lambda self, batch: (time.sleep(0.2), link(self, batch))[1])
    app = create_app(served_pipeline)

    async def run():
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
                                     base_url="http://test") as client:
            return await asyncio.gather(*(client.post("/link", json={"text": text})
                                          for text in ["breast cancer", "boom", "ovarian cancer", "breast cancer"]))

    answers = asyncio.run(run())
    assert [answer.status_code for answer in answers] == [200, 500, 200, 200]
    assert answers[1].json()["error"]["code"] == "internal_error" and "Traceback" not in answers[1].text
    assert answers[2].json()["entities"][0]["id"] == "MESH:D010051"


def test_every_limit_is_answered_with_its_name(served_pipeline):
    from fastapi.testclient import TestClient

    limits = ServiceSettings(max_body_bytes=1_000, max_text_chars=20, max_texts=2, max_mentions=2)
    with TestClient(create_app(served_pipeline, limits)) as client:
        cases = [
            (client.post("/link", json={"text": "x" * 21}), 422, "text_too_long", "max_text_chars"),
            (client.post("/link", json={"texts": ["a", "b", "c"]}), 422, "too_many", "max_texts"),
            (client.post("/link/mentions", json={"mentions": ["a", "b", "c"]}), 422, "too_many", "max_mentions"),
            (client.post("/link", content=b"x" * 1_001, headers={"content-type": "text/plain"}), 413, "body_too_large",
             "max_body_bytes"),
            # no Content-Length: the body is counted as it streams in
            (client.post("/link", content=iter([b"x" * 600, b"x" * 600]), headers={"content-type": "text/plain"}), 413,
             "body_too_large", "max_body_bytes"),
            (client.post("/link", json={"text": "a"}, headers={"accept": "image/png"}), 406, "not_acceptable", "application/json"),
        ]
        for answer, status, code, named in cases:
            assert (answer.status_code, answer.json()["error"]["code"]) == (status, code)
            assert named in answer.json()["error"]["message"]
        assert client.post("/link", json={"text": "breast cancer"}).status_code == 200


def test_linking_past_the_time_limit_is_a_504_and_the_late_answer_is_dropped(served_pipeline, monkeypatch):
    import time

    from fastapi.testclient import TestClient

    from spacy_biosyn.service import batching

    link = batching.LinkingThread._link

    def slow(self, batch):  # a pipeline that takes longer than the limit
        time.sleep(1.0)
        return link(self, batch)

    with TestClient(create_app(served_pipeline, ServiceSettings(request_timeout_s=0.3))) as client:
        monkeypatch.setattr(batching.LinkingThread, "_link", slow)
        answer = client.post("/link", json={"texts": ["breast cancer"] * 3})
        assert answer.status_code == 504 and "request_timeout_s" in answer.json()["error"]["message"]
        monkeypatch.setattr(batching.LinkingThread, "_link", link)
        time.sleep(1.0)  # the late batch finishes into a future nobody waits on
        assert client.post("/link", json={"text": "breast cancer"}).json()["entities"][0]["id"] == "MESH:D001943"


def test_a_linker_without_an_ner_links_mentions_and_says_so_for_texts(tmp_path, tiny_encoder, disease_dictionary):
    from fastapi.testclient import TestClient
    from helpers import make_nlp

    make_nlp(tiny_encoder, disease_dictionary).to_disk(tmp_path / "linker")
    with TestClient(create_app(tmp_path / "linker")) as client:
        texts = client.post("/link", json={"text": "breast cancer"})
        assert texts.status_code == 409 and "/link/mentions" in texts.json()["error"]["message"]
        assert str(tmp_path) not in texts.text  # the server's folder is no client's business
        assert client.post("/link/mentions", json={"mentions": ["breast cancer"]}).json()["mentions"][0]["id"] == "D001943"


def test_where_spacy_is_not_installed_the_engine_alone_links_mentions_and_says_so_for_texts(client, served_pipeline):
    import os
    import subprocess
    import sys

    from helpers import hiding

    mentions = {"mentions": ["Breast Cancer", "mammary carcinoma", "breast and ovarian cancer", "xyzzy", "the"]}
    script = hiding("spacy", "thinc") + f"""
import json
from fastapi.testclient import TestClient
from spacy_biosyn.service.app import create_app
with TestClient(create_app({str(served_pipeline)!r})) as client:
    answers = [client.post("/link/mentions", json={mentions!r}), client.post("/link", json={{"text": "breast cancer"}}),
               client.get("/info")]
    print(json.dumps([[answer.status_code, answer.json()] for answer in answers]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    (linked, mention_rows), (refused, error), (_, info) = json.loads(done.stdout.splitlines()[-1])
    assert linked == 200 and mention_rows == client.post("/link/mentions", json=mentions).json()
    assert refused == 409 and "spaCy is not installed" in error["error"]["message"]
    expected = client.get("/info").json()
    assert "spacy" in expected["versions"] and {**info, "versions": None} == {**expected, "versions": None}


def test_concurrent_clients_each_get_their_own_answer_batched_together(served_pipeline):
    import time

    from spacy_biosyn.service import batching

    texts = [f"Case {n}: " + ("breast cancer" if n % 3 == 0 else "ovarian cancer" if n % 3 == 1 else "no disease")
             for n in range(24)]
    app = create_app(served_pipeline)
    batch_sizes = []
    link = batching.LinkingThread._link

    def counted(self, batch):
        if not batch_sizes:
            time.sleep(0.2)  # the other clients' requests queue up behind the first batch
        batch_sizes.append(sum(len(job.items) for job in batch))
        return link(self, batch)

    batching.LinkingThread._link = counted
    try:
        async def run():
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
                together = await asyncio.gather(*(client.post("/link", json={"text": text}) for text in texts))
                sizes = list(batch_sizes)
                # texts and mention strings interleaved: a batch holds one kind
                mixed = await asyncio.gather(*(
                    client.post("/link", json={"text": text}) if n % 2 else
                    client.post("/link/mentions", json={"mentions": [text, "ovarian cancer"]})
                    for n, text in enumerate(texts)))
                return together, sizes, mixed

        together, sizes, mixed = asyncio.run(run())
    finally:
        batching.LinkingThread._link = link
    assert sum(sizes) == len(texts) and max(sizes) > 1  # several clients' texts in one nlp.pipe
    for n, (text, answer) in enumerate(zip(texts * 2, together + mixed)):
        if n >= len(texts) and n % 2 == 0:
            assert [(row["text"], row["id"]) for row in answer.json()["mentions"]][1:] == [("ovarian cancer", "MESH:D010051")]
            assert answer.json()["mentions"][0]["text"] == text
            continue
        entities = answer.json()["entities"]
        assert [text[e["start"]:e["end"]] for e in entities] == [e["text"] for e in entities]
        expected = "MESH:D001943" if "breast" in text else "MESH:D010051" if "ovarian" in text else None
        assert [e["id"] for e in entities] == ([expected] if expected else [])


def test_health_info_and_a_schema_that_describes_every_field(client, served_pipeline):
    assert client.get("/health").json() == {"status": "ok"}
    info = client.get("/info").json()
    assert info["pipeline"]["components"] == ["entity_ruler", "biosyn_linker"]
    assert info["linker"]["vocabulary"] == "diseases.txt" and info["linker"]["names"] == 17
    assert info["linker"]["settings"]["nil_threshold"] == 0.9 and info["limits"]["max_texts"] == 64
    assert info["linker"]["nil"] == {"dictionary": {"threshold": 0.9, "source": "nil_threshold as set", "model": None}}
    assert str(served_pipeline.parent) not in json.dumps(info)  # no server folder is told
    schema = client.get("/openapi.json").json()
    assert {"/link", "/link/mentions", "/health", "/info"} <= set(schema["paths"])
    entity = schema["components"]["schemas"]["Entity"]["properties"]
    assert set(entity) == {"start", "end", "text", "label", "id", "score", "nil_reason", "nil_best", "ties", "candidates"}
    assert all(field.get("description") for field in entity.values())


def test_the_page_and_its_assets_are_served_and_nothing_else(client):
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/static/page.js">' in page.text
    assert client.get("/static/page.js").headers["content-type"].startswith("text/javascript")
    for path in ("/static/..%2Fapp.py", "/static/index.html.bak", "/static/", "/etc/passwd", "/static/..%2F..%2Fnames.py"):
        assert client.get(path).status_code == 404, path
    assert client.get("/link").status_code == 405 and client.get("/link").json()["error"]["code"] == "method_not_allowed"


def test_a_host_header_of_another_name_is_refused_as_a_rebinding_page_would_send_it(served_pipeline):
    from fastapi.testclient import TestClient

    from spacy_biosyn.service.limits import LOOPBACK_HOSTS

    limits = ServiceSettings(allowed_hosts=LOOPBACK_HOSTS)
    with TestClient(create_app(served_pipeline, limits), base_url="http://127.0.0.1:8080") as client:
        assert client.get("/info").status_code == 200
        for host in ("localhost:8080", "[::1]:8080", "LOCALHOST"):
            assert client.get("/health", headers={"host": host}).status_code == 200, host
        for host in ("attacker.example", "127.0.0.1.attacker.example:8080", ""):
            refused = client.post("/link", json={"text": "breast cancer"}, headers={"host": host})
            assert refused.status_code == 400 and refused.json()["error"]["code"] == "host_not_allowed", host
            assert "--allowed-hosts" in refused.json()["error"]["message"]


def test_no_other_site_reads_an_answer_unless_its_origin_is_given(served_pipeline, client):
    from fastapi.testclient import TestClient

    asked = {"origin": "https://lab.example"}
    assert "access-control-allow-origin" not in client.get("/info", headers=asked).headers
    with TestClient(create_app(served_pipeline, ServiceSettings(cors_origins=("https://lab.example",)))) as allowed:
        assert allowed.get("/info", headers=asked).headers["access-control-allow-origin"] == "https://lab.example"
        other = allowed.get("/info", headers={"origin": "https://elsewhere.example"})
        assert "access-control-allow-origin" not in other.headers


@pytest.mark.parametrize("accept, answer", [
    ("application/json;q=0.1, text/x-pubtator;q=0.9", "text/x-pubtator"),
    ("text/x-pubtator;q=0.5, application/xml", "application/xml"),
    ("*/*", "application/json"),
    ("text/*, application/json;q=0.2", "text/x-pubtator"),
    ("application/json;q=0.", None),
    ("application/json;q=0, text/html", None),
])
def test_the_answer_is_the_type_accept_weighs_highest(client, accept, answer):
    linked = client.post("/link", json={"text": "breast cancer"}, headers={"accept": accept})
    if answer is None:
        assert linked.status_code == 406 and linked.json()["error"]["code"] == "not_acceptable"
    else:
        assert linked.status_code == 200 and linked.headers["content-type"].startswith(answer)


@pytest.mark.parametrize("setting, value", [("request_timeout_s", float("inf")), ("request_timeout_s", float("nan")),
                                            ("request_timeout_s", 1e9), ("batch_texts", 10**9), ("max_texts", 0)])
def test_a_limit_outside_what_a_machine_can_hold_is_refused_by_name(setting, value):
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match=setting):
        ServiceSettings(**{setting: value})


def test_the_settings_serve_hands_its_workers_are_read_back_from_their_environment(monkeypatch):
    settings = ServiceSettings(max_texts=5, request_timeout_s=0.5, allowed_hosts=("localhost", "*.example.org"))
    for name, value in settings.as_environment().items():
        monkeypatch.setenv(name, value)
    assert ServiceSettings() == settings
    monkeypatch.setenv("SPACY_BIOSYN_SERVE_MAX_TEXTS", "0")
    with pytest.raises(ValueError, match="max_texts"):
        ServiceSettings()


GIVEN = ("1|t|Hereditary breast cancer and ovarian cancer.\n1|a|Ovarian cancer.\n"
         "1\t11\t24\tbreast cancer\tDisease\tD001943\n1\t29\t43\tovarian cancer\tDisease\tD010051\n"
         "1\t45\t59\tOvarian cancer\tDisease\tD010051\n\n")


def test_the_entities_a_client_gives_are_linked_as_link_corpus_gold_spans_links_them(client, served_pipeline, tmp_path):
    from spacy_biosyn.corpus_linking.run import link_corpus

    (tmp_path / "given.txt").write_text(GIVEN)
    link_corpus(served_pipeline, tmp_path / "given.txt", tmp_path / "out", gold_spans=True, output_format="jsonl",
                progress=False)
    by_cli = [(r["start"], r["end"], r["id"]) for r in map(json.loads, (tmp_path / "out" / "shard-00000.jsonl").open())]
    pubtator = client.post("/link?spans=given", content=GIVEN.encode(), headers={"content-type": "text/x-pubtator"})
    assert [(e["start"], e["end"], e["id"]) for e in pubtator.json()["documents"][0]["entities"]] == by_cli
    text = GIVEN.splitlines()[0][4:] + " " + GIVEN.splitlines()[1][4:]
    entities = [{"start": 11, "end": 24, "label": "Disease"}, {"start": 29, "end": 43, "label": "Disease"},
                {"start": 45, "end": 59, "label": "Disease"}]
    as_json = client.post("/link", json={"text": text, "entities": entities}).json()["entities"]
    assert [(e["start"], e["end"], e["id"]) for e in as_json] == by_cli == [
        (11, 24, "MESH:D001943"), (29, 43, "MESH:D010051"), (45, 59, "MESH:D010051")]
    # without ?spans=given the entity_ruler finds its own: the three names again
    found = client.post("/link", content=GIVEN.encode(), headers={"content-type": "text/x-pubtator"}).json()
    assert len(found["documents"][0]["entities"]) == 3


def test_given_entities_need_no_ner(tmp_path, tiny_encoder, disease_dictionary):
    from fastapi.testclient import TestClient
    from helpers import make_nlp

    make_nlp(tiny_encoder, disease_dictionary).to_disk(tmp_path / "linker")
    with TestClient(create_app(tmp_path / "linker")) as client:
        text = "Hereditary breast cancer."
        linked = client.post("/link", json={"text": text, "entities": [{"start": 11, "end": 24, "label": "Disease"}]})
        assert linked.status_code == 200 and linked.json()["entities"][0]["id"] == "D001943"
        given = client.post("/link?spans=given", content=b"1|t|Breast cancer\n1\t0\t13\tBreast cancer\tDisease\t-1\n\n",
                            headers={"content-type": "text/x-pubtator"})
        assert given.json()["documents"][0]["entities"][0]["id"] == "D001943"


@pytest.mark.parametrize("entities, says", [
    ([{"start": 5, "end": 40, "label": "Disease"}], "entity 0 (5-40) does not lie inside the text"),
    ([{"start": 4, "end": 4, "label": "Disease"}], "entity 0 (4-4) does not lie inside"),
    ([{"start": -1, "end": 3, "label": "Disease"}], "entity 0 (-1-3) does not lie inside"),
    ([{"start": 0, "end": 13, "label": "Disease"}, {"start": 7, "end": 13, "label": "Disease"}],
     "entity 1 (7-13) overlaps entity 0 (0-13)"),
])
def test_a_given_span_outside_the_text_empty_or_overlapping_is_refused_naming_it(client, entities, says):
    refused = client.post("/link", json={"text": "Breast cancer.", "entities": entities})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "invalid_span"
    assert says in refused.json()["error"]["message"]


def test_entities_go_with_one_text_and_spans_is_found_or_given(client):
    several = client.post("/link", json={"texts": ["a"], "entities": []})
    assert several.status_code == 422 and "give them with 'text'" in several.json()["error"]["message"]
    other = client.post("/link?spans=gold", json={"text": "a"})
    assert other.status_code == 422 and "spans='gold'" in other.json()["error"]["message"]


@pytest.mark.parametrize("raised", [SystemExit(3), KeyboardInterrupt(), MemoryError()])
def test_a_component_that_raises_anything_fails_its_own_request_and_the_thread_links_on(served_pipeline, monkeypatch,
                                                                                           caplog, raised):
    from fastapi.testclient import TestClient

    from spacy_biosyn.corpus_linking import output

    document_rows = output.document_rows

    def raises_on_boom(document, doc, gold, names):
        if "boom" in document.text:
            raise raised
        return document_rows(document, doc, gold, names)

    monkeypatch.setattr(output, "document_rows", raises_on_boom)
    with TestClient(create_app(served_pipeline)) as client:
        failed = client.post("/link", json={"text": "boom"})
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "internal_error"
        request_id = failed.json()["error"]["message"].split("linking request ")[1].split()[0]
        assert f"linking request {request_id} failed" in caplog.text  # the log names the same request
        assert client.post("/link", json={"text": "breast cancer"}).status_code == 200
        assert client.get("/health").json() == {"status": "ok"}


def test_a_linking_thread_that_stops_all_the_same_ends_the_process_non_zero_for_its_supervisor():
    import subprocess
    import sys

    code = ("import time, spacy\n"
            "from spacy_biosyn.service import batching\n"
            "def broken(self): raise RuntimeError('a bug in the loop itself')\n"
            "batching.LinkingThread._serve_batches = broken\n"
            "batching.LinkingThread(spacy.blank('en'), 4)\n"
            "time.sleep(30)\n")
    ended = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert ended.returncode == 1 and "the linking thread stopped; the process exits" in ended.stderr
