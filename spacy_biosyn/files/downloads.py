"""Files named by URL, fetched once into a cache, as scispaCy's
`cached_path` does: a vocabulary can be given as `https://.../CTD_chemicals.tsv.gz`
wherever a path is taken, and the named vocabularies (named/catalogue.py) are
fetched the same way.

The cache is `$SPACY_BIOSYN_CACHE` (else `~/.cache/spacy_biosyn`); a file is
kept in `downloads/` under a digest of its URL and its own name, beside a
record of its length and SHA-256. `$SPACY_BIOSYN_MIRROR`, a folder or a base
URL, is asked for the file's name before the publisher's URL (air-gapped
sites copy the published files there). These and
`$SPACY_BIOSYN_DOWNLOAD_DEADLINE` are read here alone, and a value that
cannot be used is refused in one line naming it.

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
import gzip
import hashlib
import http.client
import math
import os
import secrets
import shutil
import time
import urllib.error
import urllib.request
import warnings
import zlib
from base64 import b64encode
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Union
from urllib.parse import quote, unquote, urlparse, urlsplit, urlunsplit

import srsly
from filelock import FileLock
from tqdm import tqdm

from ..errors import BiosynError
from .storage import cache_folder, file_sha256

_SCHEMES = ("http", "https", "ftp")
# Seconds without a byte before a read gives up; the whole download has its own deadline.
_READ_TIMEOUT_S = 60
DEFAULT_DEADLINE_S = 3600.0
_DEADLINE_VARIABLE = "SPACY_BIOSYN_DOWNLOAD_DEADLINE"
_HTML_STARTS = (b"<!doctype html", b"<html")
_PARTIAL = ".partial"
# A write that fails for want of room, which no network error is.
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)
_NOT_WRITABLE = (errno.EACCES, errno.EPERM, errno.EROFS)


class DownloadError(BiosynError):
    """A download that failed or was refused, or a download setting that
    cannot be used; nothing of it was cached."""


class CacheError(BiosynError):
    """The cache folder cannot keep what is written there: it is a file,
    another user's, or its disk is full."""


# The environment ---------------------------------------------------------------

def mirror() -> Optional[str]:
    """`$SPACY_BIOSYN_MIRROR`, a folder or a base URL; None when unset."""
    return os.environ.get("SPACY_BIOSYN_MIRROR") or None


def download_deadline(deadline_s: Optional[float] = None) -> float:
    """Seconds a whole download may take: `deadline_s`, else
    `$SPACY_BIOSYN_DOWNLOAD_DEADLINE`, else an hour; DownloadError unless a
    finite number above 0 (NaN would never be reached)."""
    given = deadline_s if deadline_s is not None else os.environ.get(_DEADLINE_VARIABLE) or None
    if given is None:
        return DEFAULT_DEADLINE_S
    try:
        seconds = float(given)
    except (TypeError, ValueError):
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        setting = "deadline_s" if deadline_s is not None else _DEADLINE_VARIABLE
        raise DownloadError(f"{setting}={given!r}: a download's deadline is a number of seconds above 0 "
                            f"(by default {DEFAULT_DEADLINE_S:.0f})")
    return seconds


# URLs -----------------------------------------------------------------------

def is_url(source: Union[str, Path]) -> bool:
    return isinstance(source, str) and urlparse(source).scheme in _SCHEMES


def redacted(url: str) -> str:
    """`url` as messages and records show it: a password as *** (`user:***@host`)."""
    parts = urlsplit(url)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at:
        return url
    # user:password shows the user; a token alone (https://TOKEN@host) shows nothing.
    shown = f"{userinfo.partition(':')[0]}:***" if ":" in userinfo else "***"
    return urlunsplit(parts._replace(netloc=f"{shown}@{host}"))


def published_name(url: str) -> str:
    """The file name a URL publishes, by which a mirror holds it."""
    return Path(urlparse(url).path).name or "download"


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
    if error.errno in _DISK_FULL:
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
        origin = _fetch_from_mirror(url, partial, deadline) or _fetch(url, url, partial, deadline)
        digest = _checked_content(url, partial)
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


# Fetching -------------------------------------------------------------------

def _fetch_from_mirror(url: str, partial: Path, deadline: float) -> Optional[str]:
    """Fill `partial` from $SPACY_BIOSYN_MIRROR's copy of the file, if the
    mirror has one; the mirror's address as records show it, else None."""
    base = mirror()
    if base is None:
        return None
    name = published_name(url)
    if is_url(base):
        try:
            return _fetch(base.rstrip("/") + "/" + quote(name), url, partial, deadline)
        except _NotThere:
            return None
    folder = Path(base).expanduser()
    if not folder.is_dir():
        warnings.warn(f"SPACY_BIOSYN_MIRROR={folder} is not a folder: {name} is fetched from its publisher",
                      UserWarning, stacklevel=4)
        return None
    copy = folder / name
    if not copy.is_file():
        return None
    try:
        source = copy.open("rb")
    except OSError as error:
        raise DownloadError(f"{copy}, the mirror's copy of {redacted(url)}, cannot be read ({error.strerror})"
                            ) from None
    # The bytes alone, into a new file: the copy never takes the source's mode.
    with source, partial.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    return str(copy)


