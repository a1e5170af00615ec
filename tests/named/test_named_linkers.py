"""Named linkers (`linker_name`), as a scispaCy user meets them: fetched
from a mirror folder or an HTTP server on 127.0.0.1 holding each source in
its published format, built once, cached, loaded by later processes with no
request and no name encoded, rebuilt when damaged, and never touching the
rest of the pipeline."""
import gzip
import http.server
import os
import subprocess
import sys
import threading
import time

import pytest
import spacy
from typer.testing import CliRunner
from helpers import TORCH_MODULES, hiding
from vocabulary_files import CTD_CHEMICALS, CTD_TSV, MESH_DESCRIPTORS_XML, MESH_SUPPLEMENTARY_XML, MONDO_OBO, SCISPACY

from spacy_biosyn.cli import app
from spacy_biosyn.files.downloads import cached_path
from spacy_biosyn.files.fetching import DownloadError
from spacy_biosyn.kb.dictionary import Dictionary

# Each source as its publisher names and writes it.
PUBLISHED = {
    "CTD_diseases.tsv.gz": gzip.compress(CTD_TSV.encode()),
    "CTD_chemicals.tsv.gz": gzip.compress(CTD_CHEMICALS.encode()),
    "mondo.obo": MONDO_OBO.encode(),
    "desc2026.gz": gzip.compress(MESH_DESCRIPTORS_XML.encode()),
    "supp2026.gz": gzip.compress(MESH_SUPPLEMENTARY_XML.encode()),
    "umls_2022_ab_cat0129.jsonl": SCISPACY.encode(),
}
# A named vocabulary, a text, a mention in it and the ID it links to.
LINKS = [
    ("medic", "Risk of breast carcinoma in carriers.", "breast carcinoma", "MESH:D001943"),
    ("ctd-chemicals", "Patients were given adriamycin daily.", "adriamycin", "MESH:D004317"),
    ("mondo", "Screening for malignant neoplasm of breast.", "malignant neoplasm of breast", "MONDO:0007254"),
    ("mesh-current", "A family with STHAG6 and breast cancer.", "STHAG6", "C567755"),
    ("umls", "Risk of breast carcinoma in carriers.", "breast carcinoma", "C0006142"),
]


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A mirror folder holding every published file, and an empty cache."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    for name, content in PUBLISHED.items():
        (folder / name).write_bytes(content)
    monkeypatch.setenv("SPACY_BIOSYN_MIRROR", str(folder))
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    return folder


def named_config(name, encoder):
    # tf-idf outweighs the tiny random encoder, so that names written alike link.
    return {"linker_name": name, "sparse_weight": 10.0,
            "encoder": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": encoder}}


def linked(nlp, text, mention, label="Disease"):
    doc = nlp.make_doc(text)
    start = text.index(mention)
    doc.ents = [doc.char_span(start, start + len(mention), label=label)]
    return nlp(doc).ents[0]


@pytest.mark.parametrize("name, text, mention, cui", LINKS)
def test_each_named_vocabulary_links_at_once_with_no_initialize(mirror, tiny_encoder, capfd, name, text, mention, cui):
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("biosyn_linker", config=named_config(name, tiny_encoder))
    span = linked(nlp, text, mention)
    assert span._.cui == cui and span.kb_id_ == cui
    assert linker.kb.cui_to_entity[cui].canonical_name
    assert "names: the exact index will take about" in capfd.readouterr().err  # said before encoding


def test_a_mirror_on_a_local_http_server_serves_the_published_names(tmp_path, monkeypatch, tiny_encoder):
    served = tmp_path / "served"
    served.mkdir()
    (served / "CTD_diseases.tsv.gz").write_bytes(PUBLISHED["CTD_diseases.tsv.gz"])
    with serving(served) as base:
        monkeypatch.setenv("SPACY_BIOSYN_MIRROR", base)
        monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
        nlp = spacy.blank("en")
        nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
        assert linked(nlp, "Ovarian Cancer risk", "Ovarian Cancer")._.cui == "MESH:D010051"


def test_a_saved_pipeline_loads_with_an_empty_cache_and_no_mirror(mirror, tiny_encoder, tmp_path, monkeypatch):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    nlp.to_disk(tmp_path / "pipeline")  # never used: the save still holds the index
    monkeypatch.delenv("SPACY_BIOSYN_MIRROR")
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "empty-cache"))
    loaded = spacy.load(tmp_path / "pipeline")
    assert linked(loaded, "Risk of breast carcinoma", "breast carcinoma")._.cui == "MESH:D001943"
    # Nothing was fetched or built: the cache holds at most the record that the save's files passed their check
    cache = tmp_path / "empty-cache"
    assert not cache.exists() or [p.name for p in cache.iterdir()] == ["checked"]
    assert loaded.config["components"]["biosyn_linker"]["linker_name"] == "medic"


