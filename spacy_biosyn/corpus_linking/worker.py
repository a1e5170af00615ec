"""A worker of a corpus run: the pipeline loaded once, then shard after
shard linked and written. Every engine runs this same code, so their rows
can differ only by the last bits of a float."""
import ctypes
import ctypes.util
import importlib.util
import os
import re
import signal
import socket
import sys
import time
import warnings
from collections import deque
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, List, NamedTuple, Optional, Tuple

from spacy.tokens import Doc

from ..corpora.docs import pubtator_to_doc, unlinked_copy
from ..corpora.readers import PubTatorDocument
from ..encoders.hub import import_torch
from ..errors import CorpusError
from ..names import PIPE_NAME
from .output import GoldSpan, concept_names, document_rows, write_shard
from ..corpora.documents import Document
from .text_sources import Shard

# prctl(PR_SET_PDEATHSIG): the kernel signals a child when its parent dies.
_PR_SET_PDEATHSIG = 1
_PRCTL = getattr(ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True), "prctl", None) if sys.platform == "linux" else None
# The process whose forked children are a run's workers, while it forks them.
_FORKING_WORKERS: List[int] = []


@contextmanager
def workers_die_with_this_process() -> Iterator[None]:
    """Within the block, a process forked from this one (nlp.pipe's
    workers) is killed when this one dies, even by SIGKILL: orphans would
    link on, holding memory and the output folder. Only on Linux."""
    _FORKING_WORKERS.append(os.getpid())
    try:
        yield
    finally:
        _FORKING_WORKERS.pop()


def _die_with_parent() -> None:
    if not _FORKING_WORKERS or _PRCTL is None:
        return
    parent = _FORKING_WORKERS[-1]
    _FORKING_WORKERS.clear()  # a worker's own children are its business
    _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the run died before the signal was asked for
        os._exit(1)


if hasattr(os, "register_at_fork"):  # not on Windows, where nothing forks
    os.register_at_fork(after_in_child=_die_with_parent)


class RunSettings(NamedTuple):
    """What every worker needs to know, small enough to send to each."""

    pipeline: str
    output: str
    output_format: str
    gold_spans: bool
    labels: Optional[List[str]]
    batch_size: int
    threads: Optional[int]  # torch's and ONNX Runtime's threads per worker; None keeps their defaults
    gpu: bool


class ShardLinker:
    def __init__(self, settings: RunSettings):
        import spacy

        self.settings = settings
        if settings.threads and importlib.util.find_spec("torch") is not None:  # without torch, no torch threads
            import torch

            torch.set_num_threads(settings.threads)
        if settings.gpu:
            torch = import_torch("--gpu")
            if not torch.cuda.is_available():
                raise CorpusError(f"--gpu: the worker on {socket.gethostname()} sees no CUDA device")
            spacy.require_gpu()
        self.nlp = spacy.load(settings.pipeline)
        encoder = self.nlp.get_pipe(PIPE_NAME).engine.encoder if PIPE_NAME in self.nlp.pipe_names else None
        if settings.threads:  # ONNX Runtime's sessions (the linker's encoder, an NER's BERT), else each takes every core
            for runs_onnx in (encoder, *(pipe for _, pipe in self.nlp.pipeline)):
                if hasattr(runs_onnx, "set_threads"):
                    runs_onnx.set_threads(settings.threads)
        self.names = concept_names(self.nlp)
        # Gold spans replace whatever finds entities: only the linker runs.
        self.disabled = only_the_linker(self.nlp) if settings.gold_spans else []

    def pipe(self, documents: Iterable[Document], n_process: int = 1) -> Iterator[List[dict]]:
        """Each document's rows, in input order."""
        pending: deque = deque()  # (document, gold spans) of the documents nlp.pipe has taken

        def inputs():
            for document in documents:
                if self.is_too_long(document):
                    # Skipped, not the run: spaCy refuses a text over max_length (E088).
                    warnings.warn(
                        f"{document.id}: {len(document.text):,} characters, over the pipeline's max_length "
                        f"({self.nlp.max_length:,}): not linked (counted as too_long in the manifest)"
                    )
                    pending.append((document, None))
                    yield ""
                    continue
                item, gold = self._prepared(document)
                pending.append((document, gold))
                yield item

        linked = self.nlp.pipe(inputs(), batch_size=self.settings.batch_size, n_process=n_process, disable=self.disabled)
        for doc in linked:
            document, gold = pending.popleft()
            yield document_rows(document, doc, gold, self.names)

    def is_too_long(self, document: Document) -> bool:
        return len(document.text) > self.nlp.max_length

    def __call__(self, shard: Shard) -> dict:
        """Link a shard, write it, and say what it cost."""
        start = time.perf_counter()
        rows = list(self.pipe(shard.documents))
        write_shard(Path(self.settings.output), shard.index, shard.documents, rows, self.settings.output_format)
        return shard_stats(shard, sum(map(len, rows)), time.perf_counter() - start, peak_rss(),
                           sum(map(self.is_too_long, shard.documents)))

    def _prepared(self, document: Document):
        if not self.settings.gold_spans:
            return document.text, None
        return with_given_spans(self.nlp, document, self.settings.labels)


