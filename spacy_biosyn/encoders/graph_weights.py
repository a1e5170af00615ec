"""How an ONNX graph stores its weights (the ONNX encoder's `weights`).

"fp32" is the graph as exported. "compact" stores every large weight in
fp16, cast back to fp32 when ONNX Runtime loads the graph (it folds the
casts), and the embedding tables (words, positions) in int8 with a float32
scale per block of 32 values, turned into fp32 only for the rows a batch
gathers: the graph computes in fp32 as before, from weights rounded once. all-MiniLM-L6-v2
takes 34 MB instead of 90, its session starts faster and holds 35 MB less,
its vectors keep a cosine of 0.99996 or more with fp32's, and the NCBI and
BC5CDR dev queries keep Acc@1 and at least 99.5% of their top-1 names
(docs/record.md). The embeddings stay in 8 bits because they are half of
a BERT's weights and are read a row at a time; int8 in every matrix moved
too many top-1 names. "int8" is ONNX Runtime's dynamic quantization:
int8 weights and activations quantized per batch, faster and less exact.

A compact or int8 graph says so in its metadata (WEIGHTS_KEY), so a
setting that does not match the saved graph is named, never run as if it
did. An fp32 graph is left as exported, unmarked, so its digest (which keys
the name vectors' caches) stays what it was; so are int8 graphs saved
before the key.
"""
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional

import numpy as np

WEIGHTS = ("compact", "fp32", "int8")
WEIGHTS_KEY = "spacy_biosyn.weights"
# Smaller tensors (biases, layer norms, shape constants) stay in fp32: they
# weigh little and hold values fp16 lacks (-3.4e38 masks, 1e-12 epsilons).
_LARGE = 1024
_BLOCK = 32
_FP16_MAX = 65504.0
# The int8 tables' scales: what ONNX Runtime's quantizer must leave alone.
_SCALES = ".scales"


def stored_as(model: bytes, weights: str) -> bytes:
    """The fp32 graph `model` with its weights stored as `weights` says."""
    if weights == "compact":
        return _compact(model)
    return _quantized(model) if weights == "int8" else model


def in_float32(model: bytes) -> bytes:
    """A compact graph with its fp16 weights stored in fp32 again (the int8
    embeddings stay), as ONNX Runtime's quantizer needs float weights to
    quantize: from a compact graph it would quantize no product, without a word.
    Not marked: no more than an intermediate step to int8."""
    import onnx
    from onnx import numpy_helper

    graph_model = onnx.load_from_string(model)
    graph = graph_model.graph
    halves = {init.name: init for init in graph.initializer if init.data_type == onnx.TensorProto.FLOAT16}
    kept: List = []
    for node in graph.node:
        if node.op_type == "Cast" and node.input[0] in halves:
            graph.initializer.append(numpy_helper.from_array(
                numpy_helper.to_array(halves[node.input[0]]).astype(np.float32), node.output[0]))
        else:
            kept.append(node)
    _replace_nodes(graph, kept)
    read = {name for node in kept for name in node.input}
    for name, half in halves.items():
        if name not in read:
            graph.initializer.remove(half)
    return graph_model.SerializeToString()


def marked_weights(metadata: Dict[str, str]) -> Optional[str]:
    """What a graph's metadata (a session's custom_metadata_map) says of
    its weights; None for a graph saved before it said (fp32 or int8)."""
    return metadata.get(WEIGHTS_KEY)


def _compact(model: bytes) -> bytes:
    import onnx
    from onnx import helper, numpy_helper

    graph_model = onnx.load_from_string(model)
    graph = graph_model.graph
    users: Dict[str, List] = {}
    for node in graph.node:
        for position, name in enumerate(node.input):
            users.setdefault(name, []).append((node, position))
    # An initializer that is also a graph input or output (a default that a
    # caller may replace) keeps its name and type.
    exposed = {value.name for value in (*graph.input, *graph.output)}
    casts, tables = [], {}
    for init in list(graph.initializer):
        if init.name in exposed:
            continue
        values = numpy_helper.to_array(init)
        if values.dtype != np.float32 or values.size < _LARGE or not np.isfinite(values).all():
            continue
        if _is_embedding_table(values, users.get(init.name, [])):
            codes, scales = _int8_blocks(values)
            graph.initializer.extend([numpy_helper.from_array(codes, f"{init.name}.int8"),
                                      numpy_helper.from_array(scales, f"{init.name}{_SCALES}")])
            tables[init.name] = values.shape[1]
        elif _fits_fp16(values):
            graph.initializer.append(numpy_helper.from_array(values.astype(np.float16), f"{init.name}.fp16"))
            casts.append(helper.make_node("Cast", [f"{init.name}.fp16"], [init.name], to=onnx.TensorProto.FLOAT,
                                          name=f"{init.name}.cast"))
        else:
            continue
        graph.initializer.remove(init)
    nodes = list(casts)
    for node in graph.node:
        table = node.input[0] if node.op_type == "Gather" and node.input else None
        nodes.extend(_gathered_rows(node, tables[table]) if table in tables else [node])
    _replace_nodes(graph, nodes)
    _mark(graph_model, "compact")
    return graph_model.SerializeToString()


