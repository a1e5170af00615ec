"""Files named by URL, fetched once into a cache, as scispaCy's
`cached_path` does: a vocabulary can be given as `https://.../CTD_chemicals.tsv.gz`
wherever a path is taken, and the named vocabularies (named/catalogue.py) are
fetched the same way.

The cache is `$SPACY_BIOSYN_CACHE` (else `~/.cache/spacy_biosyn`); a file is
kept in `downloads/` under a digest of its URL and its own name, beside a
record of its length and SHA-256. `$SPACY_BIOSYN_MIRROR`, a folder or a base
URL, is asked for the file's name before the publisher's URL (air-gapped
sites copy the published files there). It and
`$SPACY_BIOSYN_DOWNLOAD_DEADLINE` are read by fetching.py alone, and a
value that cannot be used is refused in one line naming it.

Nothing unchecked is cached: a download goes to a hidden partial file and
is kept only when its length is the promised one and its content not empty, not an HTML
page and, for a gzip file, whole. A whole download has a deadline, so a
server that drips bytes is given up on. A cached copy whose length or
checksum no longer matches its record is fetched again; `refresh` fetches
again in any case. Two processes asking for one URL fetch it once; a copy
that is whole is read without a lock, so another user's read-only cache
serves what it holds. Each use removes the partial files of fetches that
were killed. Cached files are new files, with the mode the umask gives
them, never their source's.

A URL may carry a user and password (`https://user:pass@host/...`): they
are sent as HTTP basic auth (not to another host a server redirects to)
and shown as `user:***@` in every message and record. A cache that cannot
be written (a file, another user's, its disk full) is said in one line
(CacheError), and nothing half-written is left.
"""
import errno
import hashlib
import os
import secrets
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union

import srsly
from filelock import FileLock

from ..errors import BiosynError
from .fetching import (DISK_FULL, checked_content, download_deadline, fetch, fetch_from_mirror, is_url,
                       published_name, redacted)
from .manifest import file_sha256
from .storage import cache_folder

_PARTIAL = ".partial"
_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


class CacheError(BiosynError):
    """The cache folder cannot keep what is written there: it is a file,
    another user's, or its disk is full."""


# The cache ------------------------------------------------------------------

def _target(url: str) -> Path:
    # The URL's digest (without a password, which may change) tells copies
    # apart: the name is cut where a file system's limit could refuse it.
    digest = hashlib.sha256(redacted(url).encode("utf-8")).hexdigest()[:16]
    return cache_folder() / "downloads" / f"{digest}-{published_name(url)[-100:]}"


def _record_path(target: Path) -> Path:
    return target.with_name(target.name + ".json")


def cached_record(url: str) -> Optional[dict]:
    """What the cache recorded of `url`'s download (`bytes`, `sha256`,
    `url`, `from`), without a request or reading the file; None if none."""
    return _read_record(_target(url))


def _read_record(target: Path) -> Optional[dict]:
    try:
        record = srsly.read_json(_record_path(target))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("sha256"), str) else None


def forget(url: str) -> bool:
    """Drop the cached copy of `url` (its reader refused it), so that the
    next use fetches it again; False where this user cannot change the cache."""
    target = _target(url)
    try:
        with FileLock(str(target) + ".lock"):  # not while another process writes it
            _record_path(target).unlink(missing_ok=True)
            target.unlink(missing_ok=True)
    except OSError:
        return False
    return True


@contextmanager
def cache_written(path: Path) -> Iterator[None]:
    """Around writing `path` in the cache: an OSError becomes a CacheError
    of one line that names the cache folder and what to do."""
    try:
        yield
    except OSError as error:
        raise CacheError(_cache_fault(path, error)) from None


def _cache_fault(path: Path, error: OSError) -> str:
    cache = cache_folder()
    if os.path.isfile(cache):
        return f"the cache folder {cache} is a file: set SPACY_BIOSYN_CACHE to a folder"
    if error.errno in DISK_FULL:
        return (f"the disk of the cache folder {cache} is full: {path.name} could not be written, and nothing of it "
                "was kept; free some space, or set SPACY_BIOSYN_CACHE to a folder on another disk")
    if error.errno in _NOT_WRITABLE:
        return (f"the cache folder {cache} is not writable ({path} could not be written): set SPACY_BIOSYN_CACHE "
                "to a folder you can write")
    return (f"{path} could not be written in the cache folder {cache} ({error.strerror or error}): "
            "set SPACY_BIOSYN_CACHE to another folder")


def cached_path(
    source: Union[str, Path],
    *,
    refresh: bool = False,
    deadline_s: Optional[float] = None,
) -> Path:
    """`source` as a local path: a path as it is, a URL as its verified
    cached copy, fetched (from the mirror first) when there is none, when it
    no longer matches its record, or when `refresh`. `deadline_s`: seconds the whole
    download may take (default `$SPACY_BIOSYN_DOWNLOAD_DEADLINE`, else an hour)."""
    if not is_url(source):
        return Path(source)
    url = str(source)
    deadline = download_deadline(deadline_s)
    target = _target(url)
    _remove_partials(target.parent)
    if not refresh and _is_intact(target):
        return target
    with cache_written(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(target) + ".lock"):
            if refresh or not _is_intact(target):  # else fetched meanwhile by another process
                _fetch_into(url, target, deadline)
    return target


def _remove_partials(folder: Path) -> None:
    """Remove the partial files that killed fetches left in `folder` (a
    download's size each). A running fetch holds its target's lock, so its
    own file is kept."""
    try:
        partials = list(folder.glob(f".*{_PARTIAL}"))
    except OSError:
        return
    for partial in partials:
        target = folder / partial.name[1:].rsplit(".", 2)[0]  # .NAME.TOKEN.partial
        try:
            with FileLock(str(target) + ".lock", timeout=0):
                partial.unlink(missing_ok=True)
        except OSError:  # a running fetch's (filelock's Timeout is one), or a cache this user cannot change
            pass


def _is_intact(target: Path) -> bool:
    """The cached copy is there and is what its record says (a copy cut
    short or changed by hand is fetched again, never used)."""
    record = _read_record(target)
    try:
        if record is None or not target.is_file() or target.stat().st_size != record.get("bytes"):
            return False
        return file_sha256(target) == record["sha256"]
    except OSError:  # removed meanwhile, or unreadable
        return False


def _fetch_into(url: str, target: Path, deadline: float) -> None:
    """Fetch `url` (from the mirror first) into `target` and its record, or
    leave neither."""
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}{_PARTIAL}")
    try:
        origin = fetch_from_mirror(url, partial, deadline) or fetch(url, url, partial, deadline)
        digest = checked_content(url, partial)
        try:
            os.replace(partial, target)
            srsly.write_json(_record_path(target), {
                "url": redacted(url), "from": origin, "bytes": target.stat().st_size, "sha256": digest,
                "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            })
        except BaseException:
            _record_path(target).unlink(missing_ok=True)
            target.unlink(missing_ok=True)
            raise
    finally:
        partial.unlink(missing_ok=True)
