"""Files named by URL, fetched once into a cache, as scispaCy's
`cached_path` does: a vocabulary can be given as `https://.../CTD_chemicals.tsv.gz`
wherever a path is taken, and the named vocabularies (kb/catalogue.py) are
fetched the same way.

The cache is `$SPACY_BIOSYN_CACHE` (else `~/.cache/spacy_biosyn`); a file is
kept in `downloads/` under a digest of its URL and its own name, beside a
record of its length and SHA-256. `$SPACY_BIOSYN_MIRROR`, a folder or a base
URL, is asked for the file's name before the publisher's URL (air-gapped
sites copy the published files there).

Nothing unchecked is cached: a download goes to a hidden partial file and
is kept only when its length is the promised one and its content not empty, not an HTML
page and, for a gzip file, whole. A whole download has a deadline, so a
server that drips bytes is given up on. A cached copy whose length or
checksum no longer matches its record is fetched again; `refresh` fetches
again in any case. Two processes asking for one URL fetch it once.
"""
import glob
import gzip
import hashlib
import http.client
import os
import shutil
import tempfile
import time
import urllib.error
import urllib.request
import warnings
import zlib
from pathlib import Path
from typing import Optional, Union
from urllib.parse import quote, urlparse, urlsplit, urlunsplit

import srsly
from filelock import FileLock
from tqdm import tqdm

from .errors import BiosynError
from .storage import file_sha256

_SCHEMES = ("http", "https", "ftp")
# Seconds without a byte before a read gives up; the whole download has its own deadline.
_READ_TIMEOUT_S = 60
DEFAULT_DEADLINE_S = 3600.0
_HTML_STARTS = (b"<!doctype html", b"<html")
# The process's umask, for files made with mkstemp's 0600: reading it means setting it, so it is set back at once.
_UMASK = os.umask(0)
os.umask(_UMASK)


class DownloadError(BiosynError):
    """A download that failed or was refused; nothing of it was cached."""


def is_url(source: Union[str, Path]) -> bool:
    return isinstance(source, str) and urlparse(source).scheme in _SCHEMES


def cache_folder() -> Path:
    return Path(os.environ.get("SPACY_BIOSYN_CACHE", Path.home() / ".cache" / "spacy_biosyn")).expanduser()


def published_name(url: str) -> str:
    """The file name a URL publishes, by which a mirror holds it."""
    return Path(urlparse(url).path).name or "download"


def _target(url: str) -> Path:
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
    # The URL's digest tells copies apart: the name is cut where a file system's limit could refuse it.
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


