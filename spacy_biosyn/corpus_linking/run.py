"""`link_corpus`: a corpus in, a folder of linked-span shards and a manifest
out, on any engine; a re-run finishes what a killed run left."""
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections import Counter
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, Tuple, Union

from tqdm import tqdm

from ..errors import CorpusError
from ..files.storage import folder_locked
from ..files.manifest import MANIFEST, file_sha256
from .backends import run_engine
from .output import (
    DELETED,
    check_own_folder,
    check_settings,
    finished_shards,
    has_manifest,
    read_manifest,
    remove_partial_shards,
    write_deleted,
    write_manifest,
)
from .text_sources import check_annotated, file_format, input_files, shards
from .worker import RunSettings, check_pipeline
from .writers import OUTPUT_FORMATS, DocumentIds, count_rows

PathLike = Union[str, Path]
MANIFEST_EVERY_S = 10.0
# The input that names standard input; it is kept in the output folder
# (where pandas and pyarrow skip it), so a re-run can resume it.
STDIN = "-"
STDIN_COPY = Path("_input") / "stdin.txt"


def link_corpus(
    pipeline: PathLike,
    input: PathLike,
    output: PathLike,
    *,
    engine: str = "local",
    workers: int = 1,
    batch_size: int = 64,
    shard_size: int = 1000,
    input_format: Optional[str] = None,
    output_format: str = "parquet",
    gold_spans: bool = False,
    labels: Optional[List[str]] = None,
    address: Optional[str] = None,
    gpu: bool = False,
    threads: Optional[int] = None,
    progress: bool = True,
) -> dict:
    """Link every document of `input` (a file, folder or glob, or "-" for
    standard input: PubTator, or one plain-text document named "stdin") with the
    pipeline at `pipeline`, writing one row per entity into shards of
    `shard_size` documents under `output`. Shards already there are kept:
    a re-run with the same settings links only what is missing. `threads`:
    torch's and ONNX Runtime's threads per worker, by default this machine's cores shared out
    (for a local cluster). Returns this run's summary, also kept in the
    manifest's `runs`."""
    if output_format not in OUTPUT_FORMATS:
        raise CorpusError(f"output format {output_format!r}: expected one of {', '.join(OUTPUT_FORMATS)}")
    if batch_size < 1:
        raise CorpusError(f"batch size {batch_size}: must be at least 1")
    pipeline, output = Path(pipeline), Path(output)
    check_pipeline(pipeline, gold_spans)
    with ExitStack() as stack:
        from_stdin = str(input) == STDIN
        files = [stack.enter_context(_read_stdin())] if from_stdin else input_files(str(input))
        _check_installed(engine, {file_format(f, input_format) for f in files} | {output_format})
        if gold_spans:
            check_annotated(files, input_format)
        settings = {
            "pipeline": _fingerprint(pipeline),
            # Each input by its content too: one edited in place, even to the same size, is not resumed.
            "input": [[STDIN, file_sha256(files[0])[:16]]] if from_stdin
            else [[str(f), f.stat().st_size, file_sha256(f)[:16]] for f in files],
            "input_format": input_format, "shard_size": shard_size, "gold_spans": gold_spans, "labels": labels,
            "output_format": output_format,
        }
        check_own_folder(output)  # before anything is written there
        output.mkdir(parents=True, exist_ok=True)
        stack.enter_context(_only_run_in(output))
        check_settings(output, settings)
        if from_stdin:  # kept only once the settings allow the run: a refused one changes nothing
            files = [_kept(files[0], output / STDIN_COPY)]
        remove_partial_shards(output)
        plan, ids, deleted = {}, DocumentIds(output_format), []
        for shard in shards(files, input_format, shard_size, deleted):  # every document read once before any is linked
            plan[shard.index] = len(shard.documents)
            for document in shard.documents:
                ids.check(document)
        _report_deleted(output, deleted)
        manifest = read_manifest(output) if has_manifest(output) else {"settings": settings, "runs": []}
        manifest["shards"] = {
            str(index): manifest.get("shards", {}).get(str(index))
            or {"shard": index, "documents": plan[index], "mentions": count_rows(path, output_format)}
            for index, path in finished_shards(output, output_format).items()
        }
        pending_documents = sum(n for index, n in plan.items() if str(index) not in manifest["shards"])
        if len(plan) < workers:
            warnings.warn(f"{len(plan)} shard(s) for {workers} workers: some will idle; give a smaller shard size")
        if engine == "local" and workers > 1 and threads and threads > 1:
            warnings.warn(
                f"--threads {threads}: the local engine's {workers} workers are forked, and a forked process "
                "computes on one torch thread (more would hang in OpenMP); Ray and Dask workers take --threads"
            )

        run_settings = RunSettings(
            pipeline=str(pipeline), output=str(output), output_format=output_format, gold_spans=gold_spans,
            labels=labels, batch_size=batch_size, threads=threads or _shared_cores(workers, engine, address), gpu=gpu,
        )
        this_run: List[dict] = []
        bar = tqdm(total=pending_documents, unit="doc", desc=f"linking ({engine}, {workers} worker(s))", disable=not progress)
        started = time.perf_counter()

        last_saved = time.monotonic()

        def done(stats: dict) -> None:
            nonlocal last_saved
            this_run.append(stats)
            manifest["shards"][str(stats["shard"])] = stats
            # Saved now and then, not per shard: with tens of thousands of shards a
            # rewrite per shard would cost more than the linking. A shard the saved
            # manifest lacks is still found by its file on a re-run.
            if time.monotonic() - last_saved >= MANIFEST_EVERY_S:
                write_manifest(output, manifest)
                last_saved = time.monotonic()
            bar.set_postfix(mentions=sum(s["mentions"] for s in this_run), refresh=False)
            bar.update(stats["documents"])

        pending = (s for s in shards(files, input_format, shard_size) if str(s.index) not in manifest["shards"])
        write_manifest(output, manifest)  # the settings, before any shard: a re-run with others is refused
        try:
            if pending_documents:  # a finished output is answered without loading the pipeline
                run_engine(engine, run_settings, pending, workers, address, done)
            summary = _summary(engine, workers, this_run, time.perf_counter() - started, len(plan) - len(this_run),
                               len(deleted))
            manifest["runs"].append(summary)
        finally:
            bar.close()
            manifest["complete"] = len(manifest["shards"]) == len(plan)
            manifest["documents"] = sum(s["documents"] for s in manifest["shards"].values())
            manifest["mentions"] = sum(s["mentions"] for s in manifest["shards"].values())
            manifest["too_long"] = sum(s.get("too_long", 0) for s in manifest["shards"].values())
            manifest["deleted_citations"] = len(deleted)
            write_manifest(output, manifest)
        return summary