# A process that may neither encode a name nor make a request: it must load the cached linker.
WARM_START = """
import sys, urllib.request
import spacy
from spacy_biosyn.search.name_ranker import NameRanker
def refuse(*args, **kwargs):
    raise AssertionError("a warm start encoded names or made a request")
NameRanker.build = refuse
urllib.request.urlopen = refuse
nlp = spacy.blank("en")
nlp.add_pipe("biosyn_linker", config={config!r})
doc = nlp.make_doc("Risk of breast carcinoma")
doc.ents = [doc.char_span(8, 24, label="Disease")]
print(nlp(doc).ents[0]._.cui)
"""


def run_python(code, env, **kwargs):
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300, **kwargs)


def test_another_process_loads_from_the_cache_with_the_mirror_gone(mirror, tiny_encoder):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    assert linked(nlp, "Risk of breast carcinoma", "breast carcinoma")._.cui == "MESH:D001943"
    env = {key: value for key, value in os.environ.items() if key != "SPACY_BIOSYN_MIRROR"}
    result = run_python(WARM_START.format(config=named_config("medic", tiny_encoder)), env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "MESH:D001943"


def test_a_linker_holding_its_vectors_as_int16_loads_the_cache_a_float32_one_built(mirror, tiny_encoder):
    # held_precision changes no saved file: the cached build serves both, never encoded again.
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    assert linked(nlp, "Risk of breast carcinoma", "breast carcinoma")._.cui == "MESH:D001943"
    env = {key: value for key, value in os.environ.items() if key != "SPACY_BIOSYN_MIRROR"}
    lean = {**named_config("medic", tiny_encoder),
            "index": {"@misc": "spacy_biosyn.SizedIndex.v3", "held_precision": "int16"}}
    result = run_python(WARM_START.format(config=lean), env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "MESH:D001943"


def test_a_server_without_torch_loads_the_build_made_with_bf16_names(mirror, tiny_encoder):
    """names_precision "auto" takes a cached build in either precision: a
    server without PyTorch (faiss kept: whether it is installed is in the
    cache's key), which encodes names in fp32 only, links with the linker a
    machine with bf16 built, encoding no name and fetching nothing."""
    def config(precision):
        return {**named_config("medic", tiny_encoder), "encoder": {
            "@misc": "spacy_biosyn.OnnxEncoder.v2", "name": tiny_encoder, "names_precision": precision}}

    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=config("bf16"))
    built = linked(nlp, "Risk of breast carcinoma", "breast carcinoma")
    env = {key: value for key, value in os.environ.items() if key != "SPACY_BIOSYN_MIRROR"}
    warm = WARM_START.replace('print(nlp(doc).ents[0]._.cui)', 'print(nlp(doc).ents[0]._.kb_ents)')
    result = run_python(hiding(*TORCH_MODULES) + warm.format(config=config("auto")), env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == str(built._.kb_ents) and built._.cui == "MESH:D001943"
    # fp32 named is fp32 meant: it builds its own, which the warm start refuses
    result = run_python(hiding(*TORCH_MODULES) + WARM_START.format(config=config("fp32")), env)
    assert "a warm start encoded names or made a request" in result.stderr


def test_a_damaged_cache_entry_is_refused_and_rebuilt(mirror, tiny_encoder, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    linked(nlp, "breast carcinoma", "breast carcinoma")
    [vectors] = (tmp_path / "cache" / "linkers").glob("medic-*/linker/index/vectors.npy")
    vectors.write_bytes(vectors.read_bytes()[:-64] + bytes(64))
    again = spacy.blank("en")
    again.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    with pytest.warns(UserWarning, match="is damaged and is built again"):
        assert linked(again, "breast carcinoma", "breast carcinoma")._.cui == "MESH:D001943"
    third = spacy.blank("en")
    third.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    third.get_pipe("biosyn_linker").initialize()  # the rebuilt entry loads whole: no warning
    assert len(third.get_pipe("biosyn_linker").kb.cui_to_entity) == 2


def test_two_processes_build_one_name_once(mirror, tiny_encoder):
    code = WARM_START.replace("NameRanker.build = refuse\n", "").format(config=named_config("medic", tiny_encoder))
    runs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outputs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    assert [out.strip() for out, _ in outputs] == ["MESH:D001943"] * 2
    assert sum("encoding them now" in err for _, err in outputs) == 1


def test_adding_a_named_linker_leaves_the_other_components_byte_identical(text_pipeline, mirror, tiny_encoder):
    nlp = spacy.load(text_pipeline)
    nlp.remove_pipe("biosyn_linker")
    text = "Mutations in breast cancer and ovarian cancer families."
    # The first call sets state spaCy's components make lazily; the shared
    # vocab gains the text's strings (and, later, the IDs): weights are compared.
    ents_before = [(e.start_char, e.end_char, e.label_) for e in nlp(text).ents]
    before = {name: pipe.to_bytes(exclude=["vocab"]) for name, pipe in nlp.pipeline}
    nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    doc = nlp(text)
    assert {name: pipe.to_bytes(exclude=["vocab"]) for name, pipe in nlp.pipeline if name in before} == before
    assert [(e.start_char, e.end_char, e.label_) for e in doc.ents] == ents_before
    assert {e.text: e._.cui for e in doc.ents} == {"breast cancer": "MESH:D001943", "ovarian cancer": "MESH:D010051"}


def test_scispacys_settings_are_honoured_or_refused_naming_ours(mirror, tiny_encoder):
    nlp = spacy.blank("en")
    config = {**named_config("medic", tiny_encoder), "resolve_abbreviations": False, "k": 7,
              "max_entities_per_mention": 2}
    linker = nlp.add_pipe("biosyn_linker", config=config)
    assert (linker.names_searched, linker.top_k, linker.engine.abbreviation_detector) == (7, 2, None)
    with pytest.raises(ValueError, match="threshold is scispaCy's setting.*here it is nil_threshold"):
        nlp.add_pipe("biosyn_linker", name="other", config={**named_config("medic", tiny_encoder), "threshold": 0.7})
    with pytest.raises(ValueError, match="linker_name 'umsl' is not a named vocabulary; choose one of umls, mesh"):
        nlp.add_pipe("biosyn_linker", name="typo", config={"linker_name": "umsl"})


def test_a_linker_needs_one_source_of_names(tiny_encoder, disease_dictionary):
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="give linker_name or dictionary, not both"):
        nlp.add_pipe("biosyn_linker", config={"linker_name": "medic", "dictionary": disease_dictionary})
    nlp.add_pipe("biosyn_linker", config={"encoder": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": tiny_encoder}})
    with pytest.raises(RuntimeError, match="has no dictionary: give linker_name or dictionary in its config"):
        linked(nlp, "breast cancer", "breast cancer")


def test_a_changed_setting_outlives_its_scispacy_name(mirror, tiny_encoder, tmp_path):
    from spacy_biosyn import configure_linker

    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={**named_config("medic", tiny_encoder), "k": 7})
    configure_linker(nlp, names_searched=12)
    nlp.to_disk(tmp_path / "pipeline")
    assert spacy.load(tmp_path / "pipeline").get_pipe("biosyn_linker").names_searched == 12


def test_the_command_line_lists_downloads_and_builds_named_linkers(mirror, tiny_encoder, tmp_path):
    runner = CliRunner()
    listed = runner.invoke(app, ["linkers"])
    assert listed.exit_code == 0, listed.output
    assert "ctdbase.org/reports/CTD_diseases.tsv.gz" in listed.output and "medic" in listed.output
    downloaded = runner.invoke(app, ["download", "medic", "--encoder", tiny_encoder])
    assert downloaded.exit_code == 0, downloaded.output
    medic_row = next(line for line in runner.invoke(app, ["linkers"]).output.splitlines() if line.startswith("medic "))
    assert medic_row.rstrip().endswith(os.path.basename(tiny_encoder))
    built = runner.invoke(app, ["build", "--linker-name", "medic", "--encoder", tiny_encoder,
                                "--sparse-weight", "10", str(tmp_path / "pipeline")])
    assert built.exit_code == 0, built.output
    nlp = spacy.load(tmp_path / "pipeline")
    assert linked(nlp, "breast carcinoma", "breast carcinoma")._.cui == "MESH:D001943"
    unknown = runner.invoke(app, ["download", "umsl"])
    assert unknown.exit_code != 0 and "not a named vocabulary" in unknown.output


def test_build_refuses_options_that_go_with_a_dictionary_for_a_named_vocabulary(mirror, tmp_path):
    result = CliRunner().invoke(app, ["build", "--linker-name", "medic", "--route", "Chemical=x.txt", str(tmp_path / "p")])
    assert result.exit_code != 0 and "--route go(es) with --dictionary" in result.output
    assert not (tmp_path / "p").exists()


# Downloads ------------------------------------------------------------------

class serving:
    """An HTTP server on 127.0.0.1 serving `folder`, or answering with `respond(handler)`."""

    def __init__(self, folder=None, respond=None):
        import functools

        parent = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                parent.requests.append(self.path)

            def do_GET(self):
                if respond is None:
                    return super().do_GET()
                parent.requests.append(self.path)
                respond(self)

        self.requests = []
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}/"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def answer(body, length=None, content_type="application/octet-stream", drip=0.0):
    def respond(handler):
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body) if length is None else length))
        handler.end_headers()
        try:
            if drip:
                for byte in body:
                    handler.wfile.write(bytes([byte]))
                    handler.wfile.flush()
                    time.sleep(drip)
            else:
                handler.wfile.write(body)
        except OSError:  # the client gave up
            pass
    return respond


