"""The ONNX encoder computes what the PyTorch one does (int8: within a
stated tolerance), and a pipeline converted to it links alike, saves, loads
without transformers and runs in two processes."""
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import spacy

from helpers import TEXT, doc_with_ents, make_nlp

from spacy_biosyn.cli import app
from spacy_biosyn.encoders.onnx import OnnxEncoder
from spacy_biosyn.encoders.transformer import TransformerEncoder

TEXTS = [
    "breast cancer",
    "a",
    "type 2 diabetes mellitus with a name long enough to be cut at max length",
    "huntington disease",
    "",
]


def assert_same_links(doc, other):
    """Same IDs and candidates; scores equal but for float noise (the
    runtimes sum in different orders)."""
    for ent, other_ent in zip(doc.ents, other.ents, strict=True):
        assert (ent.text, ent._.cui, ent._.concept_ids) == (other_ent.text, other_ent._.cui, other_ent._.concept_ids)
        assert [c.name for c in ent._.candidates] == [c.name for c in other_ent._.candidates]
        np.testing.assert_allclose([c.score for c in ent._.candidates], [c.score for c in other_ent._.candidates], atol=1e-5)


@pytest.mark.parametrize("pooling", ["cls", "mean"])
@pytest.mark.parametrize("similarity", ["cosine", "dot"])
def test_onnx_vectors_equal_pytorch_ones(tiny_encoder, pooling, similarity):
    reference = TransformerEncoder(tiny_encoder, pooling=pooling, similarity=similarity, max_length=12).load()
    onnx = OnnxEncoder(tiny_encoder, pooling=pooling, similarity=similarity, max_length=12, weights="fp32").export(reference)
    # Padding differs with the batch: rows must not depend on their neighbours.
    np.testing.assert_allclose(onnx.encode(TEXTS), reference.encode(TEXTS), rtol=0, atol=1e-5)
    np.testing.assert_allclose(onnx.encode(TEXTS[:1]), reference.encode(TEXTS[:1]), rtol=0, atol=1e-5)


def test_int8_vectors_stay_close_to_float_ones(tiny_encoder):
    reference = TransformerEncoder(tiny_encoder).load()
    quantized = OnnxEncoder(tiny_encoder, weights="int8").export(reference)
    exact, approximate = reference.encode(TEXTS), quantized.encode(TEXTS)
    cosines = (exact * approximate).sum(axis=1)
    assert np.abs(exact - approximate).max() > 1e-5  # it did quantize
    assert cosines.min() > 0.95


def downloaded(model: str, repo: str, hub: Path, monkeypatch) -> Path:
    """The model folder `model` as Hugging Face's cache holds a download of
    `repo` (offline): its snapshot folder."""
    import shutil

    import huggingface_hub

    cached = hub / ("models--" + repo.replace("/", "--"))
    snapshot = cached / "snapshots" / "0123abc"
    shutil.copytree(model, snapshot)
    (cached / "refs").mkdir()
    (cached / "refs" / "main").write_text("0123abc")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return snapshot


@pytest.mark.parametrize("weights", [None, "fp32"])
def test_a_downloaded_hub_models_export_is_kept_so_the_next_load_exports_nothing(tiny_encoder, tmp_path, monkeypatch,
                                                                                 weights):
    downloaded(tiny_encoder, "acme/tiny-encoder", tmp_path / "hub", monkeypatch)
    first = OnnxEncoder("acme/tiny-encoder", weights=weights).load()
    monkeypatch.setattr(OnnxEncoder, "export", lambda *args: pytest.fail("a kept export was exported again"))
    second = OnnxEncoder("acme/tiny-encoder", weights=weights).load()
    assert second.weights_digest == first.weights_digest
    assert second.stored_weights == (weights or "compact")
    np.testing.assert_allclose(second.encode(TEXTS), first.encode(TEXTS), atol=1e-6)
    if weights == "fp32":
        np.testing.assert_allclose(second.encode(TEXTS), TransformerEncoder(tiny_encoder).load().encode(TEXTS), atol=1e-5)