def _report_deleted(output: Path, deleted: List[Tuple[str, str]]) -> None:
    """The PMIDs the input's MEDLINE files delete, listed in the output
    folder and counted in a warning per file. Their rows, where another
    input file holds them, are kept: the shards are the input as linked."""
    if not deleted:
        return
    write_deleted(output, deleted)
    for file, count in Counter(file for file, _ in deleted).items():
        warnings.warn(f"{file}: deletes {count} PubMed citation(s) (DeleteCitation), listed in {output / DELETED}; "
                      "rows linked for them from other input files are kept")


@contextmanager
def _read_stdin() -> Iterator[Path]:
    """Standard input in a temporary file named stdin.txt, read as any .txt is."""
    with tempfile.TemporaryDirectory(prefix="spacy-biosyn-stdin-") as folder:
        path = Path(folder) / STDIN_COPY.name
        path.write_bytes(sys.stdin.buffer.read())
        yield path


def _kept(copy: Path, path: Path) -> Path:
    """Standard input's copy at `path` in the output folder, where a re-run
    finds it; the settings hold its digest, so only the same bytes resume."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.tmp")
    shutil.copyfile(copy, partial)
    os.replace(partial, path)
    return path


@contextmanager
def _only_run_in(output: Path) -> Iterator[None]:
    """Hold the output folder for the run: two runs into one folder would
    both link every shard and keep one manifest's record."""
    with ExitStack() as stack:
        try:
            stack.enter_context(folder_locked(output, wait=False))
        except BlockingIOError:
            raise CorpusError(
                f"{output}: another link-corpus run is writing to this folder; let it finish (a re-run then "
                "links only what it left), or give another output folder"
            ) from None
        yield


