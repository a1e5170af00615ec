"""A text pipeline's warm start, stage by stage: fresh processes that load
it and link one sentence of raw text (first_link.py --raw), in this install
and, with --serving-python, in one without the torch extra. Medians of
--runs, min-max beside them; the wall time is the whole process, seen from
outside, and the peak its resident memory.

    python -m benchmarks.text_warm_start PIPELINE [--runs 5] [--serving-python PY]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import List

FIRST_LINK = Path(__file__).resolve().parent / "first_link.py"


def runs(python: str, pipeline: str, count: int) -> List[dict]:
    """`count` fresh processes, after one not counted (the files into the page cache)."""
    found = []
    for i in range(count + 1):
        start = time.perf_counter()
        child = subprocess.Popen([python, str(FIRST_LINK), pipeline, "--raw", "--json"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
        out, err = child.communicate()
        wall = time.perf_counter() - start
        if child.returncode:
            raise SystemExit(f"{python} {FIRST_LINK.name} failed:\n{err[-2000:]}")
        stages = json.loads(out.strip().splitlines()[-1])
        if i:
            found.append({**stages, "wall": wall})
    return found


def cell(values: List[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("pipeline")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--serving-python", help="the Python of an install without the torch extra")
    args = p.parse_args()
    installs = [("this install", sys.executable)] + ([("without the torch extra", args.serving_python)]
                                                     if args.serving_python else [])
    print(f"{Path(args.pipeline).name}: fresh processes, raw text in; medians of {args.runs} (min-max), seconds\n")
    print("| install | import spacy | spacy.load | first text | start to link | whole process | peak MiB | torch imported "
          "| links |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, python in installs:
        found = runs(python, args.pipeline, args.runs)
        links = "; ".join(f"{text} {cui}" for text, cui in found[-1]["links"])
        print(f"| {label} | " + " | ".join(cell([r[k] for r in found]) for k in
                                          ("import_spacy", "load", "first_text", "start_to_link", "wall"))
              + f" | {statistics.median(r['peak_mib'] for r in found):.0f}"
              + f" | {'yes' if found[-1]['imported']['torch'] else 'no'} | {links} |")


if __name__ == "__main__":
    main()