def with_given_spans(nlp, document: Document, labels: Optional[List[str]] = None) -> Tuple[Doc, List[GoldSpan]]:
    """The document as a Doc whose entities are its annotations (of
    `labels`, if given) without IDs, for the linker alone to link in their
    document's context, and those spans with their gold IDs: tokens are
    split where a span starts or ends inside one (corpora/docs.py)."""
    reference = pubtator_to_doc(nlp, PubTatorDocument(document.id, document.text, document.annotations), labels)
    gold = [GoldSpan(e.start_char, e.end_char, e.text, e.label_, e.kb_id_) for e in reference.ents]
    return unlinked_copy(reference), gold


def only_the_linker(nlp) -> List[str]:
    """The components to disable where spans are given: whatever finds entities."""
    return [name for name in nlp.pipe_names if name != PIPE_NAME]


def check_pipeline(pipeline: Path, gold_spans: bool,
                   instead: str = "give a pipeline with an NER, or link the input's annotations with --gold-spans") -> None:
    """Before any work: the pipeline has a linker and, unless gold spans
    are linked, a component before it that finds entities (a factory spaCy
    does not know is trusted to); `instead` says what to do otherwise."""
    from spacy.language import Language
    from spacy.util import load_config

    if not (pipeline / "config.cfg").is_file():
        raise CorpusError(f"{pipeline}: not a saved spaCy pipeline (no config.cfg)")
    config = load_config(pipeline / "config.cfg", interpolate=False)
    names = list(config["nlp"]["pipeline"])
    if PIPE_NAME not in names:
        raise CorpusError(f"{pipeline}: the pipeline has no {PIPE_NAME} (it has {names})")
    if gold_spans:
        return
    factories = [config["components"][name].get("factory") for name in names[: names.index(PIPE_NAME)]]
    if not any(
        not Language.has_factory(factory) or "doc.ents" in Language.get_factory_meta(factory).assigns
        for factory in factories if factory
    ):
        raise CorpusError(f"{pipeline}: no component before {PIPE_NAME} finds entities (ner, entity_ruler): {instead}")


def shard_stats(shard: Shard, mentions: int, seconds: float, rss: int, too_long: int) -> dict:
    """A shard's counts and costs; `too_long`: its documents over max_length, not linked."""
    return {
        "shard": shard.index, "documents": len(shard.documents), "mentions": mentions, "seconds": round(seconds, 3),
        "worker": f"{socket.gethostname()}:{os.getpid()}", "peak_rss": rss, "too_long": too_long,
    }


def peak_rss(pid: Optional[int] = None) -> int:
    """Peak resident memory in bytes of a process (this one by default),
    from Linux's VmHWM; elsewhere this process's own peak from getrusage,
    and 0 where there is neither (Windows has no `resource` module)."""
    try:
        status = Path(f"/proc/{pid or 'self'}/status").read_text()
    except OSError:
        try:
            import resource
        except ImportError:
            return 0
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 if pid is None else 0
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else 0
