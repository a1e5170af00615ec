"""The search's product in each number format and layout this CPU offers: a
batch of mention vectors against every name vector (MEDIC's size by
default), the product ExactIndex computes for every mention it ranks.

    python benchmarks/name_product.py [--names 71924] [--dim 384] [--batches 1 8 64 349]

fp32 is numpy's BLAS product, with the names row-major (as ExactIndex held
them before) or column-major (as it holds them now); bf16 and fp16 are
torch's; int8 is ONNX Runtime's MatMulInteger (uint8 mentions quantized per
batch x int8 names, int32 sums), run where onnxruntime and onnx are
installed; fp16 names read through F16C's conversions into fp32 arithmetic
are faiss's scalar quantizer, which gives only the k best names, not every
score (so it is timed at less than the search needs). Where a format has no native instructions (bf16 without
AVX512-BF16 or AMX, fp16 without AVX512-FP16) it is emulated, and slower
than fp32. A batch of 8 is one abstract's mentions; 349 is the distinct
mentions of NCBI dev in one nlp.pipe batch.
"""
import time

import faiss
import numpy as np
import torch

from common import cpu_description, parser, print_table


def best_ms(fn, repeats: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * min(times)


def onnx_int8_product(names: np.ndarray):
    """A function of a float32 batch giving its int32 products with the
    names' int8 codes, or None without onnxruntime and onnx."""
    try:
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        return None
    codes = np.round(names * (127 / np.abs(names).max())).astype(np.int8)
    graph = helper.make_graph(
        [
            helper.make_node("DynamicQuantizeLinear", ["q"], ["q8", "scale", "zero"]),
            helper.make_node("MatMulInteger", ["q8", "names", "zero"], ["sums"]),
        ],
        "product",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [None, names.shape[1]])],
        [helper.make_tensor_value_info("sums", TensorProto.INT32, [None, len(names)])],
        [numpy_helper.from_array(np.ascontiguousarray(codes.T), "names")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return lambda queries: session.run(None, {"q": queries})


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--names", type=int, default=71924)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--batches", type=int, nargs="+", default=[1, 8, 64, 349])
    args = p.parse_args()
    rng = np.random.default_rng(0)
    names = rng.standard_normal((args.names, args.dim)).astype(np.float32)
    column_major = np.asfortranarray(names)
    t_names = torch.from_numpy(names)
    # Names are stored in each format once, as an index would hold them.
    bf16, fp16 = t_names.bfloat16(), t_names.half()
    int8 = onnx_int8_product(names)
    fp16_faiss = faiss.IndexScalarQuantizer(args.dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    fp16_faiss.add(names)
    rows = []
    for batch in args.batches:
        queries = rng.standard_normal((batch, args.dim)).astype(np.float32)
        t_queries = torch.from_numpy(queries)
        runs = {
            "fp32, names row-major (numpy BLAS)": lambda: queries @ names.T,
            "fp32, names column-major (the index's)": lambda: queries @ column_major.T,
            "bf16 (torch)": lambda: t_queries.bfloat16() @ bf16.T,
            "fp16 (torch)": lambda: t_queries.half() @ fp16.T,
            "fp16 names, fp32 sums (faiss, F16C), 30 best only": lambda: fp16_faiss.search(queries, 30),
        }
        if int8 is not None:
            runs["int8 (ONNX Runtime MatMulInteger)"] = lambda: int8(queries)
        fp32_ms = None
        for name, run in runs.items():
            ms = best_ms(run)
            fp32_ms = fp32_ms or ms
            rows.append((batch, name, f"{ms:.2f} ms", f"{1000 * batch / ms:.0f} mentions/s", f"{fp32_ms / ms:.2f}x"))
    print(f"CPU: {cpu_description()}; mentions x {args.names} names x {args.dim} dims\n")
    print_table(("mentions", "format", "one batch", "product alone", "speed vs row-major fp32"), rows)


if __name__ == "__main__":
    main()
