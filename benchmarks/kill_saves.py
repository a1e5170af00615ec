"""Saves killed at random points: after each kill the pipeline on disk must
load whole and link as before.

    python benchmarks/kill_saves.py PIPELINE [--kills 20] [--build-names 3000]

`to_disk`: a process loads PIPELINE's copy and saves it over itself in a
loop (the component's `to_disk` and `save_pipeline`, in turn); it is killed
(SIGKILL) at a random point of a save. `build`: `python -m spacy_biosyn
build` over an existing pipeline, with the first `--build-names` names of
the shared MEDIC so that encoding does not dominate, killed at a random
point of its run. Each kill is followed by spacy.load and the linking of
one NCBI dev abstract's gold spans, compared with the links before.
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import spacy

from common import RAW_ABSTRACTS, offline_minilm, parser, print_table
from spacy_biosyn.corpus import pubtator_to_examples, read_pubtator

SAVING = textwrap.dedent("""
    import sys, time, spacy
    from spacy_biosyn import save_pipeline
    nlp = spacy.load(sys.argv[1])
    component = nlp.get_pipe("biosyn_linker")
    for i in range(10**6):
        start = time.perf_counter()
        if i % 2:
            save_pipeline(nlp, sys.argv[1])
        else:
            component.to_disk(sys.argv[1] + "/biosyn_linker")
        print(time.perf_counter() - start, flush=True)
""")


def linked(pipeline: Path, document):
    nlp = spacy.load(pipeline)
    (example,) = pubtator_to_examples(nlp, [document])
    return [(e._.cui, [c for c, _ in e._.kb_ents]) for e in nlp(example.predicted).ents]


def kill_during(command, after_s: float) -> None:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    time.sleep(after_s)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline", type=Path)
    p.add_argument("--kills", type=int, default=20)
    p.add_argument("--build-names", type=int, default=3000)
    args = p.parse_args()
    rng = random.Random(0)
    document = read_pubtator(args.data / RAW_ABSTRACTS["ncbi-disease"]["dev"])[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "pipeline"
        shutil.copytree(args.pipeline, target)
        expected = linked(target, document)
        # How long a load and a save take, so kills land inside the saves.
        saver = subprocess.Popen([sys.executable, "-c", SAVING, str(target)], stdout=subprocess.PIPE, text=True)
        start = time.perf_counter()
        durations = [float(saver.stdout.readline()) for _ in range(2)]
        load_s = time.perf_counter() - start - sum(durations)
        saver.kill()
        saver.wait()
        print(f"load {load_s:.1f}s, saves {durations[0]:.1f}s (component) and {durations[1]:.1f}s (pipeline)", flush=True)
        ok = 0
        for i in range(args.kills):
            kill_during([sys.executable, "-c", SAVING, str(target)], load_s + rng.uniform(0, sum(durations)))
            ok += linked(target, document) == expected
            print(f"to_disk kill {i + 1}: {ok} loads linking as before", flush=True)
        rows.append(("to_disk / save_pipeline over PIPELINE", args.kills, ok))

        names = Path(tmp) / "medic-part.txt"
        lines = (args.data / "ncbi-disease" / "train_dictionary.txt").read_text().splitlines()[: args.build_names]
        names.write_text("\n".join(lines) + "\n")
        built = Path(tmp) / "built"
        build = [sys.executable, "-m", "spacy_biosyn", "build", str(built), "--encoder", offline_minilm(),
                 "--dictionary", str(names)]
        start = time.perf_counter()
        subprocess.run(build, check=True, capture_output=True)
        build_s = time.perf_counter() - start
        expected = linked(built, document)
        ok = 0
        for i in range(args.kills):
            kill_during(build, rng.uniform(0, build_s))
            ok += linked(built, document) == expected
            print(f"build kill {i + 1}: {ok} loads linking as before", flush=True)
        rows.append((f"build over a pipeline ({args.build_names} names, {build_s:.0f}s a run)", args.kills, ok))
    print()
    print_table(("killed", "kills", "loaded and linked as before"), rows)


if __name__ == "__main__":
    main()
