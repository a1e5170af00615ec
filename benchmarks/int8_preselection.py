"""Is an int8 product over every name, with an exact fp32 re-score of the
names it cannot rule out, faster than ExactIndex's fp32 product, with the
same ranking? (Issue 29's search lever. Measured here it is not: the
error bound lets 5-6k names a string through; docs/record.md.)

    python benchmarks/int8_preselection.py PIPELINE

For each dev abstract of NCBI Disease and BC5CDR, the strings the linker
ranks for its gold spans are encoded once (outside the timings); then
ExactIndex.search and the int8 search below rank them, one abstract at a
time (the latency of nlp(text)) and all abstracts in one call (nlp.pipe).

The int8 search: names quantized per row to 7 bits (|code| <= 63, so that
AVX2's u8 x s8 pair sums cannot saturate and the int32 products are exact),
mentions one by one to 8 bits; ONNX Runtime's MatMulIntegerToFloat gives
every approximate dense score. Each approximate score is within
B = |q8| R + |q - q8| (N + R) of the fp32 one (or the same per
dimension, whichever is smaller), where R is the largest quantization
residual of a name vector and N the largest quantized name norm, the names
centred on their mean vector first. As ExactIndex does, the k best names by approximate score give exact
totals whose minimum T the k-th total is at least; only names whose
approximate dense score reaches T - lambda - B can rank, and only they are
scored in fp32 from a row-major copy of the vectors. The ranking is exact
but for fp32 rounding between a matrix product and a row's dot product.
"""
import time

import numpy as np
import spacy

from common import RAW_ABSTRACTS, cpu_description, parser, print_table
from spacy_biosyn.corpus import pubtator_to_doc, read_pubtator
from spacy_biosyn.scoring import biosyn_scores, top_k

DISEASE_LABELS = {"ncbi-disease": None, "bc5cdr-disease": {"Disease"}}
BOUND_EPS = 1e-5


class Int8Preselection:
    def __init__(self, vectors: np.ndarray, sparse_rows):
        import onnxruntime
        from onnx import TensorProto, helper, numpy_helper

        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.sparse = sparse_rows
        # Encoders give every vector nearly the same value on a few dimensions
        # (MiniLM: one near 0.7): centred, the codes spend their levels on
        # what tells names apart; q.mean is the same for every name and is
        # added back. (Scaling each dimension to the names' width as well
        # made the error bound larger: 0.149 on average against 0.105.)
        self.mean = self.vectors.mean(axis=0)
        centred = self.vectors - self.mean
        scale = np.abs(centred).max(axis=1) / 63
        scale[scale == 0] = 1
        codes = np.round(centred / scale[:, None]).astype(np.int8)
        quantized = scale[:, None] * codes
        residuals = centred - quantized
        self.residual = float(np.linalg.norm(residuals, axis=1).max())
        self.reach = float(np.linalg.norm(quantized, axis=1).max()) + self.residual
        # Per dimension, the largest residual and value of any centred name:
        # tighter than the norms where a query's error is uneven.
        self.residual_by_dim = np.abs(residuals).max(axis=0)
        self.reach_by_dim = np.abs(centred).max(axis=0)
        n, dim = self.vectors.shape
        graph = helper.make_graph(
            [helper.make_node("MatMulIntegerToFloat", ["q8", "codes", "q_scale", "scale", "q_zero"], ["scores"],
                              domain="com.microsoft")],
            "int8_product",
            [helper.make_tensor_value_info("q8", TensorProto.UINT8, [None, dim]),
             helper.make_tensor_value_info("q_scale", TensorProto.FLOAT, [])],
            [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [None, n])],
            [numpy_helper.from_array(np.ascontiguousarray(codes.T), "codes"),
             numpy_helper.from_array(scale.astype(np.float32), "scale"),
             numpy_helper.from_array(np.array(128, dtype=np.uint8), "q_zero")],
        )
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
        self.session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        self.candidates, self.bounds = [], []

    def search(self, dense_q, sparse_q, weight, k):
        # q.v = q.mean + q.centred; each query is quantized with its own step
        # (ONNX Runtime takes one scale for the left side: 1, applied after).
        step = np.abs(dense_q).max(axis=1, keepdims=True) / 127
        step[step == 0] = 1
        levels = np.clip(np.round(dense_q / step), -127, 127)
        approx = self.session.run(None, {"q8": (levels + 128).astype(np.uint8), "q_scale": np.array(1, np.float32)})[0]
        approx *= step
        approx += (dense_q @ self.mean)[:, None]
        q8, error = step * levels, dense_q - step * levels
        # |q.c - q8.c8| <= |q8.(c - c8)| + |(q - q8).c|
        bound = (np.minimum(np.linalg.norm(q8, axis=1) * self.residual, np.abs(q8) @ self.residual_by_dim)
                 + np.minimum(np.linalg.norm(error, axis=1) * self.reach, np.abs(error) @ self.reach_by_dim))
        self.bounds.extend(bound.tolist())
        headroom = max(weight, 0.0) + BOUND_EPS
        ranked = []
        for seed, reach, query, q in zip(top_k(approx, k), approx + bound[:, None], sparse_q.toarray(), dense_q):
            floor = biosyn_scores(self.vectors[seed] @ q, self.sparse[seed] @ query, weight).min() - headroom
            # Exact dense scores for the names the int8 scores cannot rule
            # out; the sparse product only for those whose exact one can rank.
            near = np.flatnonzero(reach >= floor)
            self.candidates.append(len(near))
            dense = self.vectors[near] @ q
            candidates, dense = near[dense >= floor], dense[dense >= floor]
            totals = biosyn_scores(dense, self.sparse[candidates] @ query, weight)
            best = top_k(totals[None], k)[0]
            ranked.append((totals[best], candidates[best]))
        scores, ids = zip(*ranked)
        return np.array(scores, dtype=np.float32), np.array(ids, dtype=np.int64)


