"""A build's names encoded in fp32 by ONNX Runtime and in bf16 by PyTorch
(the default encoder's `names_precision`): names/s, Acc@1/5 on each
dataset's processed dev queries, and how many distinct dev strings keep the
top-1 name and IDs that fp32 names give them. Mentions are encoded in fp32
by ONNX Runtime in both.

    python -m benchmarks.names_precision [--datasets ncbi-disease bc5cdr-disease]

Each build starts from an empty cache, so every name of the dev dictionary
(MEDIC's, plus the train mentions) is encoded; the time is that of encoding
the names (the encode stage of the build, the PyTorch model's load
included), the ONNX export, kept between builds, aside. bf16 needs a CPU
with bf16 in hardware (AMX, AVX512-BF16): on another it is emulated, slowly.
"""
import os
import tempfile
import time

import spacy

from benchmarks.common import cpu_description, offline_minilm, parser, pct, print_table, progress
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.encoders.bf16_names import cpu_has_bf16
from spacy_biosyn.encoders.vector_cache import EncodedNames
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.parts import ONNX_ENCODER

K = 5


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--datasets", nargs="+", default=["ncbi-disease", "bc5cdr-disease"])
    args = p.parse_args()
    encoding = {"s": 0.0}
    whole = EncodedNames.whole  # an exact index takes every name's vector at once

    def timed_whole(self):
        begun = time.perf_counter()
        try:
            return whole(self)
        finally:
            encoding["s"] += time.perf_counter() - begun

    EncodedNames.whole = timed_whole
    rows = []
    for dataset in args.datasets:
        queries = read_concept_queries(args.data / dataset / "processed_dev")
        texts = list(dict.fromkeys(part for q in queries for part in q.mention.replace("+", "|").split("|")))
        tops = {}
        for precision in ("fp32", "bf16"):
            nlp = spacy.blank("en")
            linker = nlp.add_pipe("biosyn_linker", config={
                "dictionary": str(args.data / dataset / "dev_dictionary.txt"), "top_k": K,
                "encoder": {"@misc": ONNX_ENCODER, "name": args.encoder or offline_minilm(),
                            "names_precision": precision}})
            encoding["s"] = 0.0
            with tempfile.TemporaryDirectory() as cache:  # no name vectors kept from another build
                os.environ["SPACY_BIOSYN_CACHE"] = cache
                nlp.initialize()
            names = len(linker.engine.vocabulary().dictionary)
            metrics = evaluate(linker.rank, queries, K)
            tops[precision] = [(c[0].name, c[0].cuis) if c else None for c in linker.rank(texts)]
            same = sum(a == b for a, b in zip(tops[precision], tops["fp32"]))
            rows.append((dataset, precision, f"{names:,}", f"{encoding['s']:.1f}", f"{names / encoding['s']:.0f}",
                         pct(metrics["link_acc_1"]), pct(metrics["link_acc_5"]),
                         f"{same}/{len(texts)} ({pct(same / len(texts))}%)"))
            progress(rows[-1])
    print(f"CPU: {cpu_description()}; bf16 in hardware (oneDNN): {'yes' if cpu_has_bf16() else 'no'}\n")
    print_table(("dev set", "names encoded in", "names", "encoding s", "names/s", "acc@1", "acc@5",
                 "top-1 name and IDs as fp32 names"), rows)


if __name__ == "__main__":
    main()
