"""Speed and memory of the linker on this machine.

    python -m benchmarks.speed [--pipeline DIR | --dictionary FILE [--onnx [--weights W]]] [--index FACTORY [--sparse-dims N]]
                               [--held-precision int16] [--profile] [--save DIR]

0. the CPU's model and the flags that decide which number formats run
   natively (AVX-512 BF16, AMX, VNNI), read at run time;
1. index build time for a dictionary (default: MEDIC, NCBI's train_dictionary)
   beside the raw encoder's time on the same names, unless a saved
   --pipeline is given;
2. linking throughput through the component, all preprocessing included
   (mentions/s over the gold disease spans of the NCBI and BC5CDR dev
   abstracts), next to the raw encoder's names/s on the same mention strings,
   in the same run, each pass with an empty cache, and the cache's hits
   within one pass; --profile prints where the component's time goes;
   and the latency of one doc at a time (p50, p95);
3. peak resident memory of this process;
4. a fresh process: `spacy.load` of the saved pipeline, the wall time from
   starting Python to the first linked abstract, and the resident memory
   while linking.

--held-precision int16 holds the exact index's name vectors as their int16
codes, in this process and the fresh one (a saved pipeline is loaded so).
"""
import cProfile
import json
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import spacy

from benchmarks.common import (
    RAW_ABSTRACTS, best_of, cpu_description, offline_minilm, parser, print_table, timings, with_index,
)
from spacy_biosyn.corpora.docs import pubtator_to_doc
from spacy_biosyn.corpora.readers import read_pubtator
from spacy_biosyn.parts import FAISS_INDEX, SAME_SAVED_STATE, SIZED_INDEX
from spacy_biosyn.preprocess.text import normalize