GOOD = PUBLISHED["CTD_diseases.tsv.gz"]


@pytest.mark.parametrize("respond, refusal", [
    (answer(GOOD[: len(GOOD) // 2], length=len(GOOD)), r"cut short \(\d[\d,]* of the [\d,]+ bytes promised"),
    (answer(b"<!DOCTYPE html><html><body>Please log in</body></html>", content_type="text/html"), "an HTML page"),
    (answer(b""), "an empty file"),
    (answer(GOOD[:-20]), "the gzip file is damaged or cut short"),
    (answer(GOOD, drip=0.05), r"not fetched within 1 s"),
], ids=["short-body", "html", "empty", "cut-gzip", "drip"])
def test_a_bad_download_is_refused_and_nothing_is_cached(tmp_path, monkeypatch, respond, refusal):
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    with serving(respond=respond) as base:
        with pytest.raises(DownloadError, match=refusal):
            cached_path(base + "CTD_diseases.tsv.gz", deadline_s=1)
    assert [p.name for p in (tmp_path / "cache" / "downloads").iterdir() if not p.name.endswith(".lock")] == []


def garbage_status(handler):
    handler.wfile.write(b"HTTP/1.1 abc what\r\n\r\n")


def cut_chunks(handler):
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    handler.wfile.write(b"400\r\n" + b"x" * 100)  # a 1,024-byte chunk, cut after 100


@pytest.mark.parametrize("respond, name, refusal", [
    (garbage_status, "CTD_diseases.tsv.gz", "could not be fetched from .*BadStatusLine"),
    (cut_chunks, "CTD_diseases.tsv.gz", "could not be fetched from .*IncompleteRead"),
    (answer(GOOD), "x" * 260 + ".tsv.gz", None),
])
def test_a_broken_response_or_a_long_name_is_one_line(tmp_path, monkeypatch, respond, name, refusal):
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    with serving(respond=respond) as base:
        if refusal is None:
            assert cached_path(base + name).read_bytes() == GOOD
        else:
            with pytest.raises(DownloadError, match=refusal):
                cached_path(base + name)


def served_obo(tmp_path, monkeypatch, name):
    """A folder to serve holding MONDO_OBO as `name`, with an empty cache."""
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    served = tmp_path / "served"
    served.mkdir()
    (served / name).write_text(MONDO_OBO)
    return served


def test_a_url_with_spaces_or_non_ascii_fetches_the_file_a_browser_would(tmp_path, monkeypatch):
    with serving(served_obo(tmp_path, monkeypatch, "Krankheiten für CTD.obo")) as base:
        # a copied tab is dropped, as browsers drop it
        assert cached_path(base + "Krankheiten für \tCTD.obo").read_text() == MONDO_OBO
    with pytest.raises(DownloadError, match="the host name"):
        cached_path("http://" + "x" * 64 + ".org/a.obo")
    from spacy_biosyn.files.fetching import _ascii_url

    assert _ascii_url("http://user@Bücher.de:8080/a b?q=ä") == "http://user@xn--bcher-kva.de:8080/a%20b?q=%C3%A4"


def test_a_cached_download_is_checked_and_fetched_again_when_damaged_or_refreshed(tmp_path, monkeypatch):
    served = served_obo(tmp_path, monkeypatch, "mondo.obo")
    with serving(served) as base:
        url = base + "mondo.obo"
        path = cached_path(url)
        assert cached_path(url) == path and path.read_text() == MONDO_OBO
        path.write_text(MONDO_OBO[:40])  # cut short on disk: never used
        assert cached_path(url).read_text() == MONDO_OBO
        (served / "mondo.obo").write_text(MONDO_OBO + "\n[Term]\nid: MONDO:1\nname: new\n")
        assert cached_path(url).read_text() == MONDO_OBO  # the cache stands ...
        assert "MONDO:1" in cached_path(url, refresh=True).read_text()  # ... until asked to refresh


def test_a_killed_fetchs_partial_file_is_removed_and_a_missing_mirror_is_said(tmp_path, monkeypatch):
    from spacy_biosyn.files.downloads import _target

    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPACY_BIOSYN_MIRROR", str(tmp_path / "no-such-mirror"))
    with serving(respond=answer(GOOD)) as base:
        url = base + "CTD_diseases.tsv.gz"
        left = _target(url).with_name(f".{_target(url).name}.abc123.partial")
        left.parent.mkdir(parents=True)
        left.write_bytes(GOOD[:100])
        with pytest.warns(UserWarning, match="no-such-mirror is not a folder: CTD_diseases.tsv.gz is fetched from its publisher"):
            path = cached_path(url)
    assert path.read_bytes() == GOOD and not left.exists()
    assert oct(path.stat().st_mode & 0o044) == oct(0o044 & ~os.umask(os.umask(0)))  # readable as the umask allows


def test_a_vocabulary_that_does_not_read_is_dropped_from_the_cache(mirror, tiny_encoder):
    (mirror / "CTD_diseases.tsv.gz").write_bytes(gzip.compress(b"# Fields:\nnot a CTD line\n"))
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder))
    with pytest.raises(ValueError, match="does not read as medic .* dropped from the cache: try again"):
        nlp.get_pipe("biosyn_linker").initialize()
    (mirror / "CTD_diseases.tsv.gz").write_bytes(PUBLISHED["CTD_diseases.tsv.gz"])
    assert linked(nlp, "breast carcinoma", "breast carcinoma")._.cui == "MESH:D001943"


# The default index ------------------------------------------------------------

def test_the_sized_index_searches_exactly_until_faiss_from_names(tmp_path, tiny_encoder, disease_dictionary):
    from spacy_biosyn.search.sized_index import SizedIndex

    for faiss_from, kind in ((1000, "exact"), (5, "faiss")):
        nlp = spacy.blank("en")
        config = {"dictionary": disease_dictionary, "sparse_weight": 10.0,
                  "encoder": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": tiny_encoder},
                  "index": {"@misc": "spacy_biosyn.SizedIndex.v3", "faiss_from": faiss_from, "factory": "IVF1,SQ8",
                            "sparse_dims": 0}}
        nlp.add_pipe("biosyn_linker", config=config)
        nlp.initialize()
        assert isinstance(nlp.get_pipe("biosyn_linker").engine.vocabulary().index, SizedIndex)
        assert nlp.get_pipe("biosyn_linker").engine.vocabulary().index.kind == kind
        nlp.to_disk(tmp_path / kind)
        loaded = spacy.load(tmp_path / kind)
        assert loaded.get_pipe("biosyn_linker").engine.vocabulary().index.kind == kind
        assert linked(loaded, "Huntington disease", "Huntington disease")._.cui == "D006816"


def test_a_built_faiss_index_is_searched_from_the_cache_it_was_saved_to_and_still_takes_synonyms(mirror, tiny_encoder):
    config = {**named_config("umls", tiny_encoder),
              "index": {"@misc": "spacy_biosyn.SizedIndex.v3", "faiss_from": 2, "factory": "IVF1,SQ8", "sparse_dims": 0}}
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("biosyn_linker", config=config)
    assert linked(nlp, "Risk of breast carcinoma in carriers.", "breast carcinoma")._.cui == "C0006142"
    if os.path.exists("/proc/self/maps"):  # the cold build's index: its lists on disk, not in memory
        with open("/proc/self/maps") as maps:
            assert any(line.rstrip().endswith("/linker/index/dense.faiss") for line in maps)
    linker.add_synonyms(Dictionary.from_pairs([("C0006142", "mammary carcinoma of the left side")]))
    assert linked(nlp, "A mammary carcinoma of the left side.", "mammary carcinoma of the left side")._.cui == "C0006142"


def test_a_named_vocabulary_learns_its_nil_model_from_the_corpus_and_caches_it(mirror, tiny_encoder, tmp_path):
    corpus = tmp_path / "train"
    corpus.mkdir()
    lines = [f"1||0|1||Disease||{organ} {kind} {i}||D{cui}" for i in range(25)
             for organ, kind, cui in (("breast", "cancer", "001943"), ("ovarian", "neoplasms", "010051"))]
    (corpus / "1.concept").write_text("\n".join(lines) + "\n")
    config = {**named_config("medic", tiny_encoder), "preferred_ids_from": [str(corpus)]}
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config=config).initialize()
    model = nlp.get_pipe("biosyn_linker").engine.nil_rule().model
    assert model is not None and "50 annotated mentions" in model.source
    again = spacy.blank("en")
    again.add_pipe("biosyn_linker", config=config).initialize()  # from the cache
    assert again.get_pipe("biosyn_linker").engine.nil_rule().model.to_json() == model.to_json()


def test_a_cache_entry_another_release_built_is_not_taken_but_built_again(mirror, tiny_encoder, monkeypatch):
    from spacy_biosyn.named import cache

    def linker_folder(version):
        monkeypatch.setattr(cache.metadata, "version", lambda name: version)
        nlp = spacy.blank("en")
        nlp.add_pipe("biosyn_linker", config=named_config("medic", tiny_encoder)).initialize()
        return sorted(folder for folder in cache.linkers_folder().iterdir() if folder.is_dir())

    assert len(linker_folder("0.1.0")) == 1
    assert len(linker_folder("0.1.0")) == 1  # the same release takes its entry
    assert len(linker_folder("0.2.0")) == 2  # another release builds its own
