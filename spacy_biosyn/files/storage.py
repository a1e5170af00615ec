"""A pipeline's files: saves that are all or nothing, loads that never see
half a save, and saved files read with checks that name them.

A save is written into a fresh folder beside its target and swapped in with
one atomic rename, so a save killed at any point leaves the previous folder
whole, and a reader sees either the old folder or the new one. On Linux the
swap is `renameat2(RENAME_EXCHANGE)`; elsewhere the old folder is moved
aside first, which leaves a moment without one.

`nlp.to_disk` writes spaCy's own files (config, tokenizer, vocab) in place
before and after the components' folders, so only `save_pipeline` makes a
whole pipeline's save atomic; the biosyn_linker's folder, which holds
nearly all of a save's bytes, is atomic either way.

A save holds a lock on its staging folder (flock, released by the kernel
when the process dies), so the staging folders of killed saves are told
from those of running ones and removed by the next save or load beside them.

Each saved folder ends with its manifest (manifest.py).
"""
import ctypes
import ctypes.util
import glob
import logging
import math
import os
import shutil
import struct
import time
import uuid
import zipfile
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, BinaryIO, Callable, Dict, Iterable, Iterator, Optional, TypeVar, Union

import numpy as np
import srsly

from ..checks import brief
from ..errors import BiosynError, SavedStateError

try:
    import fcntl
except ImportError:  # Windows: no flock, and leftovers stay
    fcntl = None

T = TypeVar("T")
logger = logging.getLogger("spacy_biosyn")
_STAGING = ".saving-"
_STAGING_GRACE_S = 10.0
# Smaller members of an .npz are read whole: a map costs a file handle and a page.
_MAP_AT_LEAST = 1 << 16
UNPACKED_PER_PACKED = 64
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _renameat2() -> Callable:
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    return getattr(libc, "renameat2", None)


_RENAMEAT2 = _renameat2() if os.name == "posix" else None


@contextmanager
def replaced_atomically(path: Union[str, Path]) -> Iterator[Path]:
    """A fresh folder beside `path` to write into; when the block ends
    without error it takes the place of `path`, and otherwise it is removed."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise BiosynError(f"{path} is a file, not a folder: give a new folder, or the folder of a saved pipeline")
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.parent / f".{path.name}{_STAGING}{uuid.uuid4().hex[:8]}"
    staging.mkdir()
    with folder_locked(staging, wait=True):
        remove_stale_staging(path)
        try:
            yield staging
            if path.exists():
                _exchange(staging, path)  # staging now holds the old folder
                shutil.rmtree(staging)
            else:
                os.rename(staging, path)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)


@contextmanager
def replaced_file(path: Union[str, Path]) -> Iterator[Path]:
    """A new hidden file beside `path` to write; when the block ends without
    error it takes the place of `path` in one rename, and otherwise it is
    removed. A loaded index maps its files: written over in place (a linker
    saved into the folder it was loaded from), the bytes under the map were
    cut short and the process died of SIGBUS, leaving the file half written.
    Renamed over, the old file lives on for the map until it is closed."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}")
    try:
        yield temporary
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def remove_stale_staging(path: Union[str, Path]) -> None:
    """Remove the staging folders that killed saves of `path` left beside
    it (about a pipeline's size each); those of running saves are locked."""
    path = Path(path)
    if fcntl is None:
        return
    try:
        leftovers = list(path.parent.glob(f".{glob.escape(path.name)}{_STAGING}*"))
    except OSError:
        return
    for folder in leftovers:
        try:
            # A folder made this instant may not be locked yet by its save.
            if time.time() - folder.stat().st_mtime < _STAGING_GRACE_S:
                continue
            with folder_locked(folder, wait=False):
                shutil.rmtree(folder)
            logger.info("removed %s, left by a save that was killed", folder)
        except OSError:
            pass  # a running save's (BlockingIOError), read-only, or removed meanwhile


# The descriptors of the locks this process holds. A forked child closes its
# copies: a flock lasts while any copy is open, so a worker that outlived a
# killed run would hold the run's folder against every re-run.
_HELD_LOCKS: set = set()


def _release_inherited_locks() -> None:
    for fd in _HELD_LOCKS:
        os.close(fd)
    _HELD_LOCKS.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, where nothing forks
    os.register_at_fork(after_in_child=_release_inherited_locks)


