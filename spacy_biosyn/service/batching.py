"""One thread per worker process runs the pipeline: the texts of every
client's request waiting at a time go through one `nlp.pipe` call (up to
`batch_texts`), and each request gets back exactly the rows of its own
texts, in order. The event loop never runs the pipeline, so it keeps
reading requests and answering health checks while a batch links; and no
two batches run at once, so nothing a batch sets on the pipeline (as
`mention_rows` sets drop_nil) is seen by another."""
import asyncio
import queue
import threading
from typing import Callable, List, NamedTuple, Optional, Sequence

from spacy.language import Language

from ..corpus_linking.output import document_rows, mention_rows
from ..corpus_linking.text_sources import Document


class _Job(NamedTuple):
    kind: str  # "texts" or "mentions"
    items: Sequence  # Documents, or mention strings
    future: asyncio.Future
    loop: asyncio.AbstractEventLoop


class LinkingThread:
    def __init__(self, nlp: Language, batch_texts: int):
        self.nlp = nlp
        self.batch_texts = batch_texts
        self._jobs: "queue.Queue[Optional[_Job]]" = queue.Queue()
        self._held: Optional[_Job] = None  # a job taken while filling a batch it cannot join
        self._thread = threading.Thread(target=self._run, name="spacy-biosyn-linking", daemon=True)
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    async def link_documents(self, documents: Sequence[Document]) -> List[List[dict]]:
        """Each document's rows, as `link --json` writes them."""
        return await self._submit("texts", documents)

    async def link_mentions(self, mentions: Sequence[str]) -> List[dict]:
        """A row per mention, as `link --mentions --json` writes them."""
        return await self._submit("mentions", mentions)

    async def _submit(self, kind: str, items: Sequence):
        loop = asyncio.get_running_loop()
        job = _Job(kind, items, loop.create_future(), loop)
        self._jobs.put(job)
        return await job.future

    def _run(self) -> None:
        while True:
            job = self._held or self._jobs.get()
            self._held = None
            if job is None:
                return
            if job.kind == "mentions":
                self._answer([job], lambda: [mention_rows(self.nlp, job.items)])
            else:
                batch = self._fill(job)
                self._answer(batch, lambda: self._link(batch))

    def _fill(self, first: _Job) -> List[_Job]:
        """`first` and the text jobs waiting behind it, up to batch_texts texts."""
        batch, size = [first], len(first.items)
        while size < self.batch_texts:
            try:
                job = self._jobs.get_nowait()
            except queue.Empty:
                break
            if job is None or job.kind != "texts" or size + len(job.items) > self.batch_texts:
                self._held = job
                break
            batch.append(job)
            size += len(job.items)
        return batch

    def _link(self, batch: List[_Job]) -> List[List[List[dict]]]:
        live = [job for job in batch if not job.future.cancelled()]  # a client gone or timed out
        documents = [document for job in live for document in job.items]
        docs = iter(self.nlp.pipe(document.text for document in documents))
        answers = {}
        for job in live:
            answers[id(job)] = [document_rows(document, next(docs), None) for document in job.items]
        return [answers.get(id(job), []) for job in batch]

    @staticmethod
    def _answer(batch: List[_Job], work: Callable[[], list]) -> None:
        try:
            results = work()
        except Exception as error:  # the clients are told; the thread goes on to the next batch
            for job in batch:
                job.loop.call_soon_threadsafe(_settle, job.future, None, error)
            return
        for job, result in zip(batch, results):
            job.loop.call_soon_threadsafe(_settle, job.future, result, None)


def _settle(future: asyncio.Future, result, error: Optional[BaseException]) -> None:
    if future.done():  # cancelled: its client timed out or left
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
