"""One thread per worker process runs the pipeline: the texts of every
client's request waiting at a time go through one `nlp.pipe` call (up to
`batch_texts`; texts whose entities the client gave, in another call, in
which only the linker runs), the mention strings of every /link/mentions request
through one linker call (up to MENTION_BATCH), and each request gets back
exactly the rows of its own texts or mentions, in order. The event loop
never runs the pipeline, so it keeps reading requests and answering
health checks while a batch links; and no two batches run at once. What a
batch runs through is a linker of linkers.py: a spaCy pipeline, or its
engine alone."""
import asyncio
import logging
import os
import queue
import threading
import uuid
from typing import List, NamedTuple, Optional, Sequence, Union

from ..corpora.documents import Document
from .errors import ServiceError
from .linkers import EngineLinker

# Mentions of several requests linked at once: each is a short doc, and the
# linker encodes what it has not seen in batches of its own.
MENTION_BATCH = 1024
_NOTHING = object()
log = logging.getLogger("spacy_biosyn.service")


class ComponentFailed(ServiceError):
    """What a request is answered with where the pipeline raised on it:
    anything, SystemExit and KeyboardInterrupt included, which would
    otherwise end the linking thread (or the event loop, awaited). The
    linking thread logs it with the same id."""

    def __init__(self, request_id: str, error: BaseException):
        super().__init__(500, "internal_error", f"linking request {request_id} failed ({type(error).__name__}); "
                         "the server's log has the details")
        self.request_id = request_id


class _Job(NamedTuple):
    kind: str  # "texts", "given" (texts with their entities given) or "mentions": the linker's method
    items: Sequence  # Documents, or mention strings
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop
    # Named in the log and in the answer where the pipeline fails on it.
    id: str


class LinkingThread:
    def __init__(self, linker: EngineLinker, batch_texts: int):
        self.linker = linker
        self.batch_texts = batch_texts
        self._jobs: "queue.Queue[Optional[_Job]]" = queue.Queue()
        # A job (or the stop sentinel, None) taken while filling a batch it cannot join.
        self._held: Union[_Job, None, object] = _NOTHING
        self._thread = threading.Thread(target=self._run, name="spacy-biosyn-linking", daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    async def link_documents(self, documents: Sequence[Document], given: bool = False) -> List[List[dict]]:
        """Each document's rows, as `link --json` writes them; `given`: its
        annotations are the entities, linked in its context by the linker
        alone, as `link-corpus --gold-spans` links them."""
        return await self._submit("given" if given else "texts", documents)

    async def link_mentions(self, mentions: Sequence[str]) -> List[dict]:
        """A row per mention, as `link --mentions --json` writes them."""
        return await self._submit("mentions", mentions)

    async def _submit(self, kind: str, items: Sequence):
        if not self.is_alive():
            raise LinkingStopped()
        loop = asyncio.get_running_loop()
        job = _Job(kind, items, loop.create_future(), loop, uuid.uuid4().hex[:12])
        self._jobs.put(job)
        return await job.future

    def _run(self) -> None:
        """Link batches until stopped. Should it end any other way, the
        process exits non-zero, so that a supervisor starts it again: a
        service that stays up answering 503 helps no one."""
        try:
            self._serve_batches()
        except BaseException:
            log.critical("the linking thread stopped; the process exits", exc_info=True)
            os._exit(1)

    def _serve_batches(self) -> None:
        while True:
            job = self._jobs.get() if self._held is _NOTHING else self._held
            self._held = _NOTHING
            if job is None:
                return
            batch = self._fill(job)
            if len(batch) == 1:
                self._answer(batch)
                continue
            try:
                results = self._link(batch)
            except BaseException:
                # One request's text may be what failed: each is linked again
                # alone, so only its own client gets the error.
                for one in batch:
                    self._answer([one])
                continue
            for one, result in zip(batch, results):
                _settle_from_thread(one, result, None)

    def _fill(self, first: _Job) -> List[_Job]:
        """`first` and the jobs of its kind waiting behind it, up to a batch's size."""
        most = MENTION_BATCH if first.kind == "mentions" else self.batch_texts
        batch, size = [first], len(first.items)
        while size < most:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None or job.kind != first.kind or size + len(job.items) > most:
                self._held = job
                break
            batch.append(job)
            size += len(job.items)
        return batch

    def _link(self, batch: List[_Job]) -> list:
        live = [job for job in batch if not job.future.cancelled()]  # a client gone or timed out
        items = [item for job in live for item in job.items]
        rows = iter(getattr(self.linker, batch[0].kind)(items))  # the linker's method of the job's kind
        answers = {id(job): [next(rows) for _ in job.items] for job in live}
        return [_flat(answers.get(id(job), []), job.kind) for job in batch]

    def _answer(self, batch: List[_Job]) -> None:
        """Link `batch` and settle each job with its rows or the error."""
        try:
            results = self._link(batch)
        except BaseException as error:  # the clients are told; the thread goes on to the next batch
            for job in batch:
                log.error("linking request %s failed", job.id, exc_info=error)
                _settle_from_thread(job, None, ComponentFailed(job.id, error))
            return
        for job, result in zip(batch, results):
            _settle_from_thread(job, result, None)


class LinkingStopped(ServiceError):
    """The linking thread is gone: nothing sent now would be answered."""

    def __init__(self):
        super().__init__(503, "not_linking", "the linking thread has stopped; restart the service")


def _flat(rows: List[List[dict]], kind: str) -> list:
    """A texts job's rows stay per document; a mentions job's are one list, as `link --mentions` prints them."""
    return [row for mention_rows in rows for row in mention_rows] if kind == "mentions" else rows


def _settle_from_thread(job: _Job, result, error: Optional[BaseException]) -> None:
    try:
        job.loop.call_soon_threadsafe(_settle, job.future, result, error)
    except RuntimeError:  # its event loop has closed: the server is stopping
        pass


def _settle(future: asyncio.Future, result, error: Optional[BaseException]) -> None:
    if future.done():  # cancelled: its client timed out or left
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