@contextmanager
def folder_locked(folder: Union[str, Path], wait: bool) -> Iterator[None]:
    """Hold an exclusive lock on `folder` for the block; the kernel releases
    it when the process dies, and forked children never hold it. Without
    `wait`, BlockingIOError where another process holds it. Where there is
    no flock (Windows), nothing is locked."""
    if fcntl is None:
        yield
        return
    fd = os.open(folder, os.O_RDONLY | os.O_CLOEXEC)
    _HELD_LOCKS.add(fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        yield
    finally:
        if fd in _HELD_LOCKS:  # not closed already, as a forked child's copy
            _HELD_LOCKS.discard(fd)
            os.close(fd)


def save_pipeline(nlp, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
    """`nlp.to_disk(path)`, all or nothing: a save killed at any point leaves
    the pipeline that was at `path` loadable, and readers never see half of one."""
    with replaced_atomically(path) as staging:
        nlp.to_disk(staging, exclude=exclude)


def _exchange(new: Path, old: Path) -> None:
    if _RENAMEAT2 is not None:
        if _RENAMEAT2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(old), _RENAME_EXCHANGE) == 0:
            return
        errno = ctypes.get_errno()
        if errno not in (22, 38, 95):  # EINVAL, ENOSYS, EOPNOTSUPP: no exchange on this file system
            raise OSError(errno, os.strerror(errno), str(old))
    aside = old.parent / f".{old.name}.old-{uuid.uuid4().hex[:8]}"
    os.rename(old, aside)
    os.rename(new, old)
    os.rename(aside, new)


def read_consistently(path: Union[str, Path], read: Callable[[], T]) -> T:
    """`read()`, once more if it failed while a save swapped `path`: the
    files it opened then came from two saves."""
    path = Path(path)
    before = _identity(path)
    try:
        return read()
    except Exception:
        if _identity(path) == before:
            raise
        return read()


def read_saved_json(path: Union[str, Path], expect: Optional[type] = None) -> Any:
    """A saved JSON file, or SavedStateError naming it when it is missing,
    cut short, not JSON, or (with `expect`) JSON of another shape."""
    path = Path(path)
    if not path.is_file():
        raise SavedStateError(f"{path} is missing: the saved pipeline is incomplete; save or build it again")
    try:
        content = srsly.read_json(path)
    except (ValueError, RecursionError) as error:  # RecursionError: JSON nested too deep
        raise SavedStateError(f"{path} is not valid JSON ({error}): a save was cut short, or the file was edited") from None
    if expect is not None and not isinstance(content, expect):
        shape = {dict: "an object", list: "a list"}.get(expect, expect.__name__)
        raise SavedStateError(f"{path} holds {type(content).__name__} {brief(content)}, not {shape}: the file was edited")
    return content


def cache_folder() -> Path:
    """Where the package keeps what it can make again: `$SPACY_BIOSYN_CACHE`,
    else ~/.cache/spacy_biosyn."""
    return Path(os.environ.get("SPACY_BIOSYN_CACHE") or Path.home() / ".cache" / "spacy_biosyn").expanduser()


def mapped_npz(path: Union[str, Path, BinaryIO]) -> Dict[str, np.ndarray]:
    """The arrays of an .npz file (a path, or a file open for reading),
    memory-mapped where the archive stores them uncompressed (np.savez,
    scipy's save_npz(compressed=False)): pages are read when touched, so a
    search that reads a few rows of a large matrix keeps the rest on disk.
    Compressed members are read whole. Never unpickles."""
    path = path if hasattr(path, "read") else Path(path)
    arrays = {}
    with zipfile.ZipFile(path) as archive, nullcontext(path) if hasattr(path, "read") else path.open("rb") as raw:
        stored = all(info.compress_type == zipfile.ZIP_STORED for info in archive.infolist())
        if not stored:
            _check_declared_sizes(path, archive)
        for info in archive.infolist():
            name = info.filename[: -len(".npy")]
            if not stored or info.file_size < _MAP_AT_LEAST:
                arrays[name] = np.lib.format.read_array(archive.open(info), allow_pickle=False)
                continue
            # A member's bytes follow its local header, whose extra field
            # (zip64 sizes) may differ from the central directory's.
            raw.seek(info.header_offset + 26)
            name_length, extra_length = struct.unpack("<HH", raw.read(4))
            raw.seek(info.header_offset + 30 + name_length + extra_length)
            shape, fortran, dtype = read_npy_header(raw)
            if dtype.hasobject:
                raise SavedStateError(f"{path}: {info.filename} holds Python objects, which are never loaded")
            arrays[name] = np.memmap(
                path, dtype=dtype, mode="r", offset=raw.tell(), shape=shape, order="F" if fortran else "C"
            )
    return arrays


def _check_declared_sizes(path, archive: zipfile.ZipFile) -> None:
    """Refuses a compressed archive before any member is unpacked where a
    member's array header does not account for its size in the zip's
    directory (zipfile unpacks no further than that size), or where the
    members would unpack to over UNPACKED_PER_PACKED times the archive's
    bytes: a deflated member of zeros unpacks a thousand-fold, this
    package's arrays about five-fold. A load's memory is so bounded by
    the file's size, which the manifest declares."""
    members = archive.infolist()
    packed = sum(info.compress_size for info in members)
    unpacked = sum(info.file_size for info in members)
    if unpacked > UNPACKED_PER_PACKED * packed + _MAP_AT_LEAST:
        raise SavedStateError(
            f"{path}: its arrays would unpack to {unpacked:,} bytes from {packed:,}, past the "
            f"{UNPACKED_PER_PACKED}-fold this package's saves reach: the file was edited, or is not this package's"
        )
    for info in members:
        with archive.open(info) as member:
            shape, _, dtype = read_npy_header(member)
            header = member.tell()
        if dtype.hasobject:
            raise SavedStateError(f"{path}: {info.filename} holds Python objects, which are never loaded")
        if header + math.prod(shape) * dtype.itemsize != info.file_size:
            raise SavedStateError(
                f"{path}: {info.filename} declares an array {shape} of {dtype} that its {info.file_size:,} "
                "bytes do not hold: the file was edited, or is not this package's"
            )


def read_npy_header(f: BinaryIO) -> tuple:
    """(shape, fortran_order, dtype) of the .npy array whose magic string
    starts at `f`'s position, which is left where its data starts."""
    version = np.lib.format.read_magic(f)
    return np.lib.format.read_array_header_1_0(f) if version == (1, 0) else np.lib.format.read_array_header_2_0(f)


def _identity(path: Path):
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_dev, stat.st_ino