class _NotThere(DownloadError):
    """A 404 or 410: the mirror does not hold the file."""


def _ascii_url(url: str) -> str:
    """A URL as HTTP sends it: a non-ASCII host in IDNA, spaces and
    non-ASCII characters elsewhere percent-encoded (as UTF-8, as browsers
    send them); what is already encoded is kept."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise DownloadError(f"{redacted(url)}: the host name {host!r} is not one a URL can hold") from None
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + ascii_host + (f":{parts.port}" if parts.port else "") if host else parts.netloc
    kept = "/:@!$&'()*+,;=%~?#[]"
    return urlunsplit((parts.scheme, netloc, quote(parts.path, safe=kept), quote(parts.query, safe=kept),
                       quote(parts.fragment, safe=kept)))


def _request(address: str) -> urllib.request.Request:
    """The GET of `address`. An HTTP URL's user and password go in a basic
    auth header (HTTP sends none from the URL), which a redirect does not pass on."""
    parts = urlsplit(address)
    userinfo, at, host = parts.netloc.rpartition("@")
    if not at or parts.scheme not in ("http", "https"):
        return urllib.request.Request(_ascii_url(address), headers={"User-Agent": "spacy-biosyn"})
    request = urllib.request.Request(_ascii_url(urlunsplit(parts._replace(netloc=host))),
                                     headers={"User-Agent": "spacy-biosyn"})
    user, _, password = userinfo.partition(":")
    credentials = f"{unquote(user)}:{unquote(password)}".encode("utf-8")
    request.add_unredirected_header("Authorization", "Basic " + b64encode(credentials).decode("ascii"))
    return request


def _fetch(address: str, url: str, partial: Path, deadline: float) -> str:
    """Write the body at `address` into `partial`, checking its length and
    the deadline; `url` names the file in errors. Returns `address` as
    records show it."""
    started = time.monotonic()
    shown, source = redacted(address), redacted(url)
    with partial.open("wb") as out:  # a cache that cannot be written is the cache's fault, said by the caller
        try:
            with urllib.request.urlopen(_request(address), timeout=_READ_TIMEOUT_S) as response:
                length = response.headers.get("Content-Length")
                expected = int(length) if length and length.isdigit() else None
                received = 0
                with tqdm(total=expected, unit="B", unit_scale=True, desc=f"Fetching {published_name(url)}",
                          leave=False) as bar:
                    while True:
                        # read1 returns what one read of the socket gives, so the
                        # deadline is checked however slowly the bytes come.
                        block = response.read1(1 << 16) if hasattr(response, "read1") else response.read(1 << 16)
                        if not block:
                            break
                        out.write(block)
                        received += len(block)
                        bar.update(len(block))
                        if time.monotonic() - started > deadline:
                            raise DownloadError(
                                f"{source}: not fetched within {deadline:.0f} s ({received:,} bytes received, from "
                                f"{shown}); try again, or set {_DEADLINE_VARIABLE} to allow longer"
                            )
        except urllib.error.HTTPError as error:
            if error.code in (404, 410) and address != url:
                raise _NotThere(shown) from None
            raise DownloadError(f"{source}: could not be fetched from {shown} (HTTP {error.code} {error.reason}); "
                                "download it and give its path, or put it in $SPACY_BIOSYN_MIRROR") from None
        except (OSError, http.client.HTTPException, ValueError) as error:  # URLError, timeouts, cut chunks, bad status
            if isinstance(error, OSError) and error.errno in _DISK_FULL:
                raise
            reason = f"{type(error).__name__}: {error}".strip()[:200]
            raise DownloadError(f"{source}: could not be fetched from {shown} ({reason}); download it and give its "
                                "path, or put it in $SPACY_BIOSYN_MIRROR") from None
    if expected is not None and received != expected:
        raise DownloadError(
            f"{source}: the download was cut short ({received:,} of the {expected:,} bytes promised, from "
            f"{shown}); nothing was cached: try again"
        )
    return shown


def _checked_content(url: str, path: Path) -> str:
    """The file's SHA-256, or DownloadError where it is not what `url`
    publishes: an empty body, an HTML page, a gzip cut short, a `.gz` that is not one."""
    source = redacted(url)
    if path.stat().st_size == 0:
        raise DownloadError(f"{source}: the server sent an empty file; nothing was cached")
    with path.open("rb") as f:
        head = f.read(512)
    compressed = head[:2] == b"\x1f\x8b"
    if compressed:
        try:
            with gzip.open(path, "rb") as f:
                head = f.read(512)
                while f.read(1 << 20):  # the whole stream: its CRC and length are checked at the end
                    pass
        except (OSError, EOFError, zlib.error) as error:
            raise DownloadError(f"{source}: the gzip file is damaged or cut short ({error}); nothing was cached") from None
    if head.lstrip().lower().startswith(_HTML_STARTS):
        raise DownloadError(
            f"{source}: the server sent an HTML page, not the file (a login or error page?); nothing was cached"
        )
    if not compressed and published_name(url).endswith(".gz"):
        raise DownloadError(f"{source}: the server sent a file that is not gzip-compressed; nothing was cached")
    return file_sha256(path)
