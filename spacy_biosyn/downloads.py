"""Files named by URL, fetched once into a cache, as scispaCy's
`cached_path` does: a vocabulary can be given as `https://.../CTD_chemicals.tsv.gz`
wherever a path is taken.

The cache is `$SPACY_BIOSYN_CACHE`, else `~/.cache/spacy_biosyn`; a file is
kept under a digest of its URL and its own name, written whole or not at
all, and never fetched again.
"""
import hashlib
import os
import shutil
import tempfile
import urllib.request
from pathlib import Path
from typing import Union
from urllib.parse import urlparse

from .errors import BiosynError

_SCHEMES = ("http", "https", "ftp")


def is_url(source: Union[str, Path]) -> bool:
    return isinstance(source, str) and urlparse(source).scheme in _SCHEMES


def cache_folder() -> Path:
    return Path(os.environ.get("SPACY_BIOSYN_CACHE", Path.home() / ".cache" / "spacy_biosyn"))


def cached_path(source: Union[str, Path]) -> Path:
    """`source` as a local path: a path as it is, a URL as its cached copy."""
    if not is_url(source):
        return Path(source)
    name = Path(urlparse(source).path).name or "download"
    target = cache_folder() / f"{hashlib.sha256(source.encode('utf-8')).hexdigest()[:16]}-{name}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.", delete=False)
    try:
        with partial, urllib.request.urlopen(source, timeout=60) as response:
            shutil.copyfileobj(response, partial)
        os.replace(partial.name, target)
    except OSError as error:  # URLError and HTTPError are OSErrors
        raise BiosynError(f"{source}: could not be fetched ({error}); download it and give its path") from None
    finally:
        Path(partial.name).unlink(missing_ok=True)
    return target