def timed(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline")
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    nlp = spacy.load(args.pipeline)
    component = nlp.get_pipe("biosyn_linker")
    linker = component.linker
    k, weight = component.pool_size, linker.sparse_weight
    started = time.perf_counter()
    int8 = Int8Preselection(linker.index.reconstruct(np.arange(len(linker.index))), linker.index.sparse_vectors)
    print(f"CPU: {cpu_description()}")
    print(f"int8 codes of {len(linker.index)} names in {time.perf_counter() - started:.1f} s; "
          f"largest residual {int8.residual:.4f}; k {k}, lambda {weight:.4f}")
    rows = []
    for dataset, splits in RAW_ABSTRACTS.items():
        docs = [pubtator_to_doc(nlp, d, DISEASE_LABELS[dataset]) for d in read_pubtator(args.data / splits["dev"])]
        queries = []
        for doc in docs:
            texts = list(dict.fromkeys(t for t in (component.preprocessor.clean(s.text) for s in doc.ents) if t))
            if texts:
                queries.append(linker._queries(texts))
        every = linker._queries(list(dict.fromkeys(
            t for doc in docs for t in (component.preprocessor.clean(s.text) for s in doc.ents) if t)))
        differ = 0
        for dq, sq in queries + [every]:
            exact_scores, exact_ids = linker.index.search(dq, sq, weight, k)
            scores, ids = int8.search(dq, sq, weight, k)
            differ += int((exact_ids != ids).any(axis=1).sum())
        int8.candidates.clear()
        for name, index in (("ExactIndex fp32", linker.index), ("int8 pre-selection + fp32", int8)):
            per_doc = np.array([min(timed(lambda: index.search(dq, sq, weight, k))[0] for _ in range(args.repeats))
                                for dq, sq in queries]) * 1000
            batch = min(timed(lambda: index.search(*every, weight, k))[0] for _ in range(args.repeats))
            p50, p95 = np.percentile(per_doc, [50, 95])
            rows.append((f"{dataset} dev", name, f"{p50:.1f}", f"{p95:.1f}", f"{per_doc.sum() / 1000:.2f}",
                         f"{batch:.3f}", f"{every[0].shape[0]}",
                         f"{np.mean(int8.candidates):.0f}" if index is int8 else "", str(differ) if index is int8 else ""))
    print(f"error bound of an approximate dense score: mean {np.mean(int8.bounds):.4f}, largest {np.max(int8.bounds):.4f}")
    print_table(("corpus", "search", "per abstract p50 ms", "p95 ms", "all abstracts one by one s",
                 "one batch s", "strings in the batch", "names re-scored a string", "strings ranked otherwise"), rows)


if __name__ == "__main__":
    main()
