"""Speed and memory of the linker on this machine.

    python benchmarks/speed.py [--pipeline DIR | --dictionary FILE] [--index FACTORY [--sparse-dims N]] [--profile]

1. index build time for a dictionary (default: MEDIC, NCBI's train_dictionary),
   unless a saved --pipeline is given;
2. linking throughput through the component, all preprocessing included
   (mentions/s over the gold disease spans of the NCBI and BC5CDR dev
   abstracts), next to the raw encoder's names/s on the same mention strings,
   in the same run; --profile prints where the component's time goes;
3. peak resident memory of this process;
4. `spacy.load` time of the saved pipeline, in a fresh process.
"""
import cProfile
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import spacy

from common import RAW_ABSTRACTS, offline_minilm, parser, print_table
from spacy_biosyn.corpus import pubtator_to_doc, read_pubtator
from spacy_biosyn.text import normalize

REPEATS = 3


def best_of(fn, repeats=REPEATS) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# Disease mentions only: BC5CDR's abstracts also annotate chemicals.
DISEASE_LABELS = {"ncbi-disease": None, "bc5cdr-disease": {"Disease"}}


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--pipeline", default=None, help="a saved pipeline: skips the index build")
    p.add_argument("--dictionary", default=None)
    p.add_argument("--index", default=None, help="a faiss factory string, e.g. HNSW32,SQfp16: "
                   "re-index the stored name vectors with FaissIndex before measuring")
    p.add_argument("--sparse-dims", type=int, default=0, help="with --index: FaissIndex sparse_dims")
    p.add_argument("--profile", action="store_true", help="profile the component on each corpus")
    p.add_argument("--save", type=Path, default=None, help="keep the measured pipeline in this folder")
    args = p.parse_args()
    rows = []
    if args.pipeline:
        nlp = spacy.load(args.pipeline)
        component = nlp.get_pipe("biosyn_linker")
    else:
        dictionary = args.dictionary or args.data / "ncbi-disease" / "train_dictionary.txt"
        nlp = spacy.blank("en")
        config = {"dictionary": str(dictionary), "encoder": args.encoder or offline_minilm()}
        nlp.add_pipe("biosyn_linker", config=config)
        component = nlp.get_pipe("biosyn_linker")
        start = time.perf_counter()
        nlp.initialize()
        build_s = time.perf_counter() - start
        n_names = len(component.linker.dictionary)
        rows.append(
            ("index build (initialize)", f"{build_s:.1f} s", f"{n_names} names, {n_names / build_s:.0f} names/s")
        )

    if args.index:
        # A pipeline whose config names the new back-end, so that the cold start
        # below loads what was measured; encoder and tf-idf come from the saved one.
        source = component.linker
        config = nlp.config["components"]["biosyn_linker"]
        nlp = spacy.blank(nlp.lang)
        component = nlp.add_pipe("biosyn_linker", config={
            "encoder": dict(config["encoder"]),
            "index": {
                "@misc": "spacy_biosyn.FaissIndex.v1",
                "factory": args.index,
                "sparse_dims": args.sparse_dims,
            },
            "sparse_weight": source.sparse_weight,
        })
        component.linker.encoder, component.linker.sparse = source.encoder, source.sparse
        vectors = source.index.reconstruct(np.arange(len(source.index)))
        start = time.perf_counter()
        component.linker.build(source.dictionary, refit_sparse=False, vectors=vectors)
        rows.append((f"FaissIndex {args.index}, sparse_dims {args.sparse_dims}: build", f"{time.perf_counter() - start:.1f} s",
                     f"{len(vectors)} stored vectors, no re-encoding"))

    encoder = component.linker.encoder
    for dataset, splits in RAW_ABSTRACTS.items():
        corpus = f"{dataset} dev"
        documents = read_pubtator(args.data / splits["dev"])
        docs = [pubtator_to_doc(nlp, d, DISEASE_LABELS[dataset]) for d in documents]
        strings = [normalize(span.text) for doc in docs for span in doc.ents]
        encoder.encode(strings[:64])  # warm-up
        pipe_s = best_of(lambda: list(component.pipe(docs)))
        raw_s = best_of(lambda: encoder.encode(strings))
        distinct = list(dict.fromkeys(strings))
        raw_distinct_s = best_of(lambda: encoder.encode(distinct))
        n = len(strings)
        rows += [
            (f"{corpus}: component pipe", f"{n / pipe_s:.0f} mentions/s", f"{n} mentions in {len(docs)} docs"),
            (f"{corpus}: raw encoder, same strings", f"{n / raw_s:.0f} names/s",
             f"ratio component/raw = {raw_s / pipe_s:.2f}"),
            (f"{corpus}: raw encoder, distinct strings", f"{len(distinct) / raw_distinct_s:.0f} names/s",
             f"{len(distinct)} distinct; ratio = {raw_distinct_s / pipe_s:.2f}"),
        ]
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(lambda: list(component.pipe(docs)))
            print(f"== {corpus}: where component.pipe spends its time")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    with tempfile.TemporaryDirectory() as scratch:
        folder = str(args.save or scratch)
        nlp.to_disk(folder)
        code = (
            "import time; t0 = time.perf_counter(); import spacy; t1 = time.perf_counter(); "
            f"spacy.load({folder!r}); t2 = time.perf_counter(); print(t1 - t0, t2 - t1)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        import_s, load_s = (float(x) for x in out.stdout.split())

    rows += [
        ("peak RSS", f"{peak_gib:.2f} GiB", "this process, all of the above"),
        ("spacy.load (fresh process)", f"{load_s:.2f} s", f"plus {import_s:.2f} s to import spacy"),
    ]
    print_table(("measure", "value", "detail"), rows)

if __name__ == "__main__":
    main()