def _is_embedding_table(values: np.ndarray, users: Iterable) -> bool:
    """A matrix read only a row at a time (Gather on axis 0), whose rows
    split into blocks."""
    users = list(users)
    return (values.ndim == 2 and values.shape[1] % _BLOCK == 0 and bool(users) and all(
        node.op_type == "Gather" and position == 0
        and all(attribute.i == 0 for attribute in node.attribute if attribute.name == "axis")
        for node, position in users))


def _fits_fp16(values: np.ndarray) -> bool:
    """Whether fp16 holds `values` to its precision, relative to the
    largest: not too large, nor all so small that they fall below fp16's
    normal numbers (1e-6 weights would lose digits, or be flushed to 0)."""
    largest = float(np.abs(values).max())
    if largest > _FP16_MAX:
        return False
    error = np.abs(values.astype(np.float16).astype(np.float32) - values).max()
    return bool(error <= largest * 2.0**-11)


def _int8_blocks(values: np.ndarray):
    """int8 codes (rows, blocks, 32) and float32 scales (rows, blocks, 1),
    each block's largest value at +-127."""
    blocks = values.reshape(values.shape[0], -1, _BLOCK)
    largest = np.abs(blocks).max(axis=2, keepdims=True)
    scales = np.where(largest > 0, largest / np.float32(127), np.float32(1)).astype(np.float32)
    codes = np.clip(np.rint(blocks / scales), -127, 127).astype(np.int8)
    return codes, scales


def _gathered_rows(gather, width: int) -> list:
    """Nodes that do what `gather` did with the table in fp32: gather the
    int8 rows and their scales, multiply, and join the blocks into rows."""
    from onnx import TensorProto, helper

    table, ids = gather.input[0], gather.input[1]
    out, step = gather.output[0], f"{gather.output[0]}.rows"
    width_name = f"{step}.width"
    return [
        helper.make_node("Gather", [f"{table}.int8", ids], [f"{step}.codes"], axis=0),
        helper.make_node("Cast", [f"{step}.codes"], [f"{step}.float"], to=TensorProto.FLOAT),
        helper.make_node("Gather", [f"{table}{_SCALES}", ids], [f"{step}.scales"], axis=0, name=f"{step}{_SCALES}"),
        helper.make_node("Mul", [f"{step}.float", f"{step}.scales"], [f"{step}.blocks"]),
        helper.make_node("Shape", [ids], [f"{step}.ids_shape"]),
        helper.make_node("Constant", [], [width_name],
                         value=helper.make_tensor(width_name, TensorProto.INT64, [1], [width])),
        helper.make_node("Concat", [f"{step}.ids_shape", width_name], [f"{step}.shape"], axis=0),
        helper.make_node("Reshape", [f"{step}.blocks", f"{step}.shape"], [out]),
    ]


def _replace_nodes(graph, nodes: list) -> None:
    del graph.node[:]
    graph.node.extend(nodes)


def _mark(graph_model, weights: str) -> None:
    from onnx.helper import set_model_props

    set_model_props(graph_model, {**{entry.key: entry.value for entry in graph_model.metadata_props},
                                  WEIGHTS_KEY: weights})


def _quantized(model: bytes) -> bytes:
    """int8 weights, activations quantized per batch (ONNX Runtime's dynamic
    quantization, which needs the onnx package)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # It would quantize a compact graph's embedding scales too, a single scale for them all.
    scales = [node.name for node in onnx.load_from_string(model).graph.node
              if node.op_type == "Gather" and node.input[0].endswith(_SCALES)]
    with tempfile.TemporaryDirectory() as folder:
        source, target = Path(folder) / "model.onnx", Path(folder) / "quantized.onnx"
        source.write_bytes(model)
        quantize_dynamic(source, target, weight_type=QuantType.QInt8, nodes_to_exclude=scales)
        graph_model = onnx.load(target)
    _mark(graph_model, "int8")
    return graph_model.SerializeToString()