def _summary(engine: str, workers: int, shards: List[dict], seconds: float, skipped: int, deleted: int) -> dict:
    documents = sum(s["documents"] for s in shards)
    mentions = sum(s["mentions"] for s in shards)
    busy = sum(s["seconds"] for s in shards)
    peaks = {}
    for s in shards:
        peaks[s["worker"]] = max(peaks.get(s["worker"], 0), s["peak_rss"])
    return {
        "engine": engine, "workers": workers, "shards": len(shards), "skipped_shards": skipped,
        "documents": documents, "mentions": mentions, "seconds": round(seconds, 2),
        # Documents over the pipeline's max_length, left unlinked (each named in a warning).
        "too_long": sum(s.get("too_long", 0) for s in shards),
        # PMIDs the input's MEDLINE files delete (DeleteCitation), listed in DELETED.
        "deleted_citations": deleted,
        "documents_per_s": round(documents / seconds, 2) if seconds else None,
        "mentions_per_s": round(mentions / seconds, 2) if seconds else None,
        # Throughput of one worker once loaded: linking time only.
        "documents_per_s_per_worker": round(documents / busy, 2) if busy else None,
        "peak_rss_per_worker": max(peaks.values(), default=0),
    }


# What each engine and format needs beyond the core, and the extra that installs it.
_NEEDS = {"ray": ("ray", "ray"), "dask": ("distributed", "dask"), "parquet": ("pyarrow", "corpus"),
          "bioc-xml": ("bioc", "corpus"), "bioc-json": ("bioc", "corpus"), "bioc": ("bioc", "corpus")}


def _check_installed(engine: str, formats: set) -> None:
    for need in sorted({engine} | formats):
        module, extra = _NEEDS.get(need, (None, None))
        if module and importlib.util.find_spec(module) is None:
            raise CorpusError(f"{need} needs the {module} package: pip install 'spacy-biosyn[{extra}]'")


def _fingerprint(pipeline: Path) -> str:
    """The pipeline by its content: each saved component by its manifest
    (the SHA-256 of its every file, which its load checks), every other
    file by its own SHA-256. A pipeline rebuilt in place, even with files
    of the same sizes, is another pipeline, and its run starts again."""
    sealed = {manifest.parent for manifest in pipeline.rglob(MANIFEST)}
    digest = hashlib.sha256()
    for path in sorted(p for p in pipeline.rglob("*") if p.is_file()):
        if any(part.startswith(".") for part in path.relative_to(pipeline).parts):
            continue  # a killed save's staging folder, which the workers' load removes; editors' files
        if path.name == MANIFEST or not sealed.intersection(path.parents):
            digest.update(f"{path.relative_to(pipeline)}:{file_sha256(path)}\n".encode())
    return f"{pipeline.resolve()} sha256:{digest.hexdigest()[:16]}"


def _shared_cores(workers: int, engine: str, address: Optional[str]) -> Optional[int]:
    """This machine's cores shared out between the workers of a local
    cluster. The local engine's one process, and workers of a cluster
    elsewhere, keep torch's own default; the local engine's forked workers
    compute on one thread each (spacy_biosyn's fork hook)."""
    if address is not None or engine == "local":
        return None
    return max(1, len(os.sched_getaffinity(0)) // workers)
