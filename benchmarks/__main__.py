"""Run the benchmark suite and write its tables into docs/benchmarks.md.

    python -m benchmarks [NAME ...] [--linker DIR] [--text-pipeline DIR]
                         [--scispacy-python PY] [--serving-python PY] [--training-runs DIR ...] [--no-write]

Each benchmark runs alone, in its own process (two heavy jobs on a small
machine make noise), with the arguments below. Its output replaces the
part of docs/benchmarks.md between `<!-- bench:NAME -->` and
`<!-- /bench:NAME -->`, under the command and the CPU that produced it.
A benchmark whose inputs are missing is skipped, saying which. --linker
defaults to a pipeline built here from NCBI Disease's train dictionary with
the offline MiniLM (benchmarks/.work/linker), --text-pipeline to the
project's `pipelines/ncbi-disease-text` (`spacy project run all`).
"""
import argparse
import datetime
import functools
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, List, NamedTuple, Optional

from benchmarks.common import DATA, REPO, cpu_description, offline_minilm

DOC = REPO / "docs" / "benchmarks.md"
WORK = REPO / "benchmarks" / ".work"


class Benchmark(NamedTuple):
    name: str
    measures: str
    # The module's arguments from the runner's; None: an input is missing (`needs` says which).
    arguments: Callable[[argparse.Namespace], Optional[List[str]]]
    needs: str = ""


SUITE = [
    Benchmark("zero_shot", "accuracy on gold spans: Acc@1/5 of tf-idf, the encoder and S over lambda, on both datasets' dev queries",
              lambda a: []),
    Benchmark("speed", "speed and memory: mentions/s through nlp.pipe against the encoder alone, latency, peak memory, cold start",
              lambda a: ["--pipeline", a.linker]),
    Benchmark("first_link", "from a fresh process to its first linked sentence", lambda a: [a.linker]),
    Benchmark("text_warm_start", "a text pipeline from a fresh process to its first linked raw sentence, stage by "
              "stage; in an install without the torch extra too (--serving-python)",
              lambda a: [a.text_pipeline] + (["--serving-python", a.serving_python] if a.serving_python else [])
              if a.text_pipeline else None, "a text pipeline (--text-pipeline)"),
    Benchmark("named_linkers", "a named linker built cold, then loaded warm from the cache in fresh processes, at MEDIC "
              "and UMLS size: time and memory; warm in an install without the torch extra (--serving-python)",
              lambda a: ["--serving-python", a.serving_python] if a.serving_python else []),
    Benchmark("encoding_rate", "the default encoder's names/s chunk by chunk on a UMLS-like slice, and the time "
              "3.26M names would take", lambda a: []),
    Benchmark("end_to_end", "raw text to IDs on the dev abstracts: NER, linking and document P/R/F, abstracts/s",
              lambda a: [a.dataset, f"text={a.text_pipeline}", "--label", "Disease"] if a.text_pipeline else None,
              "a text pipeline (--text-pipeline)"),
    Benchmark("scispacy_side_by_side", "scispaCy's linker and this one on the same dictionary and mentions",
              lambda a: [a.linker, "--scispacy-python", a.scispacy_python] if a.scispacy_python else None,
              "an environment with scispacy (--scispacy-python)"),
    Benchmark("link_corpus", "link-corpus from raw text on each engine at 1 and 2 workers, and a run killed halfway and resumed",
              lambda a: [a.text_pipeline, "--workdir", str(WORK / "link-corpus")] if a.text_pipeline else None,
              "a text pipeline (--text-pipeline)"),
    Benchmark("service", "python -m spacy_biosyn serve under 1, 8 and 32 clients: requests/s, p50/p95/p99 latency, "
              "peak RSS, and the ratio to nlp.pipe in one process",
              lambda a: ["--linker", a.linker] + (["--text-pipeline", a.text_pipeline] if a.text_pipeline else [])
              if _has("fastapi") else None, "the serve extra"),
    Benchmark("vector_precision", "the name vectors saved in float32 and in int16: size, read back, Acc@1/5 and "
              "top-1 agreement on both datasets' dev queries", lambda a: []),
    Benchmark("names_precision", "a build's names encoded in fp32 (ONNX Runtime) and in bf16 (PyTorch, where the CPU "
              "has it): names/s, Acc@1/5 and top-1 agreement on both datasets' dev queries", lambda a: []),
    Benchmark("graph_weights", "the default encoder's graph with fp32 and compact weights: size, session start, "
              "names/s, Acc@1/5 and top-1 agreement on both datasets' dev queries", lambda a: ["--names-precision", "auto"]),
    Benchmark("readers", "each vocabulary reader on MEDIC in each format: names, concepts, load time", lambda a: []),
    Benchmark("backends", "index back-ends on one pipeline's vectors: build, size, ms/mention, Acc@k",
              lambda a: [a.linker] if _has("faiss") else None, "the faiss extra"),
    Benchmark("scale", "4M names with each back-end: build, memory, latency, Acc@1 against exact",
              lambda a: [a.linker, "--workdir", str(WORK / "scale")] if _has("faiss") else None, "the faiss extra"),
    Benchmark("training_runs", "finished training runs: time, best step, dev Acc@1/5",
              lambda a: [str(run) for run in a.training_runs] if a.training_runs else None,
              "training output folders (--training-runs)"),
]


