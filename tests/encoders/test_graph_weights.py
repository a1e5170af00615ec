"""How the ONNX encoder's graph stores its weights: compact (fp16, int8
embeddings), fp32 or int8, and a setting that does not match a saved graph."""
import copy

import numpy as np
import onnx
import pytest
from helpers import round_as_compact

from spacy_biosyn.encoders.onnx import OnnxEncoder, graph_bytes, onnx_encoder_v1, onnx_encoder_v2
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
    assert compact.weights == "compact"
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


def test_a_setting_other_than_the_saved_graphs_is_named(reference, tiny_encoder, tmp_path):
    OnnxEncoder(tiny_encoder).export(reference).to_disk(tmp_path / "compact")
    with pytest.raises(ValueError, match=r"compact/model.onnx stores its weights as compact, but the encoder's "
                                         r"weights = 'fp32': set weights = 'compact'"):
        OnnxEncoder("tiny", weights="fp32").from_disk(tmp_path / "compact").encode(TEXTS)
    # A graph saved before graphs said how they store their weights is fp32 or int8.
    fp32 = OnnxEncoder(tiny_encoder, weights="fp32").export(reference)
    unmarked = onnx.load_from_string(graph_bytes(fp32._model))
    del unmarked.metadata_props[:]
    fp32.to_disk(tmp_path / "old")
    onnx.save(unmarked, tmp_path / "old" / "model.onnx")
    np.testing.assert_allclose(OnnxEncoder("tiny", weights="fp32").from_disk(tmp_path / "old").encode(TEXTS),
                               fp32.encode(TEXTS), atol=1e-6)
    with pytest.raises(ValueError, match="saved before graphs said which"):
        OnnxEncoder("tiny").from_disk(tmp_path / "old").encode(TEXTS)


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


def test_earlier_versions_name_fp32_or_int8_graphs(tiny_encoder):
    assert onnx_encoder_v2(tiny_encoder).weights == "fp32"
    assert onnx_encoder_v2(tiny_encoder, quantize=True).weights == "int8"
    assert onnx_encoder_v1(tiny_encoder).config_block["weights"] == "fp32"
    with pytest.raises(ValueError, match="weights must be one of .*'fp16'"):
        OnnxEncoder(tiny_encoder, weights="fp16")
