"""The name vectors saved in float32 and in int16 with a scale per name (the
exact index's `vector_precision`): the saved vectors' size, the time to read
them back, Acc@1/5 on each dataset's processed dev queries, and how many
distinct dev strings keep the top-1 name and IDs that float32 gives them.

    python -m benchmarks.vector_precision [--datasets ncbi-disease bc5cdr-disease]

Each dataset's dev dictionary is encoded once (the name vectors' store
answers the names encoded before) and indexed in each format from the same
float32 vectors, as `with_index` re-indexes them.
"""
import tempfile
from pathlib import Path

import spacy

from benchmarks.common import best_of, parser, pct, print_table, progress, with_index
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.parts import EXACT_INDEX, ONNX_ENCODER
from spacy_biosyn.search.index import VECTOR_PRECISIONS, ExactIndex

K = 5


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--datasets", nargs="+", default=["ncbi-disease", "bc5cdr-disease"])
    args = p.parse_args()
    rows = []
    for dataset in args.datasets:
        nlp = spacy.blank("en")
        config = {"dictionary": str(args.data / dataset / "dev_dictionary.txt"),
                  "index": {"@misc": EXACT_INDEX, "vector_precision": "float32"}}
        if args.encoder:
            config["encoder"] = {"@misc": ONNX_ENCODER, "name": args.encoder}
        component = nlp.add_pipe("biosyn_linker", config=config)
        nlp.initialize()
        queries = read_concept_queries(args.data / dataset / "processed_dev")
        texts = list(dict.fromkeys(part for q in queries for part in q.mention.replace("+", "|").split("|")))
        tops = {}
        for precision in ("float32", *(other for other in VECTOR_PRECISIONS if other != "float32")):
            _, linker, _ = with_index(component, {"@misc": EXACT_INDEX, "vector_precision": precision})
            linker.top_k = max(linker.top_k, K)
            with tempfile.TemporaryDirectory() as folder:
                linker.engine.vocabulary().index.to_disk(folder)
                megabytes = sum(f.stat().st_size for f in Path(folder).glob("vector*.npy")) / 2**20
                read_s = best_of(lambda: ExactIndex(vector_precision=precision).from_disk(folder))
            metrics = evaluate(linker.rank, queries, K)
            tops[precision] = [(c[0].name, c[0].cuis) if c else None for c in linker.rank(texts)]
            same = sum(a == b for a, b in zip(tops[precision], tops["float32"]))
            rows.append((dataset, precision, f"{megabytes:.0f}", f"{1000 * read_s:.0f}", pct(metrics["link_acc_1"]),
                         pct(metrics["link_acc_5"]), f"{same}/{len(texts)} ({pct(same / len(texts))}%)"))
            progress(rows[-1])
    print_table(("dev set", "vectors", "saved MiB", "read back ms (best of 3)", "acc@1", "acc@5",
                 "top-1 name and IDs as float32"), rows)


if __name__ == "__main__":
    main()
