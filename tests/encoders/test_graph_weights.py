"""How the ONNX encoder's graph stores its weights: compact (fp16, int8
embeddings), fp32 or int8, and a setting that does not match a saved graph."""
import copy
import hashlib

import numpy as np
import onnx
import pytest
from helpers import round_as_compact

from spacy_biosyn.encoders.onnx import OnnxEncoder, onnx_encoder_v1, onnx_encoder_v2
from spacy_biosyn.encoders.onnx_session import graph_bytes
from spacy_biosyn.encoders.transformer import TransformerEncoder

TEXTS = ["breast cancer", "ovarian cancer", "type 2 diabetes mellitus", "G6PD deficiency", "a"]


@pytest.fixture(scope="module")
def reference(tiny_encoder):
    return TransformerEncoder(tiny_encoder, device="cpu").load()


def rounded_as_compact(encoder: TransformerEncoder) -> TransformerEncoder:
    rounded = copy.copy(encoder)
    rounded.model = copy.deepcopy(encoder.model)
    round_as_compact(rounded.model)
    return rounded


def test_a_compact_graph_computes_the_rounded_weights_in_fp32(reference, tiny_encoder):
    compact = OnnxEncoder(tiny_encoder).export(reference)
    assert compact.weights is None and compact.stored_weights == "compact"
    expected = rounded_as_compact(reference).encode(TEXTS)
    np.testing.assert_allclose(compact.encode(TEXTS), expected, rtol=0, atol=1e-5)
    fp32 = OnnxEncoder(tiny_encoder, weights="fp32").export(reference).encode(TEXTS)
    assert np.abs(compact.encode(TEXTS) - fp32).max() > 1e-5  # it did round


def test_a_compact_graph_holds_no_large_fp32_weights(reference, tiny_encoder):
    graph = onnx.load_from_string(graph_bytes(OnnxEncoder(tiny_encoder).export(reference)._model))
    kinds = {init.name: (init.data_type, int(np.prod(init.dims))) for init in graph.graph.initializer}
    assert not [name for name, (kind, size) in kinds.items() if kind == onnx.TensorProto.FLOAT and size >= 1024]
    assert kinds["model.embeddings.word_embeddings.weight.int8"][0] == onnx.TensorProto.INT8
    assert any(kind == onnx.TensorProto.FLOAT16 for kind, _ in kinds.values())


def test_a_saved_graph_runs_as_saved_unless_a_setting_says_otherwise(reference, tiny_encoder, tmp_path):
    compact = OnnxEncoder(tiny_encoder).export(reference)
    fp32 = OnnxEncoder(tiny_encoder, weights="fp32").export(reference)
    compact.to_disk(tmp_path / "compact")
    fp32.to_disk(tmp_path / "fp32")
    # Unset (the default), a folder's graph runs as it was saved: a saved pipeline's encoder folder, named.
    for folder, encoder in (("compact", compact), ("fp32", fp32)):
        loaded = OnnxEncoder(str(tmp_path / folder)).load()
        assert loaded.stored_weights == folder
        np.testing.assert_allclose(loaded.encode(TEXTS), encoder.encode(TEXTS), atol=1e-6)
    with pytest.raises(ValueError, match=r"compact/model.onnx stores its weights as compact, but the encoder's "
                                         r"weights = 'fp32': leave weights unset"):
        OnnxEncoder("tiny", weights="fp32").from_disk(tmp_path / "compact").encode(TEXTS)
    with pytest.raises(ValueError, match="stores its weights as fp32, but the encoder's weights = 'compact'"):
        OnnxEncoder("tiny", weights="compact").from_disk(tmp_path / "fp32").encode(TEXTS)


def test_an_fp32_export_is_left_as_exported_so_caches_keep_their_keys(reference, tiny_encoder):
    # The graph's digest keys the name vectors' store and the named linkers' cache.
    exported = OnnxEncoder(tiny_encoder, weights="fp32").export(reference)
    assert exported.weights_digest == hashlib.sha256(reference.to_onnx()).hexdigest()


def test_int8_is_made_from_a_compact_graph_and_fp32_is_not(reference, tiny_encoder):
    compact = OnnxEncoder(tiny_encoder).export(reference)
    int8 = compact.stored_as("int8")
    graph = onnx.load_from_string(graph_bytes(int8._model))
    # The quantizer quantizes float weights only: the compact graph's fp16 ones are given back as fp32 first.
    assert sum(node.op_type == "MatMulInteger" for node in graph.graph.node) >= 6
    assert int8.weights == "int8"
    # Its embeddings keep their scales: one scale for all of them gave cosines of 0.76.
    assert (int8.encode(TEXTS) * compact.encode(TEXTS)).sum(axis=1).min() > 0.99
    with pytest.raises(ValueError, match="holds compact weights, which fp32 cannot be made from"):
        compact.stored_as("fp32")
    with pytest.raises(ValueError, match="already runs in ONNX Runtime with compact weights"):
        compact.stored_as("compact")
    assert OnnxEncoder(tiny_encoder, names_precision="fp32").export(reference).stored_as("int8").names_precision == "fp32"


def test_earlier_versions_name_fp32_or_int8_graphs(tiny_encoder):
    assert onnx_encoder_v2(tiny_encoder).weights == "fp32"
    assert onnx_encoder_v2(tiny_encoder, quantize=True).weights == "int8"
    assert onnx_encoder_v1(tiny_encoder).config_block["weights"] == "fp32"
    with pytest.raises(ValueError, match="weights must be one of .*'fp16'"):
        OnnxEncoder(tiny_encoder, weights="fp16")
