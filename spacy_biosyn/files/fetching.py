"""Fetching a published file: from `$SPACY_BIOSYN_MIRROR` (a folder or a
base URL, asked for the file's name first) or from the publisher, within
a deadline, its length and content checked (not empty, not an HTML page,
a gzip whole). A URL's user and password go as HTTP basic auth, never to
another host a server redirects to, and show as `user:***@` in every
message. What is fetched is cached by downloads.py."""
import errno
import gzip
import http.client
import math
import os
import shutil
import time
import urllib.error
import urllib.request
import warnings
import zlib
from base64 import b64encode
from pathlib import Path
from typing import Optional, Union
from urllib.parse import quote, unquote, urlparse, urlsplit, urlunsplit

from tqdm import tqdm

from ..errors import BiosynError
from .manifest import file_sha256

_SCHEMES = ("http", "https", "ftp")
# Seconds without a byte before a read gives up; the whole download has its own deadline.
_READ_TIMEOUT_S = 60
DEFAULT_DEADLINE_S = 3600.0
_DEADLINE_VARIABLE = "SPACY_BIOSYN_DOWNLOAD_DEADLINE"
_HTML_STARTS = (b"<!doctype html", b"<html")
# A write that fails for want of room, which no network error is.
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


class DownloadError(BiosynError):
    """A download that failed or was refused, or a download setting that
    cannot be used; nothing of it was cached."""


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


# Fetching -------------------------------------------------------------------

def fetch_from_mirror(url: str, partial: Path, deadline: float) -> Optional[str]:
    """Fill `partial` from $SPACY_BIOSYN_MIRROR's copy of the file, if the
    mirror has one; the mirror's address as records show it, else None."""
    base = mirror()
    if base is None:
        return None
    name = published_name(url)
    if is_url(base):
        try:
            return fetch(base.rstrip("/") + "/" + quote(name), url, partial, deadline)
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


def fetch(address: str, url: str, partial: Path, deadline: float) -> str:
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
            if isinstance(error, OSError) and error.errno in DISK_FULL:
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


def checked_content(url: str, path: Path) -> str:
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
