"""The default encoder's graph with its weights stored in fp32 and compact
(fp16, the word embeddings in int8: the ONNX encoder's `weights`): the
graph's size, its session's start, names/s, Acc@1/5 on each dataset's
processed dev queries, and how many distinct dev strings keep the top-1
name and IDs that the fp32 graph gives them. Names and mentions are both
encoded by the graph in question (names_precision fp32), as a build on a
CPU without bf16 encodes them; `--names-precision auto` adds a row of the
default settings on this CPU.

    python -m benchmarks.graph_weights [--datasets ncbi-disease bc5cdr-disease] [--names-precision auto]

Each build starts from an empty cache, so every name of the dev dictionary
(MEDIC's, plus the train mentions) is encoded with the graph at hand.
"""
import os
import tempfile
import time

import spacy

from benchmarks.common import cpu_description, offline_minilm, parser, pct, print_table, progress, timings
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.encoders.onnx import OnnxEncoder
from spacy_biosyn.encoders.onnx_session import graph_bytes
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.parts import ONNX_ENCODER

K = 5


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--datasets", nargs="+", default=["ncbi-disease", "bc5cdr-disease"])
    p.add_argument("--names-precision", default=None, help="a further row of compact weights with this setting")
    args = p.parse_args()
    encoder_name = args.encoder or offline_minilm()
    graphs = {}
    for weights in ("fp32", "compact"):
        encoder = OnnxEncoder(encoder_name, weights=weights).load()
        model = graph_bytes(encoder._require_model())
        start_s = sorted(timings(lambda: OnnxEncoder(encoder_name, weights=weights)._start(encoder._model, encoder._tokenizer_json), 5))[2]
        graphs[weights] = (len(model) / 2**20, start_s)
    settings = [("fp32", "fp32"), ("compact", "fp32")] + ([("compact", args.names_precision)] if args.names_precision else [])
    rows = []
    for dataset in args.datasets:
        queries = read_concept_queries(args.data / dataset / "processed_dev")
        texts = list(dict.fromkeys(part for q in queries for part in q.mention.replace("+", "|").split("|")))
        tops = {}
        for weights, names_precision in settings:
            nlp = spacy.blank("en")
            linker = nlp.add_pipe("biosyn_linker", config={
                "dictionary": str(args.data / dataset / "dev_dictionary.txt"), "top_k": K,
                "encoder": {"@misc": ONNX_ENCODER, "name": encoder_name, "weights": weights,
                            "names_precision": names_precision}})
            with tempfile.TemporaryDirectory() as cache:  # no name vectors kept from another build
                os.environ["SPACY_BIOSYN_CACHE"] = cache
                begun = time.perf_counter()
                nlp.initialize()
                build_s = time.perf_counter() - begun
            names = len(linker.engine.vocabulary().dictionary)
            metrics = evaluate(linker.rank, queries, K)
            tops[weights, names_precision] = [(c[0].name, c[0].cuis) if c else None for c in linker.rank(texts)]
            same = sum(a == b for a, b in zip(tops[weights, names_precision], tops["fp32", "fp32"]))
            megabytes, start_s = graphs[weights]
            rows.append((dataset, weights, linker.engine.encoder.names_precision_used, f"{megabytes:.1f}",
                         f"{1000 * start_s:.0f}", f"{names / build_s:.0f}", pct(metrics["link_acc_1"]),
                         pct(metrics["link_acc_5"]), f"{same}/{len(texts)} ({pct(same / len(texts))}%)"))
            progress(rows[-1])
    print(f"CPU: {cpu_description()}\n")
    print_table(("dev set", "graph weights", "names in", "graph MiB", "session start ms (median of 5)",
                 "build names/s", "acc@1", "acc@5", "top-1 name and IDs as the fp32 graph"), rows)


if __name__ == "__main__":
    main()
