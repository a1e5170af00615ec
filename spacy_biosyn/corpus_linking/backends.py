"""Where the shards are linked: `local` is plain `nlp.pipe` (with
`n_process` for more than one worker) and the reference; `ray` is Ray Data's
`map_batches` over an actor pool; `dask` is a `distributed` cluster. Ray and
Dask workers load the pipeline once each and write their shards themselves;
the driver only hands out shards and records what comes back.

Each engine calls `done(stats)` once per finished shard, in any order.
"""
import json
import logging
import multiprocessing
import threading
import time
from collections import deque
from itertools import islice
from pathlib import Path
from typing import Callable, Dict, Iterable, List, Optional

from ..corpora.readers import Annotation
from ..errors import CorpusError
from .output import write_shard
from ..corpora.documents import Document
from .text_sources import Shard
from .worker import RunSettings, ShardLinker, peak_rss, shard_stats, workers_die_with_this_process

ENGINES = ("local", "ray", "dask")
Done = Callable[[dict], None]


def run_engine(
    engine: str, settings: RunSettings, shards: Iterable[Shard], workers: int, address: Optional[str], done: Done
) -> None:
    if engine not in ENGINES:
        raise CorpusError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if workers < 1:
        raise CorpusError(f"workers {workers}: must be at least 1")
    if engine == "local":
        if address is not None:
            raise CorpusError("--address names a Ray or Dask cluster: the local engine has none")
        return _run_local(settings, shards, workers, done)
    if engine == "ray":
        return _run_ray(settings, shards, workers, address, done)
    return _run_dask(settings, shards, workers, address, done)


def _run_local(settings: RunSettings, shards: Iterable[Shard], workers: int, done: Done) -> None:
    """One `nlp.pipe` over every document; a shard is written when its last
    document comes back (nlp.pipe keeps the input order)."""
    linker = ShardLinker(settings)
    taken: deque = deque()

    def documents():
        for shard in shards:
            taken.append(shard)
            yield from shard.documents

    rows: List[List[dict]] = []
    started = time.perf_counter()
    with workers_die_with_this_process():
        for document_rows in linker.pipe(documents(), n_process=workers):
            rows.append(document_rows)
            shard = taken[0]
            if len(rows) == len(shard.documents):
                write_shard(Path(settings.output), shard.index, shard.documents, rows, settings.output_format)
                rss = max((peak_rss(child.pid) for child in multiprocessing.active_children()), default=0) or peak_rss()
                # With n_process every worker had a share of the shard: its cost is N times the wait.
                done(shard_stats(shard, sum(map(len, rows)), (time.perf_counter() - started) * workers, rss,
                                 sum(map(linker.is_too_long, shard.documents))))
                taken.popleft()
                rows, started = [], time.perf_counter()


# Ray Data moves rows as Arrow: a shard travels as its index and its documents in JSON.
def _encoded(shard: Shard) -> Dict[str, object]:
    return {"index": shard.index, "documents": json.dumps(shard.documents)}


def _decoded(index: int, documents: str) -> Shard:
    return Shard(int(index), [
        Document(doc_id, text, None if annotations is None else [Annotation(*a) for a in annotations], *rest)
        for doc_id, text, annotations, *rest in json.loads(documents)
    ])


class _RayShardLinker:
    """A Ray Data actor: the pipeline is loaded once, in the constructor."""

    def __init__(self, settings: list):
        self.linker = ShardLinker(RunSettings(*settings))

    def __call__(self, batch: dict) -> dict:
        stats = [self.linker(_decoded(i, d)) for i, d in zip(batch["index"], batch["documents"])]
        return {"stats": [json.dumps(s) for s in stats]}


def _run_ray(settings: RunSettings, shards: Iterable[Shard], workers: int, address: Optional[str], done: Done) -> None:
    import ray

    threads = settings.threads or 1
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(
            address=address, num_cpus=None if address else workers * threads, include_dashboard=False,
            log_to_driver=False, logging_level=logging.WARNING,
        )
    ray.data.DataContext.get_current().enable_progress_bars = False  # the run's own bar counts documents
    logging.getLogger("ray.data").setLevel(logging.WARNING)
    try:
        items = [_encoded(shard) for shard in shards]
        if not items:
            return
        linked = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
            _RayShardLinker, fn_constructor_args=(list(settings),), batch_size=1,
            compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=threads, num_gpus=1 if settings.gpu else 0,
            # Ray Data restarts dead actors from constructor arguments it keeps in the
            # object store, and logs an error-level caveat about that on every run.
            # A worker that dies fails the run instead; a re-run links only the shards left.
            max_restarts=0,
        )
        for row in linked.iter_rows():
            done(json.loads(row["stats"]))
    finally:
        if started_here:
            ray.shutdown()


PLUGIN = "spacy-biosyn"


def _dask_plugin(settings: RunSettings):
    from distributed import WorkerPlugin

    class PipelinePlugin(WorkerPlugin):
        """Holds each worker's pipeline, loaded by the worker's first shard
        (so a loading error reaches the driver with that shard's result)."""

        def __init__(self, settings: RunSettings):
            self.settings = settings
            self.linker: Optional[ShardLinker] = None

        def setup(self, worker) -> None:
            self.lock = threading.Lock()  # made on the worker: a lock cannot be pickled

        def get(self) -> ShardLinker:
            with self.lock:
                if self.linker is None:
                    self.linker = ShardLinker(self.settings)
                return self.linker

    return PipelinePlugin(settings)


def _dask_link(shard: Shard) -> dict:
    from distributed import get_worker

    return get_worker().plugins[PLUGIN].get()(shard)


def _run_dask(settings: RunSettings, shards: Iterable[Shard], workers: int, address: Optional[str], done: Done) -> None:
    from distributed import Client, LocalCluster, as_completed

    # Worker processes are spawned, never forked from a driver that has run torch.
    cluster = None if address else LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.WARNING
    )
    try:
        with Client(address or cluster) as client:
            client.register_plugin(_dask_plugin(settings), name=PLUGIN)
            shards = iter(shards)
            # A few shards in flight per worker: the driver never holds the whole corpus.
            in_flight = as_completed(client.submit(_dask_link, s, pure=False) for s in islice(shards, 2 * workers))
            for future in in_flight:
                done(future.result())
                for shard in islice(shards, 1):
                    in_flight.add(client.submit(_dask_link, shard, pure=False))
    finally:
        if cluster is not None:
            cluster.close()