def test_initialize_exports_from_the_hugging_face_model(tiny_encoder, disease_dictionary):
    onnx = make_nlp({"@misc": "spacy_biosyn.OnnxEncoder.v2", "name": tiny_encoder}, disease_dictionary)
    torch_nlp = make_nlp(tiny_encoder, disease_dictionary)
    docs = [doc_with_ents(nlp, TEXT, "Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes") for nlp in (onnx, torch_nlp)]
    assert_same_links(onnx(docs[0]), torch_nlp(docs[1]))
    assert [e._.cui for e in docs[0].ents] == ["D001943", "D010051", "D003924"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory, tiny_encoder):
    """A saved PyTorch pipeline and the same converted by `spacy_biosyn onnx`."""
    from typer.testing import CliRunner

    folder = tmp_path_factory.mktemp("onnx")
    (folder / "diseases.txt").write_text("D001943||breast cancer\nD010051||ovarian cancer\nD003924||type 2 diabetes\n")
    make_nlp(tiny_encoder, str(folder / "diseases.txt")).to_disk(folder / "torch")
    result = CliRunner().invoke(app, ["onnx", str(folder / "torch"), str(folder / "onnx")])
    assert result.exit_code == 0, result.output
    return folder


def test_the_converted_pipeline_links_as_the_original(converted):
    original, onnx = spacy.load(converted / "torch"), spacy.load(converted / "onnx")
    assert onnx.config["components"]["biosyn_linker"]["encoder"]["@misc"] == "spacy_biosyn.OnnxEncoder.v3"
    docs = [doc_with_ents(nlp, TEXT, "Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes") for nlp in (original, onnx)]
    assert_same_links(original(docs[0]), onnx(docs[1]))


