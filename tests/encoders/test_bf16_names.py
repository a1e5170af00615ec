"""The ONNX encoder's names_precision: where the CPU has bf16 in hardware a
build encodes its names in bf16 with the PyTorch model the graph was
exported from, keeps them in a store of their own, and says so; elsewhere,
or without those weights, the names go through the graph in fp32 under the
key they always had."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from helpers import THOUSAND_NAMES

from spacy_biosyn.encoders import bf16_names, vector_cache
from spacy_biosyn.encoders.base import encoder_identity
from spacy_biosyn.encoders.onnx import OnnxEncoder
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.errors import BiosynError
from spacy_biosyn.parts import registry


@pytest.fixture
def has_bf16(monkeypatch):
    """Set whether this CPU counts as having bf16 in hardware."""
    def set_to(value: bool) -> None:
        monkeypatch.setattr(bf16_names, "cpu_has_bf16", lambda: value)
    return set_to


@pytest.fixture
def saved_graph(tiny_encoder, tmp_path):
    """The tiny encoder's ONNX graph as a saved pipeline holds it: model.onnx
    and tokenizer.json, without the PyTorch weights."""
    OnnxEncoder(tiny_encoder).load().to_disk(tmp_path / "encoder")
    return tmp_path / "encoder"


def test_auto_encodes_names_in_bf16_where_the_cpu_has_it(tiny_encoder, tmp_path, has_bf16):
    has_bf16(True)
    encoder = OnnxEncoder(tiny_encoder).load()
    assert encoder.names_precision_used == "bf16"
    names = vector_cache.encode_names(encoder, THOUSAND_NAMES, tmp_path)
    pytorch = TransformerEncoder(tiny_encoder, device="cpu").load()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        np.testing.assert_allclose(names, pytorch.encode(THOUSAND_NAMES), rtol=0, atol=1e-6)
    fp32 = encoder.encode(THOUSAND_NAMES)  # the mentions' way, 1e-5 from PyTorch's fp32 at most
    assert np.abs(names - fp32).max() > 2e-5
    assert (names * fp32).sum(1).min() > 0.99
    assert encoder_identity(encoder)["names_precision"] == "bf16"


def test_auto_keeps_the_graph_in_fp32_where_the_cpu_lacks_bf16_and_the_store_its_old_key(tiny_encoder, tmp_path, has_bf16):
    has_bf16(False)
    encoder = OnnxEncoder(tiny_encoder).load()
    assert encoder.names_precision_used == "fp32"
    np.testing.assert_allclose(vector_cache.encode_names(encoder, THOUSAND_NAMES, tmp_path), encoder.encode(THOUSAND_NAMES), atol=1e-6)
    # A store made before names_precision existed is still this encoder's.
    assert "names_precision" not in encoder_identity(encoder)


def test_a_config_that_names_v1_builds_in_fp32_as_it_did(tiny_encoder, has_bf16):
    has_bf16(True)
    encoder = registry.misc.get("spacy_biosyn.OnnxEncoder.v1")(tiny_encoder).load()
    assert encoder.names_precision_used == "fp32"
    # Its vectors, and later versions' fp32 ones from an fp32 graph, are those stored under v1's key before v2 existed.
    identity = encoder_identity(encoder)
    assert identity["@misc"] == "spacy_biosyn.OnnxEncoder.v1" and "names_precision" not in identity
    assert identity["quantize"] is False and "weights" not in identity
    assert encoder_identity(OnnxEncoder(tiny_encoder, weights="fp32", names_precision="fp32").load()) == identity
    compact = encoder_identity(OnnxEncoder(tiny_encoder, names_precision="fp32").load())
    assert compact["weights"] == "compact" and compact["weights_sha256"] != identity["weights_sha256"]


def test_bf16_and_fp32_names_are_kept_apart(tiny_encoder, tmp_path, has_bf16):
    has_bf16(True)
    bf16 = OnnxEncoder(tiny_encoder).load()
    fp32 = OnnxEncoder(tiny_encoder, names_precision="fp32").load()
    vector_cache.encode_names(bf16, THOUSAND_NAMES, tmp_path)
    np.testing.assert_allclose(vector_cache.encode_names(fp32, THOUSAND_NAMES, tmp_path), fp32.encode(THOUSAND_NAMES), atol=1e-6)
    assert len(list(tmp_path.glob("*.sqlite"))) == 2


def test_a_graph_loaded_without_its_weights_encodes_names_itself(saved_graph, has_bf16):
    has_bf16(True)
    assert OnnxEncoder("tiny").from_disk(saved_graph).names_precision_used == "fp32"
    with pytest.raises(BiosynError, match="names_precision = 'bf16'.*saved model.onnx"):
        OnnxEncoder("tiny", names_precision="bf16").from_disk(saved_graph).names_precision_used


def test_int8_weights_encode_names_with_their_own_graph(tiny_encoder, has_bf16):
    has_bf16(True)
    assert OnnxEncoder(tiny_encoder, weights="int8").load().names_precision_used == "fp32"
    with pytest.raises(BiosynError, match="names_precision = 'bf16' and int8 weights"):
        OnnxEncoder(tiny_encoder, weights="int8", names_precision="bf16").load().names_precision_used


def test_an_unknown_names_precision_is_refused_by_name(tiny_encoder):
    with pytest.raises(ValueError, match="names_precision must be one of .*'fp16'"):
        OnnxEncoder(tiny_encoder, names_precision="fp16")


def test_a_saved_pipeline_may_be_loaded_with_another_names_precision(tiny_encoder, disease_dictionary, tmp_path):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={
        "dictionary": disease_dictionary, "encoder": {"@misc": "spacy_biosyn.OnnxEncoder.v2", "name": tiny_encoder}})
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline", config={
        "components": {"biosyn_linker": {"encoder": {"names_precision": "fp32"}}}})
    assert loaded.get_pipe("biosyn_linker").engine.encoder.names_precision == "fp32"


BUILD_IN_BF16_THEN_FORK = textwrap.dedent("""
    import json, sys
    from helpers import THOUSAND_NAMES, doc_with_ents, make_nlp
    encoder, dictionary = sys.argv[1:]
    with open(dictionary, "w") as out:
        out.writelines(f"D{i:06d}||{name}\\n" for i, name in enumerate(THOUSAND_NAMES))
    # The build runs PyTorch's thread pool in this process before nlp.pipe forks.
    nlp = make_nlp({"@misc": "spacy_biosyn.OnnxEncoder.v2", "name": encoder, "names_precision": "bf16"}, dictionary)
    text = "Renal cyst type 3 and lung tumor type 7."
    docs = [doc_with_ents(nlp, text, "Renal cyst type 3", "lung tumor type 7") for _ in range(6)]
    links = lambda docs: [[e._.cui for e in doc.ents] for doc in docs]
    print(json.dumps({"one": links(nlp.pipe(docs)), "two": links(nlp.pipe(docs, n_process=2, batch_size=2))}))
""")


def test_after_a_bf16_build_two_processes_link_as_one(tiny_encoder, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", BUILD_IN_BF16_THEN_FORK, tiny_encoder, str(tmp_path / "names.txt")],
        timeout=300, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["one"] == out["two"] == [[f"D{THOUSAND_NAMES.index('renal cyst type 3'):06d}",
                                         f"D{THOUSAND_NAMES.index('lung tumor type 7'):06d}"]] * 6