class Inputs(argparse.Namespace):
    @functools.cached_property
    def linker(self) -> str:
        """--linker, else the default linker, built the first time a chosen benchmark asks for it."""
        return self.linker_dir or _default_linker()


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help=f"benchmarks to run (default: all): {', '.join(b.name for b in SUITE)}")
    p.add_argument("--linker", dest="linker_dir", default=None,
                   help="a saved linker pipeline (default: built from NCBI's train dictionary)")
    p.add_argument("--dataset", default="ncbi-disease", help="whose raw dev abstracts end_to_end reads")
    p.add_argument("--text-pipeline", default=_existing(REPO / "pipelines" / "ncbi-disease-text"))
    p.add_argument("--scispacy-python", default=None)
    p.add_argument("--serving-python", default=None, help="the Python of an install without the torch extra")
    p.add_argument("--training-runs", nargs="*", type=Path, default=[])
    p.add_argument("--no-write", action="store_true", help="print only; leave docs/benchmarks.md as it is")
    args = p.parse_args(namespace=Inputs())
    unknown = sorted(set(args.names) - {b.name for b in SUITE})
    if unknown:
        p.error(f"no benchmark {', '.join(unknown)}; the suite: {', '.join(b.name for b in SUITE)}")
    chosen = [b for b in SUITE if not args.names or b.name in args.names]
    cpu = cpu_description()
    print(f"CPU: {cpu}\n")
    for benchmark in chosen:
        arguments = benchmark.arguments(args)
        if arguments is None:
            print(f"## {benchmark.name}: skipped, it needs {benchmark.needs}\n")
            continue
        command = [sys.executable, "-m", f"benchmarks.{benchmark.name}", *arguments]
        shown = " ".join(["python", *command[1:]]).replace(f"{REPO}/", "")
        print(f"## {benchmark.name}: {benchmark.measures}\n$ {shown}", flush=True)
        start = time.perf_counter()
        # wasabi's colours would land in docs/benchmarks.md as escape codes
        run = subprocess.run(command, cwd=REPO, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "ANSI_COLORS_DISABLED": "1"})
        print(run.stdout)
        took = time.perf_counter() - start
        if run.returncode:
            print(f"{benchmark.name} failed (exit {run.returncode}) after {took:.0f}s: docs/benchmarks.md keeps its last tables\n")
        elif not args.no_write:
            _write(benchmark.name, f"`{shown}` on {cpu}, {datetime.date.today()} ({took:.0f}s):\n\n{run.stdout.strip()}\n")


def _existing(path: Path) -> Optional[str]:
    return str(path) if (path / "config.cfg").exists() else None


def _default_linker() -> str:
    """MiniLM over NCBI Disease's train dictionary, built once."""
    linker = WORK / "linker"
    if not (linker / "config.cfg").exists():
        dictionary = DATA / "ncbi-disease" / "train_dictionary.txt"
        print(f"Building {linker} from {dictionary} with the offline MiniLM", flush=True)
        subprocess.run([sys.executable, "-m", "spacy_biosyn", "build", str(linker), "--encoder", offline_minilm(),
                        "--dictionary", str(dictionary)], check=True, stdout=subprocess.DEVNULL)
    return str(linker)


def _write(name: str, section: str) -> None:
    """Replace the benchmark's part of docs/benchmarks.md, or add it at the end."""
    text = DOC.read_text()
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{begin}\n{section}{end}"
    pattern = re.compile(re.escape(begin) + ".*?" + re.escape(end), re.S)
    DOC.write_text(pattern.sub(lambda _: block, text) if pattern.search(text) else f"{text.rstrip()}\n\n{block}\n")


if __name__ == "__main__":
    main()
