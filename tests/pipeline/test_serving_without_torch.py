"""An install without the torch extra (a server's) links with ONNX Runtime
alone: a saved pipeline loads and links as where it was built, its encoder
folder builds another linker, and what needs PyTorch says which extra brings
it. The extras' modules are hidden in a child process, as where they are
not installed."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import EXTRA_MODULES, TEXT, doc_with_ents, hiding, make_nlp

TESTS = Path(__file__).resolve().parents[1]
MENTIONS = ("Breast-Cancer", "Ovarian Cancer")

SERVE = hiding(*EXTRA_MODULES) + textwrap.dedent(f"""
    import json, sys
    sys.path.insert(0, {str(TESTS)!r})
    import spacy
    from helpers import TEXT, doc_with_ents, make_nlp
    saved, dictionary, hub_folder = sys.argv[1:]

    def links(nlp):
        doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, TEXT, *{MENTIONS!r}))
        return [[e.text, e._.cui, [list(c) for c in e._.kb_ents]] for e in doc.ents]

    report = {{"loaded": links(spacy.load(saved))}}
    exported = {{"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": saved + "/biosyn_linker/encoder"}}
    report["rebuilt"] = links(make_nlp(exported, dictionary))
    try:
        make_nlp({{"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": hub_folder}}, dictionary)
    except ImportError as error:
        report["export"] = str(error)
    print(json.dumps(report))
""")


def child_env(tmp_path) -> dict:
    # An empty cache: no ONNX export kept from another test stands in for PyTorch.
    return {**os.environ, "SPACY_BIOSYN_CACHE": str(tmp_path / "cache")}


def test_a_saved_pipeline_links_without_torch_as_where_it_was_built(tmp_path, tiny_encoder, disease_dictionary):
    # fp32 names: without PyTorch a build encodes them in fp32 (bf16 runs in PyTorch).
    encoder = {"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": tiny_encoder, "names_precision": "fp32"}
    nlp = make_nlp(encoder, disease_dictionary)
    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, TEXT, *MENTIONS))
    here = [[e.text, e._.cui, [list(c) for c in e._.kb_ents]] for e in doc.ents]
    nlp.to_disk(tmp_path / "saved")

    result = subprocess.run([sys.executable, "-c", SERVE, str(tmp_path / "saved"), disease_dictionary, tiny_encoder],
                            capture_output=True, text=True, timeout=300, env=child_env(tmp_path))
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])
    assert [cui for _, cui, _ in here] == ["D001943", "D010051"]
    assert report["loaded"] == here
    assert report["rebuilt"] == here
    assert 'pip install "spacy-biosyn[torch]"' in report["export"]
    assert "model.onnx and tokenizer.json" in report["export"]


def test_training_without_torch_says_which_extra_to_install(tmp_path):
    run = hiding(*EXTRA_MODULES) + "import runpy; runpy.run_module('spacy_biosyn', run_name='__main__')"
    config = TESTS.parent / "configs" / "biosyn.cfg"
    result = subprocess.run([sys.executable, "-c", run, "train", str(config), "--output", str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120, env=child_env(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip() == ('✘ training needs torch, transformers, pytorch_metric_learning, which '
                                     'spacy-biosyn installs with its torch extra: pip install "spacy-biosyn[torch]"')
    assert not (tmp_path / "out").exists()


def test_a_kept_export_that_does_not_run_is_kept_where_it_cannot_be_made_again(tmp_path, tiny_encoder, monkeypatch):
    from spacy_biosyn.encoders.onnx import OnnxEncoder

    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    OnnxEncoder(tiny_encoder).load()
    [graph] = (tmp_path / "cache" / "onnx").glob("*/model.onnx")
    graph.write_bytes(b"not a graph")  # as an ONNX Runtime too old for it, in a cache another install shares
    load = hiding(*EXTRA_MODULES) + textwrap.dedent(f"""
        from spacy_biosyn.encoders.onnx import OnnxEncoder
        try:
            OnnxEncoder({tiny_encoder!r}).load()
        except ImportError as error:
            print(type(error).__name__, error)
    """)
    result = subprocess.run([sys.executable, "-c", load], capture_output=True, text=True, timeout=120,
                            env=child_env(tmp_path))
    assert result.stdout.startswith(f"MissingExtraError {graph.parent} cannot be run"), result.stderr[-2000:]
    assert 'pip install "spacy-biosyn[torch]"' in result.stdout
    assert graph.read_bytes() == b"not a graph"