PIPE_PASSES = 5
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
    p.add_argument("--onnx", action="store_true", help="build with spacy_biosyn.OnnxEncoder.v3")
    p.add_argument("--weights", default="compact", help="with --onnx: how its graph stores weights (compact, fp32, int8)")
    p.add_argument("--save", type=Path, default=None, help="keep the measured pipeline in this folder")
    p.add_argument("--held-precision", choices=("float32", "int16"), default=None,
                   help="how the exact index holds its name vectors (default: as the pipeline says; not with --index)")
    args = p.parse_args()
    if args.held_precision and args.index:
        p.error("--held-precision sets the exact index, which --index replaces with faiss's")
    rows = [("CPU", cpu_description(), "")]
    overrides = {}
    if args.pipeline:
        if args.held_precision:
            overrides = held_as(Path(args.pipeline), args.held_precision)
        nlp = spacy.load(args.pipeline, config=overrides)
        component = nlp.get_pipe("biosyn_linker")
    else:
        dictionary = args.dictionary or args.data / "ncbi-disease" / "train_dictionary.txt"
        nlp = spacy.blank("en")
        config = {"dictionary": str(dictionary)}  # the factory's default encoder, unless one is named
        if args.held_precision:
            config["index"] = {"@misc": SIZED_INDEX, "held_precision": args.held_precision}
        if args.encoder or args.onnx:
            encoder = args.encoder or offline_minilm()
            if args.onnx:
                encoder = {"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": encoder, "weights": args.weights}
            config["encoder"] = encoder
        nlp.add_pipe("biosyn_linker", config=config)
        component = nlp.get_pipe("biosyn_linker")
        start = time.perf_counter()
        nlp.initialize()
        build_s = time.perf_counter() - start
        names = list(component.engine.vocabulary().dictionary.names)
        raw_s = best_of(lambda: component.engine.encoder.encode(names), repeats=1)
        rows += [
            ("index build (initialize)", f"{build_s:.1f} s", f"{len(names)} names, {len(names) / build_s:.0f} names/s"),
            ("raw encoder, the same names", f"{raw_s:.1f} s", f"ratio build/raw = {raw_s / build_s:.2f}"),
        ]

    if args.index:
        # A pipeline whose config names the new back-end, so that the cold start
        # below loads what was measured; encoder and tf-idf come from the saved one.
        index = {"@misc": FAISS_INDEX, "factory": args.index, "sparse_dims": args.sparse_dims}
        nlp, component, build_s = with_index(component, index)
        rows.append((f"FaissIndex {args.index}, sparse_dims {args.sparse_dims}: build", f"{build_s:.1f} s",
                     f"{len(component.engine.vocabulary().dictionary)} stored vectors, no re-encoding"))

    encoder = component.engine.encoder
    for dataset, splits in RAW_ABSTRACTS.items():
        corpus = f"{dataset} dev"
        documents = read_pubtator(args.data / splits["dev"])
        docs = [pubtator_to_doc(nlp, d, DISEASE_LABELS[dataset]) for d in documents]
        strings = [normalize(span.text) for doc in docs for span in doc.ents]
        encoder.encode(strings[:64])  # warm-up
        # Each pass starts with an empty cache: hits are mentions repeated within the corpus.
        # Python's full garbage collections fall in some passes and not others: best and median both.
        passes = timings(lambda: component.engine.clear_caches() or list(component.pipe(docs)), PIPE_PASSES)
        pipe_s = min(passes)
        cache = component.engine.vocabulary().cache
        hit_rate = cache.hits / cache.lookups if cache.lookups else 0.0
        raw_s = best_of(lambda: encoder.encode(strings))
        distinct = list(dict.fromkeys(strings))
        raw_distinct_s = best_of(lambda: encoder.encode(distinct))
        n = len(strings)
        rows += [
            (f"{corpus}: component pipe", f"{n / pipe_s:.0f} mentions/s",
             f"{n} mentions in {len(docs)} docs; best of {PIPE_PASSES} passes, median {n / np.median(passes):.0f}"),
            (f"{corpus}: cache hits in one pass", f"{100 * hit_rate:.1f}%",
             f"{cache.lookups} distinct strings of batches looked up, cache_size {cache.size}"),
            (f"{corpus}: raw encoder, same strings", f"{n / raw_s:.0f} names/s",
             f"ratio component/raw = {raw_s / pipe_s:.2f}"),
            (f"{corpus}: raw encoder, distinct strings", f"{len(distinct) / raw_distinct_s:.0f} names/s",
             f"{len(distinct)} distinct; ratio = {raw_distinct_s / pipe_s:.2f}"),
        ]
        latencies = []
        component.engine.clear_caches()
        for doc in docs:
            start = time.perf_counter()
            component(doc)
            latencies.append(1000 * (time.perf_counter() - start))
        p50, p95 = np.percentile(latencies, [50, 95])
        rows.append((f"{corpus}: one doc at a time", f"p50 {p50:.1f} ms, p95 {p95:.1f} ms",
                     f"{n / len(docs):.1f} mentions a doc"))
        if args.profile:
            profiler = cProfile.Profile()
            component.engine.clear_caches()  # the latencies above filled it
            profiler.runcall(lambda: list(component.pipe(docs)))
            print(f"== {corpus}: where component.pipe spends its time")
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    with tempfile.TemporaryDirectory() as scratch:
        folder = str(args.save or scratch)
        if not args.pipeline or args.save or args.index:
            nlp.to_disk(folder)
            overrides = {}  # the saved config holds them
        else:
            folder = args.pipeline
        launched = time.time()
        child = subprocess.run(
            [sys.executable, "-c", COLD_START, folder, str(args.data / RAW_ABSTRACTS["ncbi-disease"]["dev"]),
             json.dumps(overrides)],
            capture_output=True, text=True, check=True,
        )
        cold = json.loads(child.stdout.strip().splitlines()[-1])

    first_doc_s = cold["imported"] - launched + cold["load_s"] + cold["first_doc_s"]
    rows += [
        ("peak RSS", f"{peak_gib:.2f} GiB", "this process, all of the above"),
        ("spacy.load (fresh process)", f"{cold['load_s']:.2f} s",
         f"after {cold['imported'] - launched:.2f} s to start Python and import spacy"),
        ("fresh process to first linked doc", f"{first_doc_s:.2f} s", f"that doc: {cold['first_doc_s']:.2f} s"),
        ("RSS while linking (fresh process)", f"{cold['rss_gib']:.2f} GiB ({cold['rss_gib'] * 2**30 / 1e9:.2f} GB)",
         "peak after loading and linking the NCBI dev abstracts"),
    ]
    print_table(("measure", "value", "detail"), rows)


def held_as(pipeline: Path, held_precision: str) -> dict:
    """spacy.load's overrides that hold the saved pipeline's name vectors
    as `held_precision` says, in the index version that has the setting."""
    saved = spacy.util.load_config(pipeline / "config.cfg")["components"]["biosyn_linker"]["index"]["@misc"]
    index = {"@misc": SAME_SAVED_STATE.get(saved, saved), "held_precision": held_precision}
    return {"components": {"biosyn_linker": {"index": index}}}


# A user's first run: start Python, import spaCy, load, link one abstract;
# then link the rest, for the memory a linking process holds.
COLD_START = """
import json, sys, time
import spacy
imported = time.time()
start = time.perf_counter()
nlp = spacy.load(sys.argv[1], config=json.loads(sys.argv[3]))
load_s = time.perf_counter() - start
from spacy_biosyn.corpora.docs import pubtator_to_doc
from spacy_biosyn.corpora.readers import read_pubtator
docs = [pubtator_to_doc(nlp, d, None) for d in read_pubtator(sys.argv[2])]
start = time.perf_counter()
nlp(docs[0])
first_doc_s = time.perf_counter() - start
list(nlp.pipe(docs[1:]))
rss = next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"imported": imported, "load_s": load_s, "first_doc_s": first_doc_s, "rss_gib": rss / 2**20}))
"""


if __name__ == "__main__":
    main()
