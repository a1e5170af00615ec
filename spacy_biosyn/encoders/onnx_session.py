"""An ONNX Runtime session and the graph file it runs, for the encoder
(onnx.py) and the ONNX NER (ner/onnx_transformer.py): the session is made
on a thread of its own, survives a fork (nlp.pipe(n_process=N)), and runs a
graph from its file, held open (GraphFile), not from a copy of its bytes."""
import hashlib
import os
import threading
import weakref
from pathlib import Path
from typing import Callable, Optional, Union

from ..checks import is_whole_number
from ..errors import SavedStateError
from ..files.spill import give_back_freed_memory


class OnnxSession:
    """An ONNX Runtime session of a graph (a GraphFile, or its bytes) on
    `threads` threads (0: every core), made on a thread of its own: ONNX
    Runtime lets go of the GIL while it reads and optimizes a graph (0.2-0.3
    s for a MiniLM on 2 cores), so the rest of a pipeline loads meanwhile.
    `runs` names what runs it, for the error where ONNX Runtime is missing;
    `source`, for a graph that cannot run (SavedStateError; None: raised as
    ONNX Runtime says it); `check(session)` is what the holder requires of
    the graph, once it is made.

    ONNX Runtime's thread pool does not survive a fork: a fork waits for a
    session being made, and a forked child (nlp.pipe(n_process=N)) makes
    its own on one thread. The parent's is kept, never freed, in the child:
    freeing it waits for threads that the child does not have."""

    def __init__(self, model: Union[bytes, "GraphFile"], threads: int, runs: str, source: Optional[str] = None,
                 check: Callable = lambda session: None):
        self.model, self._runs, self._source, self._check = model, runs, source, check
        self._start(threads)
        _HELD.add(self)

    def get(self):
        """The session, once made (and checked)."""
        if self._thread is None:  # a forked child's
            self._start(1)
        self._thread.join()
        if self._error is not None:
            if self._source is None or isinstance(self._error, (ImportError, MemoryError)):  # not the save's fault
                raise self._error
            raise SavedStateError(f"{self._source} cannot be run ({type(self._error).__name__}: {self._error}): "
                                  "save the pipeline again") from self._error
        if not self._checked:
            self._check(self._session)
            self._checked = True
        return self._session

    def _start(self, threads: int) -> None:
        self._session = self._error = None
        self._checked = False
        self._thread = threading.Thread(target=self._run, args=(threads,), name="onnx-session")
        with _FORK_LOCK:  # a fork comes before the thread starts or after it is listed, never between
            self._thread.start()
            _STARTING.add(self)

    def _run(self, threads: int) -> None:
        try:
            self._session = _new_session(self.model, threads, self._runs)
        except BaseException as error:  # noqa: BLE001: raised where the session is asked for
            self._error = error
        else:
            # Reading the graph and folding its fp16 casts freed memory on this
            # thread's heap, which glibc kept: 37 MiB of a saved MEDIC
            # pipeline's RSS (docs/record.md).
            give_back_freed_memory()
        finally:
            _STARTING.discard(self)  # listed only while running: one never asked for is freed with its holder

    def _forked(self) -> None:
        _FORKED_AWAY.append(self._session)
        self._thread = None


def _new_session(model: Union[bytes, "GraphFile"], threads: int, runs: str):
    try:
        import onnxruntime
    except ImportError:
        raise ImportError(
            f"{runs} runs with ONNX Runtime, which spacy-biosyn installs: "
            "pip install onnxruntime (or reinstall spacy-biosyn)"
        ) from None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    # Spinning threads keep the cores busy after a run, and slowed the
    # name search (BLAS) that follows each encoding by half.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    # From a path ONNX Runtime keeps no copy of the graph's bytes.
    graph = model.opening_path() if isinstance(model, GraphFile) else model
    return onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])


_HELD: "weakref.WeakSet[OnnxSession]" = weakref.WeakSet()
_STARTING: set = set()
_FORKED_AWAY: list = []
_FORK_LOCK = threading.Lock()


def _before_fork() -> None:
    _FORK_LOCK.acquire()
    for start in list(_STARTING):
        start._thread.join()


def _after_fork_in_child() -> None:
    _FORK_LOCK.release()
    for session in list(_HELD):
        session._forked()


os.register_at_fork(before=_before_fork, after_in_parent=_FORK_LOCK.release, after_in_child=_after_fork_in_child)


class GraphFile:
    """A model.onnx that a session runs, held open: it is read again (to
    save, to quantize, for a forked child's session) as it was when the
    session loaded it, though its folder be replaced or deleted since; one
    written over in place is refused, naming it."""

    def __init__(self, path: Path):
        self.path = path
        self._file = open(path, "rb")  # noqa: SIM115: held for the encoder's life
        weakref.finalize(self, self._file.close)
        self._signature = _signature(os.fstat(self._file.fileno()))
        self._sha256: Optional[str] = None

    def opening_path(self) -> str:
        """A path that opens this very file, whatever its name points to
        now: ONNX Runtime reads a graph by path, and a save may replace the
        file between this object's open and its own."""
        self._check()
        for folder in ("/proc/self/fd", "/dev/fd"):
            if os.path.isdir(folder):
                return f"{folder}/{self._file.fileno()}"
        return str(self.path)

    def is_at(self, path: Path) -> bool:
        """Whether `path` is this very file, unchanged."""
        try:
            return _signature(path.stat()) == self._signature
        except OSError:
            return False

    def read(self) -> bytes:
        self._check()
        descriptor = self._file.fileno()
        size, chunks, done = self._signature[2], [], 0
        while done < size:  # pread: a forked child shares the file's offset with its parent
            chunk = os.pread(descriptor, size - done, done)
            if not chunk:
                raise SavedStateError(f"{self.path} was cut short after this process loaded it")
            chunks.append(chunk)
            done += len(chunk)
        return b"".join(chunks)

    def sha256(self) -> str:
        if self._sha256 is None:
            self._sha256 = hashlib.sha256(self.read()).hexdigest()
        return self._sha256

    def _check(self) -> None:
        if _signature(os.fstat(self._file.fileno())) != self._signature:
            raise SavedStateError(
                f"{self.path} was written over after this process loaded it, so it is no longer the graph "
                "the encoder runs: load the pipeline again"
            )


def _signature(stat: os.stat_result) -> tuple:
    # Not ctime: deleting or replacing the file's folder changes it, and the
    # file is held open to survive just that. A copy of the same size that
    # puts the modification time back (cp -p) goes unseen.
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def graph_bytes(model: Union[bytes, GraphFile]) -> bytes:
    return model.read() if isinstance(model, GraphFile) else model


def write_graph(model: Union[bytes, GraphFile], target: Path) -> None:
    """Save a graph as `target`. Into the folder it was read from, the file
    is already there, and writing it would change the file this process runs."""
    if not (isinstance(model, GraphFile) and model.is_at(target)):
        target.write_bytes(graph_bytes(model))


# ONNX Runtime starts every thread it is told to, each with its own stack:
# 100,000 never returned from the first run. Past the cores of the largest
# machines, more threads only wait.
MAX_THREADS = 1024


def check_threads(threads: int) -> None:
    if not is_whole_number(threads, 0) or threads > MAX_THREADS:
        raise ValueError(f"threads must be a whole number from 0 (ONNX Runtime's default) to {MAX_THREADS}, "
                         f"got {threads!r}")
