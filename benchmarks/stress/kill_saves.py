"""Saves killed at random points: after each kill the pipeline on disk must
load whole and link as before.

    python -m benchmarks.stress.kill_saves PIPELINE [--kills 20] [--build-names 3000]

`to_disk`: a process loads PIPELINE's copy and saves it over itself in a
loop (the component's `to_disk` and `save_pipeline`, in turn); it is killed
(SIGKILL) at a random point of a save. `nlp.to_disk`: the bare spaCy save,
of two versions in turn (top_k and lambda as built; top_k 1 and half the
lambda), so that a kill between config.cfg and the component's folder
leaves one version's settings over the other's state: each load after a
kill links as one of the two, is refused naming config.cfg, or is mixed. `build`: `python -m spacy_biosyn
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
from collections import Counter
from pathlib import Path

import spacy

from benchmarks.common import RAW_ABSTRACTS, offline_minilm, parser, print_table
from spacy_biosyn.corpora.docs import pubtator_to_examples
from spacy_biosyn.corpora.readers import read_pubtator

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


# The two versions a bare nlp.to_disk saves in turn, from the top_k and
# lambda of the pipeline as given (argv[3:5]); argv[2] = "once:N" saves
# version N once.
TWO_VERSIONS = textwrap.dedent("""
    import sys, spacy
    nlp = spacy.load(sys.argv[1])
    pipe = nlp.get_pipe("biosyn_linker")
    top_k, weight = int(sys.argv[3]), float(sys.argv[4])
    versions = [(top_k, weight), (1, weight / 2)]
    once = sys.argv[2].startswith("once:")
    for i in [int(sys.argv[2][5:])] if once else range(10**6):
        # lambda as a save holds it: the state differs between the versions, not only the config
        pipe.top_k = versions[i % 2][0]
        pipe.engine.configure({"sparse_weight": versions[i % 2][1]}, saved_state=True)
        nlp.to_disk(sys.argv[1])
""")


PARTS = ("to_disk", "nlp.to_disk", "build")


def outcome(pipeline: Path, document, versions) -> str:
    try:
        found = linked(pipeline, document)
    except Exception as error:  # noqa: BLE001: what a load after a kill says is the measure
        return "refused naming config.cfg" if "config.cfg" in str(error) else f"refused: {error}"[:120]
    return next((name for name, links in versions.items() if links == found), "loaded mixed")


def linked(pipeline: Path, document):
    nlp = spacy.load(pipeline)
    (example,) = pubtator_to_examples(nlp, [document])
    return [(e._.cui, [(c, round(s, 4)) for c, s in e._.kb_ents]) for e in nlp(example.predicted).ents]


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
    p.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
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
        if "to_disk" in args.parts:
            ok = 0
            for i in range(args.kills):
                kill_during([sys.executable, "-c", SAVING, str(target)], load_s + rng.uniform(0, sum(durations)))
                ok += linked(target, document) == expected
                print(f"to_disk kill {i + 1}: {ok} loads linking as before", flush=True)
            rows.append(("to_disk / save_pipeline over PIPELINE", args.kills, f"{ok} loaded and linked as before"))

        if "nlp.to_disk" in args.parts:
            given = spacy.load(target).get_pipe("biosyn_linker")
            as_given = [str(given.top_k), repr(given.sparse_weight)]
            versions = {}
            for version in (1, 0):  # ends on version 0, the pipeline as given
                subprocess.run([sys.executable, "-c", TWO_VERSIONS, str(target), f"once:{version}", *as_given], check=True,
                               capture_output=True)
                versions[f"version {version}"] = linked(target, document)
            pristine = Path(tmp) / "version-0"
            shutil.copytree(target, pristine)
            seen = Counter()
            for i in range(args.kills):
                # Each kill starts from version 0 on disk: a refused pipeline stops the saver's own load.
                shutil.rmtree(target)
                shutil.copytree(pristine, target)
                kill_during([sys.executable, "-c", TWO_VERSIONS, str(target), "loop", *as_given], load_s + rng.uniform(0, 4 * max(durations)))
                seen[outcome(target, document, versions)] += 1
                print(f"nlp.to_disk kill {i + 1}: {dict(seen)}", flush=True)
            rows.append(("bare nlp.to_disk of two versions in turn", args.kills,
                         ", ".join(f"{n} {what}" for what, n in seen.most_common())))

        if "build" in args.parts:
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
            rows.append((f"build over a pipeline ({args.build_names} names, {build_s:.0f}s a run)", args.kills, f"{ok} loaded and linked as before"))
    print()
    print_table(("killed", "kills", "after each kill"), rows)


if __name__ == "__main__":
    main()
