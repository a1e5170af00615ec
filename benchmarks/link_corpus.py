"""link-corpus on each engine and worker count: documents/s, mentions/s,
peak memory per worker, and whether the rows are those of `local` with one
worker; then a run killed (SIGKILL) halfway and re-run, whose rows must be
those of the uninterrupted run: the same rows, IDs and candidates, scores
to float tolerance (BLAS's last bits differ between processes).

    python -m benchmarks.link_corpus PIPELINE [--input GLOB] --workdir DIR \
        [--runs local:1 local:2 ray:1 ray:2 dask:1 dask:2] [--shard-size 100] [--kill-after 8]

INPUT defaults to the NCBI Disease and BC5CDR train and dev abstracts.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.common import DATA, parser, print_table, progress
from spacy_biosyn.corpus_linking import link_corpus, read_rows, row_differences

GIB = 2**30


def engines(args) -> None:
    rows, reference = [], None
    for run in args.runs:
        engine, workers = run.split(":")
        output = args.workdir / run.replace(":", "-")
        summary = link_corpus(
            args.pipeline, args.input, output, engine=engine, workers=int(workers),
            shard_size=args.shard_size, batch_size=args.batch_size,
        )
        linked = read_rows(output)
        reference = reference if reference is not None else linked
        differences = row_differences(reference, linked)
        rows.append([
            engine, workers, summary["documents"], summary["mentions"], f"{summary['seconds']:.1f}",
            f"{summary['documents_per_s']:.1f}", f"{summary['mentions_per_s']:.0f}",
            f"{summary['documents_per_s_per_worker']:.1f}", f"{summary['peak_rss_per_worker'] / GIB:.2f}",
            "yes" if not differences else f"no: {len(differences)} ({differences[0]})",
        ])
        progress(rows[-1])
    print_table(["engine", "workers", "documents", "mentions", "wall s (with start-up)", "documents/s",
                 "mentions/s", "documents/s per busy worker", "peak GiB per worker",
                 f"rows = {args.runs[0]}'s"], rows)


def kill_and_resume(args) -> None:
    """Kill a local run once `--kill-after` shards are written, re-run it,
    and compare with the uninterrupted first run of `--runs`."""
    output = args.workdir / "killed"
    command = [
        sys.executable, "-m", "spacy_biosyn", "link-corpus", str(args.pipeline), args.input, str(output),
        "--shard-size", str(args.shard_size), "--batch-size", str(args.batch_size),
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while len(list(output.glob("shard-*"))) < args.kill_after and process.poll() is None:
        time.sleep(0.2)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    finished, partial = len(list(output.glob("shard-*"))), len(list(output.glob(".shard-*")))
    print(f"killed after {finished} finished shards ({partial} half-written shard files left)")
    subprocess.run(command, check=True)
    reference, rerun = read_rows(args.workdir / args.runs[0].replace(":", "-")), read_rows(output)
    largest = max(
        (abs(a["score"] - b["score"]) for x, y in zip(reference, rerun) for a, b in zip(x["candidates"], y["candidates"])),
        default=0.0,
    )
    print(f"re-run: {len(rerun)} rows (uninterrupted run: {len(reference)}); differences beyond 1e-4: "
          f"{len(row_differences(reference, rerun))}; rows equal to the bit: {sum(a == b for a, b in zip(reference, rerun))}; "
          f"largest score difference: {largest:.2g}")

def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline", type=Path)
    p.add_argument("--input", default=str(DATA / "*" / "raw" / "*.txt"))
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--runs", nargs="+", default=["local:1", "local:2", "ray:1", "ray:2", "dask:1", "dask:2"])
    p.add_argument("--shard-size", type=int, default=100)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--kill-after", type=int, default=8, help="shards written before the kill; 0: no kill")
    p.add_argument("--only-kill", action="store_true", help="skip the engine runs (their outputs are in --workdir)")
    args = p.parse_args()
    if not args.only_kill:
        engines(args)
    if args.kill_after:
        kill_and_resume(args)


if __name__ == "__main__":  # Dask's and spaCy's worker processes import this file
    main()
