"""The fuzz suite's benchmark mode: thousands of random cases (fuzz_cases.py)
in a watched worker process, counted by outcome.

    python -m benchmarks.stress.fuzz [--cases 10000] [--checkout DIR] [--timeout 120]
    python -m benchmarks.stress.fuzz --only texts --text-pipeline PIPELINE_DIR [--cases 500]
    python -m benchmarks.stress.fuzz --replay documents:443

Cases are split over the categories (documents 30%, spans, dictionaries and
corpora 20% each, configs 10%), seeds 0.. in each. A worker that dies is a
crash, one silent for --timeout seconds a hang; either way the next case
gets a fresh worker. The "texts" cases (raw text through a saved text
pipeline, NER and linker) run only with --text-pipeline. --checkout runs the same cases against another checkout
of spacy-biosyn (its package first on the worker's path), e.g. an older
commit in a git worktree, for a before/after table.
"""
import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import print_table
from benchmarks.stress.fuzz_cases import CATEGORIES, Context, Worker, run_case
from spacy_biosyn.encoders.tiny import make_tiny_encoder

SHARES = {"documents": 0.3, "spans": 0.2, "dictionaries": 0.2, "corpora": 0.2, "configs": 0.1, "texts": 0.0, "outputs": 0.0}
OUTCOMES = ("crash", "hang", "unclear error", "wrong result")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=10_000)
    p.add_argument("--checkout", type=Path, help="another spacy-biosyn checkout to run the cases against")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds a case may take before it is a hang")
    p.add_argument("--replay", help="category:seed, run in this process with its outcome")
    p.add_argument("--only", choices=CATEGORIES, help="run every case in this category")
    p.add_argument("--text-pipeline", type=Path, help="a saved pipeline from raw text to IDs, for the texts cases")
    args = p.parse_args()
    shares = {args.only: 1.0} if args.only else SHARES
    text_pipeline = str(args.text_pipeline.resolve()) if args.text_pipeline else None
    if shares.get("texts") and text_pipeline is None:
        p.error("the texts cases need --text-pipeline")
    with tempfile.TemporaryDirectory() as tmp:
        encoder = make_tiny_encoder(Path(tmp) / "encoder")
        if args.replay:
            category, seed = args.replay.split(":")
            print(run_case(category, int(seed), Context(encoder, Path(tmp), text_pipeline)))
            return
        env = dict(os.environ, PYTHONPATH=str(args.checkout.resolve())) if args.checkout else None
        worker = Worker(encoder, args.timeout, env, text_pipeline)
        rows, failures, start = [], [], time.perf_counter()
        for category in [c for c in CATEGORIES if shares.get(c)]:
            n = round(args.cases * shares[category])
            counts = Counter()
            for seed in range(n):
                outcome = worker.run(category, seed)
                counts[outcome] += 1
                if outcome != "ok":
                    failures.append(f"{outcome}: {category}:{seed}")
            rows.append((category, n, *(counts[o] for o in OUTCOMES)))
            print(rows[-1], f"{time.perf_counter() - start:.0f}s", flush=True)
        worker.close()
    rows.append(("all", *(sum(r[i] for r in rows) for i in range(1, 2 + len(OUTCOMES)))))
    print(f"\ncode: {args.checkout or 'this checkout'}; {time.perf_counter() - start:.0f}s")
    print_table(("category", "cases", "crashes", "hangs", "unclear errors", "wrong results"), rows)
    if failures:
        print("\nfirst failing cases (replay with --replay CATEGORY:SEED):\n  " + "\n  ".join(failures[:15]))


if __name__ == "__main__":
    main()