def test_loading_and_linking_need_no_transformers(converted):
    # spaCy imports every installed plugin's factories when it makes a
    # Language (spacy-curated-transformers imports transformers' tokenizers):
    # what counts is what loading and linking import beyond that.
    script = textwrap.dedent(f"""
        import sys, spacy
        from helpers import TEXT, doc_with_ents
        def imported():
            return {{m for m in sys.modules if m.split(".")[0] == "transformers"}}
        spacy.blank("en")
        before = imported()
        nlp = spacy.load({str(converted / "onnx")!r})
        doc = nlp(doc_with_ents(nlp, TEXT, "Breast-Cancer"))
        assert doc.ents[0]._.cui == "D001943", doc.ents[0]._.cui
        print(sorted(imported() - before))
    """)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=str(converted), capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_two_processes_link_as_one(converted, tmp_path):
    nlp = spacy.load(converted / "onnx")
    docs = [doc_with_ents(nlp, TEXT, "Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes") for _ in range(6)]
    (tmp_path / "docs.pickle").write_bytes(pickle.dumps(docs))
    script = textwrap.dedent(f"""
        import pickle, spacy
        nlp = spacy.load({str(converted / "onnx")!r})
        nlp("warm the session up before the fork")
        docs = pickle.load(open({str(tmp_path / "docs.pickle")!r}, "rb"))
        linked = list(nlp.pipe(docs, n_process=2, batch_size=2))
        pickle.dump([[(e.text, e._.cui) for e in doc.ents] for doc in linked], open({str(tmp_path / "out.pickle")!r}, "wb"))
    """)
    result = subprocess.run([sys.executable, "-c", script], timeout=300, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    two = pickle.loads((tmp_path / "out.pickle").read_bytes())
    assert two == [[(e.text, e._.cui) for e in doc.ents] for doc in nlp.pipe(docs)]


def test_a_loaded_graph_saves_again_into_its_own_folder_and_after_its_folder_is_gone(converted, tmp_path):
    # The session runs the graph from its file, held open, not from a copy of its bytes.
    import shutil

    shutil.copytree(converted / "onnx", tmp_path / "a")
    nlp = spacy.load(tmp_path / "a")
    graph = tmp_path / "a" / "biosyn_linker" / "encoder" / "model.onnx"
    written = graph.stat().st_mtime_ns
    nlp.get_pipe("biosyn_linker").engine.encoder.to_disk(graph.parent)
    assert graph.stat().st_mtime_ns == written  # its own file, left as it is
    shutil.rmtree(tmp_path / "a")
    nlp.to_disk(tmp_path / "b")
    again = spacy.load(tmp_path / "b")
    docs = [doc_with_ents(n, TEXT, "Breast-Cancer", "Ovarian Cancer") for n in (nlp, again)]
    assert_same_links(nlp(docs[0]), again(docs[1]))
    assert [e._.cui for e in docs[1].ents] == ["D001943", "D010051"]


def test_a_graph_written_over_after_the_load_is_refused_naming_it(converted, tmp_path):
    import shutil

    from spacy_biosyn.errors import SavedStateError

    shutil.copytree(converted / "onnx", tmp_path / "a")
    nlp = spacy.load(tmp_path / "a")
    graph = tmp_path / "a" / "biosyn_linker" / "encoder" / "model.onnx"
    with open(graph, "r+b") as file:  # in place: the same file, other bytes
        file.write(b"\0" * 64)
    with pytest.raises(SavedStateError, match=f"{graph} was written over after this process loaded it"):
        nlp.to_disk(tmp_path / "b")


def test_a_graph_replaced_while_it_loads_is_not_half_taken(converted, tmp_path):
    # The session opens the file the encoder holds, not whatever its name points to by then.
    import shutil

    from spacy_biosyn.encoders.onnx_session import GraphFile, graph_bytes

    folder = tmp_path / "encoder"
    shutil.copytree(converted / "onnx" / "biosyn_linker" / "encoder", folder)
    loaded = OnnxEncoder("tiny", weights="fp32").from_disk(folder)
    expected = loaded.encode(TEXTS)
    held = GraphFile(folder / "model.onnx")
    other = tmp_path / "other.onnx"
    other.write_bytes(graph_bytes(loaded.stored_as("int8")._model))  # another graph, other vectors
    os.replace(other, folder / "model.onnx")
    encoder = OnnxEncoder("tiny", weights="fp32")._start(held, (folder / "tokenizer.json").read_text(encoding="utf8"))
    np.testing.assert_allclose(encoder.encode(TEXTS), expected, atol=1e-6)
    assert encoder.weights_digest == loaded.weights_digest


def test_a_forked_child_runs_the_held_file_and_keeps_no_copy_of_its_bytes(converted):
    from spacy_biosyn.encoders.onnx_session import GraphFile

    encoder = OnnxEncoder("tiny", weights="fp32").from_disk(converted / "onnx" / "biosyn_linker" / "encoder")
    expected = encoder.encode(TEXTS)
    child = os.fork()
    if child == 0:  # the child's own one-thread session, from the parent's file
        same = np.allclose(encoder.encode(TEXTS), expected, atol=1e-6)
        os._exit(0 if same and isinstance(encoder._model, GraphFile) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


def test_a_pytorch_encoder_folder_is_not_read_as_onnx(converted):
    with pytest.raises(ValueError, match="holds no model.onnx"):
        OnnxEncoder("any").from_disk(converted / "torch" / "biosyn_linker" / "encoder")


def test_converting_an_onnx_pipeline_again_is_a_clear_error_and_int8_is_made_from_it(converted, tmp_path, tiny_encoder):
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["onnx", str(converted / "onnx"), str(tmp_path / "again")])
    assert result.exit_code == 1
    assert "already runs in ONNX Runtime with fp32 weights: nothing to convert" in " ".join(result.output.split())
    assert not (tmp_path / "again").exists()

    # Built with the default encoder, a pipeline is ONNX Runtime's already, its graph compact.
    compact = make_nlp({"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": tiny_encoder}, str(converted / "diseases.txt"))
    compact.to_disk(tmp_path / "compact")
    result = CliRunner().invoke(app, ["onnx", str(tmp_path / "compact"), str(tmp_path / "again")])
    assert result.exit_code == 1
    assert "already runs in ONNX Runtime with compact weights: nothing to convert" in " ".join(result.output.split())

    result = CliRunner().invoke(app, ["onnx", str(converted / "onnx"), str(tmp_path / "fp16"), "--weights", "fp16"])
    assert result.exit_code == 2 and "'fp16': choose one of compact, fp32, int8" in " ".join(result.output.split())
    assert not (tmp_path / "fp16").exists()

    # A pipeline in ONNX Runtime already: --weights stores its graph anew, here int8.
    result = CliRunner().invoke(app, ["onnx", str(converted / "onnx"), str(tmp_path / "int8"), "--weights", "int8"])
    assert result.exit_code == 0, result.output
    int8 = spacy.load(tmp_path / "int8")
    assert int8.config["components"]["biosyn_linker"]["encoder"]["weights"] == "int8"
    doc = int8(doc_with_ents(int8, TEXT, "Breast-Cancer"))
    assert doc.ents[0]._.cui == "D001943"


def test_the_load_probe_allows_int8s_batch_noise_but_not_in_a_float_encoder(converted, tmp_path, monkeypatch):
    """int8 activations are scaled per batch, so a re-encoded name comes back
    near, not at, its saved vector: cosine 0.98 here, as MiniLM's did."""
    from typer.testing import CliRunner

    from spacy_biosyn.errors import MismatchError

    result = CliRunner().invoke(app, ["onnx", str(converted / "onnx"), str(tmp_path / "int8"), "--weights", "int8"])
    assert result.exit_code == 0, result.output
    encode = OnnxEncoder.encode

    def batch_noise(self, texts):
        vectors = encode(self, texts)
        turn = np.random.default_rng(0).normal(size=vectors.shape).astype(np.float32)
        turn -= (turn * vectors).sum(1, keepdims=True) * vectors  # orthogonal to each vector
        turn *= 0.2 / np.linalg.norm(turn, axis=1, keepdims=True)
        moved = vectors + turn  # cosine 1 / sqrt(1 + 0.2^2) = 0.981 with the original
        return moved / np.linalg.norm(moved, axis=1, keepdims=True)

    monkeypatch.setattr(OnnxEncoder, "encode", batch_noise)
    with pytest.raises(MismatchError, match="cosine 0.98"):
        spacy.load(converted / "onnx")
    assert spacy.load(tmp_path / "int8").get_pipe("biosyn_linker").engine.is_ready


def test_a_hub_download_cut_short_is_not_taken_for_the_model(tiny_encoder, tmp_path, monkeypatch):
    from spacy_biosyn.encoders.base import hub_snapshot

    snapshot = downloaded(tiny_encoder, "acme/cut-short", tmp_path, monkeypatch)
    assert hub_snapshot("acme/cut-short") == snapshot
    for weights in snapshot.glob("*.safetensors"):
        weights.unlink()  # the download stopped before the weights
    assert hub_snapshot("acme/cut-short") is None


def test_a_session_started_again_before_it_was_used_is_let_go(converted):
    """set_threads right after a load (a link-corpus worker's) starts a
    second session while the first is being made: the first is freed once
    made, not kept for the process's life."""
    import gc
    import weakref

    import spacy_biosyn.encoders.onnx_session as onnx_session

    encoder = OnnxEncoder(str(converted / "onnx" / "biosyn_linker" / "encoder"), weights="fp32")
    encoder.from_disk(converted / "onnx" / "biosyn_linker" / "encoder")
    first = weakref.ref(encoder._session)
    encoder.set_threads(1)
    assert encoder.encode(["breast cancer"]).shape[0] == 1
    first_thread = first()._thread if first() is not None else None
    if first_thread is not None:
        first_thread.join()
    gc.collect()
    assert first() is None and not onnx_session._STARTING


def test_the_session_thread_gives_back_the_memory_that_making_the_session_freed(tiny_encoder, monkeypatch):
    import threading

    from spacy_biosyn.encoders import onnx_session

    calls = []
    monkeypatch.setattr(onnx_session, "give_back_freed_memory", lambda: calls.append(threading.current_thread().name))
    encoder = OnnxEncoder(tiny_encoder).load()
    assert encoder.encode(["ab"]).shape == (1, encoder.dim)
    assert calls == ["onnx-session"]  # once, on the thread that made the session


@pytest.mark.parametrize("library", ["without malloc_trim", "missing"])
def test_freed_memory_is_given_back_only_where_the_c_library_can(monkeypatch, library):
    # glibc's malloc_trim; macOS, musl and Windows have none, and nothing happens there.
    from spacy_biosyn.files import spill

    def c_library(name):
        if library == "missing":
            raise OSError("no C library")
        return object()

    monkeypatch.setattr(spill.ctypes, "CDLL", c_library)
    spill.give_back_freed_memory()


@pytest.mark.parametrize("threads", [-1, 100_000, 2.0, True])
def test_a_thread_count_no_machine_holds_is_refused_when_the_encoder_is_made(tiny_encoder, threads):
    with pytest.raises(ValueError, match="threads must be a whole number from 0 .* to 1024"):
        OnnxEncoder(tiny_encoder, threads=threads)


@pytest.mark.parametrize("setting, value, message", [
    ("batch_size", 10**9, "batch_size must be a whole number from 1 to 65,536, got 1000000000"),
    ("batch_size", 0, "batch_size must be a whole number from 1 to 65,536, got 0"),
    ("max_length", 10**6, "max_length must be a whole number from 1 to 8,192, got 1000000"),
])
def test_a_size_no_machine_holds_an_encoder_run_of_is_refused_when_the_encoder_is_made(tiny_encoder, setting, value,
                                                                                        message):
    with pytest.raises(ValueError, match=message):
        OnnxEncoder(tiny_encoder, **{setting: value})
    with pytest.raises(ValueError, match=message):
        TransformerEncoder(tiny_encoder, **{setting: value})

