"""Speed and memory of the linker on this machine.

    python benchmarks/speed.py [--dictionary FILE] [--pubtator FILE]

1. index build time for a dictionary (default: MEDIC, NCBI's train_dictionary);
2. linking throughput through the component (mentions/s over the gold spans of
   the NCBI dev abstracts) next to the raw encoder's names/s on the same
   strings, in the same run;
3. peak resident memory of this process;
4. `spacy.load` time of the saved pipeline, in a fresh process.
"""
import resource
import subprocess
import sys
import tempfile
import time

import spacy

from common import offline_minilm, parser, print_table
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


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--dictionary", default=None)
    p.add_argument("--pubtator", default=None)
    args = p.parse_args()
    dictionary = args.dictionary or args.data / "ncbi-disease" / "train_dictionary.txt"
    pubtator = args.pubtator or args.data / "ncbi-disease" / "raw" / "NCBIdevelopset_corpus.txt"

    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"dictionary": str(dictionary), "encoder": args.encoder or offline_minilm()})
    component = nlp.get_pipe("biosyn_linker")
    start = time.perf_counter()
    nlp.initialize()
    build_s = time.perf_counter() - start
    n_names = len(component.linker.dictionary)

    docs = [pubtator_to_doc(nlp, d) for d in read_pubtator(pubtator)]
    strings = [normalize(span.text) for doc in docs for span in doc.ents]
    encoder = component.linker.encoder
    encoder.encode(strings[:64])  # warm-up
    pipe_s = best_of(lambda: list(component.pipe(docs)))
    raw_s = best_of(lambda: encoder.encode(strings))
    distinct = list(dict.fromkeys(strings))
    raw_distinct_s = best_of(lambda: encoder.encode(distinct))
    peak_gib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    with tempfile.TemporaryDirectory() as folder:
        nlp.to_disk(folder)
        code = (
            "import time; t0 = time.perf_counter(); import spacy; t1 = time.perf_counter(); "
            f"spacy.load({folder!r}); t2 = time.perf_counter(); print(t1 - t0, t2 - t1)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        import_s, load_s = (float(x) for x in out.stdout.split())

    n = len(strings)
    rows = [
        ("index build (initialize)", f"{build_s:.1f} s", f"{n_names} names, {n_names / build_s:.0f} names/s"),
        ("component: pipe over docs", f"{n / pipe_s:.0f} mentions/s", f"{n} mentions in {len(docs)} docs"),
        ("raw encoder, same strings", f"{n / raw_s:.0f} names/s", f"ratio component/raw = {raw_s / pipe_s:.2f}"),
        ("raw encoder, distinct strings", f"{len(distinct) / raw_distinct_s:.0f} names/s",
         f"{len(distinct)} distinct; ratio = {raw_distinct_s / pipe_s:.2f}"),
        ("peak RSS", f"{peak_gib:.2f} GiB", "this process, all of the above"),
        ("spacy.load (fresh process)", f"{load_s:.2f} s", f"plus {import_s:.2f} s to import spacy"),
    ]
    print_table(("measure", "value", "detail"), rows)


if __name__ == "__main__":
    main()
