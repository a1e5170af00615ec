"""Cold start: how long a saved pipeline takes to load, and where the time goes (issue 5, benchmark 3).

    python benchmarks/cold_start.py PIPELINE [PIPELINE ...] [--repeats 3]

Each load runs in a fresh process, as a user's first `spacy.load` does, under
cProfile; the table gives the best wall time of --repeats loads and, from the
profile of that load, the cumulative time of each stage of Linker.from_disk.
Importing spaCy itself is timed apart; importing torch and transformers
happens inside spacy.load (the factory's entry point) and is counted there.
"""
import json
import subprocess
import sys
from pathlib import Path

from common import parser, print_table

# (label, file suffix, function name) of the stages read from the profile.
STAGES = [
    ("encoder weights", "spacy_biosyn/encoders/transformer.py", "load"),
    ("ONNX encoder", "spacy_biosyn/encoders/onnx.py", "load"),
    ("dictionary", "spacy_biosyn/kb/dictionary.py", "from_saved"),
    ("tf-idf", "spacy_biosyn/kb/sparse.py", "from_disk"),
    ("index", "spacy_biosyn/kb/index.py", "from_disk"),
    ("encoder probe", "spacy_biosyn/kb/linker.py", "_check_saved_state"),
]

CHILD = """
import cProfile, json, pstats, sys, time
t0 = time.perf_counter()
import spacy
t1 = time.perf_counter()
profiler = cProfile.Profile()
profiler.enable()
nlp = spacy.load(sys.argv[1])
profiler.disable()
t2 = time.perf_counter()
stages = {}
for (path, _, function), (_, _, _, cumulative, _) in pstats.Stats(profiler).stats.items():
    for label, suffix, name in json.loads(sys.argv[2]):
        if path.endswith(suffix) and function == name:
            stages[label] = max(stages.get(label, 0.0), cumulative)
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "stages": stages}))
"""


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipelines", nargs="+", type=Path)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    rows = []
    for pipeline in args.pipelines:
        loads = [_load_once(pipeline) for _ in range(args.repeats)]
        best = min(loads, key=lambda r: r["load_s"])
        size_mib = sum(f.stat().st_size for f in pipeline.rglob("*") if f.is_file()) / 2**20
        index = _index_setting(pipeline)
        rows.append((
            str(pipeline), index, f"{size_mib:.0f}", f"{best['import_s']:.2f}", f"{best['load_s']:.2f}",
            *(f"{best['stages'].get(label, 0.0):.2f}" for label, _, _ in STAGES),
        ))
        print(json.dumps({"pipeline": str(pipeline), **best}), flush=True)
    header = ("pipeline", "index", "MiB on disk", "import spacy s", "spacy.load s",
              *(f"{label} s" for label, _, _ in STAGES))
    print_table(header, rows)


def _load_once(pipeline: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(pipeline), json.dumps(STAGES)],
        check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def _index_setting(pipeline: Path) -> str:
    from confection import Config

    index = Config().from_disk(pipeline / "config.cfg")["components"]["biosyn_linker"]["index"]
    return index.get("factory", "exact") + (f" + sparse {index['sparse_dims']}" if index.get("sparse_dims") else "")


if __name__ == "__main__":
    main()