def forget(url: str) -> None:
    """Drop the cached copy of `url` (its reader refused it), so that the
    next use fetches it again."""
    target = _target(url)
    with FileLock(str(target) + ".lock"):  # not while another process writes it
        _record_path(target).unlink(missing_ok=True)
        target.unlink(missing_ok=True)


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
    target = _target(url)
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if not refresh and _is_intact(target):
            return target
        for stale in target.parent.glob(f".{glob.escape(target.name)}.*.partial"):
            stale.unlink(missing_ok=True)  # a killed fetch's: the lock says none is running
        deadline = deadline_s if deadline_s is not None else float(
            os.environ.get("SPACY_BIOSYN_DOWNLOAD_DEADLINE", DEFAULT_DEADLINE_S)
        )
        partial = Path(tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")[1])
        try:
            origin = _fetch_from_mirror(url, partial, deadline) or _fetch(url, url, partial, deadline)
            digest = _checked_content(url, partial)
            os.chmod(partial, 0o666 & ~_UMASK)  # mkstemp's 0600 would keep a shared cache from its other users
            os.replace(partial, target)
            srsly.write_json(_record_path(target), {
                "url": url, "from": origin, "bytes": target.stat().st_size, "sha256": digest,
                "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            })
        finally:
            partial.unlink(missing_ok=True)
    return target


def _is_intact(target: Path) -> bool:
    """The cached copy is there and is what its record says (a copy cut
    short or changed by hand is fetched again, never used)."""
    record = _read_record(target)
    if record is None or not target.is_file() or target.stat().st_size != record.get("bytes"):
        return False
    return file_sha256(target) == record["sha256"]


def _fetch_from_mirror(url: str, partial: Path, deadline: float) -> Optional[str]:
    """Fill `partial` from $SPACY_BIOSYN_MIRROR's copy of the file, if the
    mirror has one; the mirror's address, else None."""
    mirror = os.environ.get("SPACY_BIOSYN_MIRROR")
    if not mirror:
        return None
    name = published_name(url)
    if is_url(mirror):
        address = mirror.rstrip("/") + "/" + quote(name)
        try:
            return _fetch(address, url, partial, deadline)
        except _NotThere:
            return None
    folder = Path(mirror).expanduser()
    if not folder.is_dir():
        warnings.warn(f"SPACY_BIOSYN_MIRROR={folder} is not a folder: {name} is fetched from its publisher",
                      UserWarning, stacklevel=3)
        return None
    copy = folder / name
    if not copy.is_file():
        return None
    shutil.copyfile(copy, partial)
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
        raise DownloadError(f"{url}: the host name {host!r} is not one a URL can hold") from None
    userinfo = parts.netloc.rpartition("@")[0]
    netloc = (f"{userinfo}@" if userinfo else "") + ascii_host + (f":{parts.port}" if parts.port else "") if host else parts.netloc
    kept = "/:@!$&'()*+,;=%~?#[]"
    return urlunsplit((parts.scheme, netloc, quote(parts.path, safe=kept), quote(parts.query, safe=kept),
                       quote(parts.fragment, safe=kept)))


def _fetch(address: str, url: str, partial: Path, deadline: float) -> str:
    """Write the body at `address` into `partial`, checking its length and
    the deadline; `url` names the file in errors."""
    started = time.monotonic()
    try:
        request = urllib.request.Request(_ascii_url(address), headers={"User-Agent": "spacy-biosyn"})
        with urllib.request.urlopen(request, timeout=_READ_TIMEOUT_S) as response, partial.open("wb") as out:
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
                            f"{url}: not fetched within {deadline:.0f} s ({received:,} bytes received, from "
                            f"{address}); try again, or set SPACY_BIOSYN_DOWNLOAD_DEADLINE to allow longer"
                        )
    except urllib.error.HTTPError as error:
        if error.code in (404, 410) and address != url:
            raise _NotThere(address) from None
        raise DownloadError(f"{url}: could not be fetched from {address} (HTTP {error.code} {error.reason}); "
                            "download it and give its path, or put it in $SPACY_BIOSYN_MIRROR") from None
    except (OSError, http.client.HTTPException, ValueError) as error:  # URLError, timeouts, cut chunks, bad status
        reason = f"{type(error).__name__}: {error}".strip()[:200]
        raise DownloadError(f"{url}: could not be fetched from {address} ({reason}); download it and give its "
                            "path, or put it in $SPACY_BIOSYN_MIRROR") from None
    if expected is not None and received != expected:
        raise DownloadError(
            f"{url}: the download was cut short ({received:,} of the {expected:,} bytes promised, from "
            f"{address}); nothing was cached: try again"
        )
    return address


def _checked_content(url: str, path: Path) -> str:
    """The file's SHA-256, or DownloadError where it is not what `url`
    publishes: an empty body, an HTML page, a gzip cut short, a `.gz` that is not one."""
    if path.stat().st_size == 0:
        raise DownloadError(f"{url}: the server sent an empty file; nothing was cached")
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
            raise DownloadError(f"{url}: the gzip file is damaged or cut short ({error}); nothing was cached") from None
    if head.lstrip().lower().startswith(_HTML_STARTS):
        raise DownloadError(
            f"{url}: the server sent an HTML page, not the file (a login or error page?); nothing was cached"
        )
    if not compressed and published_name(url).endswith(".gz"):
        raise DownloadError(f"{url}: the server sent a file that is not gzip-compressed; nothing was cached")
    return file_sha256(path)
