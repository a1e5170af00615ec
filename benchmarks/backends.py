"""Index back-ends side by side on one pipeline's stored name vectors (issue 5).

    python -m benchmarks.backends PIPELINE [--dataset ncbi-disease] [--factories HNSW32,SQfp16 ...]
                                           [--sparse-dims 0 64]

For the exact index and each faiss factory string: build time (from the
stored vectors, no re-encoding), size of the dense index, query latency per
mention, and Acc@1/Acc@5 on BioSyn's processed dev queries, scored against
the pipeline's own dictionary. Each factory is run with every --sparse-dims:
0 scores every name's tf-idf, N > 0 pools names from an N-dimensional SVD
projection of the tf-idf in a second faiss index (HNSW32).
"""
import tempfile
import time
from pathlib import Path

import numpy as np
import spacy

from benchmarks.common import parser, pct, print_table, progress
from spacy_biosyn.corpus import read_concept_queries
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.kb.faiss_index import FaissIndex
from spacy_biosyn.kb.index import ExactIndex

K = 5
FACTORIES = ["HNSW32", "HNSW32,SQfp16", "HNSW32,SQ8", "IVF1024,SQ8", "IVF1024,PQ48"]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline")
    p.add_argument("--dataset", default="ncbi-disease")
    p.add_argument("--factories", nargs="+", default=FACTORIES)
    p.add_argument("--sparse-dims", nargs="+", type=int, default=[0])
    args = p.parse_args()
    nlp = spacy.load(args.pipeline)
    component = nlp.get_pipe("biosyn_linker")
    component.top_k = max(component.top_k, K)
    linker = component.linker
    vectors = linker.index.reconstruct(np.arange(len(linker.index)))
    queries = read_concept_queries(args.data / args.dataset / "processed_dev")
    texts = list(dict.fromkeys(part for q in queries for part in q.mention.replace("+", "|").split("|")))
    dense_queries, sparse_queries = linker.encoder.encode(texts), linker.sparse.transform(texts)

    rows = []
    backends = [("exact", ExactIndex())] + [
        (f if not dims else f"{f} + sparse SVD {dims}", FaissIndex(f, sparse_dims=dims))
        for f in args.factories
        for dims in args.sparse_dims
    ]
    for name, index in backends:
        start = time.perf_counter()
        linker.index = index
        linker.build(linker.dictionary, refit_sparse=False, vectors=vectors)
        build_s = time.perf_counter() - start
        with tempfile.TemporaryDirectory() as folder:
            index.to_disk(folder)
            saved = {f.name: f.stat().st_size / 2**20 for f in Path(folder).iterdir()}
        megabytes = saved.get("vectors.npy", 0) + saved.get("dense.faiss", 0)
        sparse_megabytes = saved.get("sparse.faiss", 0)
        start = time.perf_counter()
        index.search(dense_queries, sparse_queries, linker.sparse_weight, K)
        latency_ms = 1000 * (time.perf_counter() - start) / len(texts)
        m = evaluate(component.rank, queries, K)
        rows.append(
            (name, f"{build_s:.1f}", f"{megabytes:.0f}", f"{sparse_megabytes:.0f}", f"{latency_ms:.2f}",
             pct(m['link_acc_1']), pct(m['link_acc_5']))
        )
        progress(rows[-1])
    print(f"\n{len(vectors)} names x {vectors.shape[1]} dims; {len(texts)} distinct dev mentions\n")
    header = ("back-end", "build s", "dense index MiB", "sparse index MiB", "ms/mention", "acc@1", "acc@5")
    print_table(header, rows)


if __name__ == "__main__":
    main()
