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

import spacy

from benchmarks.common import parser, pct, print_table, progress, with_index
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.parts import EXACT_INDEX, FAISS_INDEX

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
    source = component.engine.vocabulary()
    queries = read_concept_queries(args.data / args.dataset / "processed_dev")
    texts = list(dict.fromkeys(part for q in queries for part in q.mention.replace("+", "|").split("|")))
    dense_queries, sparse_queries = source.encoder.encode(texts), source.sparse.transform(texts)

    rows = []
    backends = [("exact", {"@misc": EXACT_INDEX})] + [
        (f if not dims else f"{f} + sparse SVD {dims}", {"@misc": FAISS_INDEX, "factory": f, "sparse_dims": dims})
        for f in args.factories
        for dims in args.sparse_dims
    ]
    for name, block in backends:
        _, linker, build_s = with_index(component, block)
        linker.top_k = component.top_k
        index = linker.engine.vocabulary().index
        with tempfile.TemporaryDirectory() as folder:
            index.to_disk(folder)
            saved = {f.name: f.stat().st_size / 2**20 for f in Path(folder).iterdir()}
        megabytes = saved.get("vectors.npy", 0) + saved.get("dense.faiss", 0)
        sparse_megabytes = saved.get("sparse.faiss", 0)
        start = time.perf_counter()
        index.search(dense_queries, sparse_queries, source.sparse_weight, K)
        latency_ms = 1000 * (time.perf_counter() - start) / len(texts)
        m = evaluate(linker.rank, queries, K)
        rows.append(
            (name, f"{build_s:.1f}", f"{megabytes:.0f}", f"{sparse_megabytes:.0f}", f"{latency_ms:.2f}",
             pct(m['link_acc_1']), pct(m['link_acc_5']))
        )
        progress(rows[-1])
    print(f"\n{len(source.dictionary)} names x {source.encoder.dim} dims; {len(texts)} distinct dev mentions\n")
    header = ("back-end", "build s", "dense index MiB", "sparse index MiB", "ms/mention", "acc@1", "acc@5")
    print_table(header, rows)


if __name__ == "__main__":
    main()
