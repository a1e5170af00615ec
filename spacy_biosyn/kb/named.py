"""A named vocabulary (catalogue.py) as a ready linker: fetched, read,
encoded and indexed once, then loaded from the cache by every later use, in
any process, without encoding the vocabulary or fetching a file (a load
re-encodes 8 names to check the stored vectors).

A built linker lies in `$SPACY_BIOSYN_CACHE/linkers/NAME-KEY`, KEY a digest
of what made its names, tf-idf and vectors: the source files' SHA-256
(recorded when they were fetched, so finding it reads no source file), the
reader, the encoder and the index back-end. The folder is what
`Linker.to_disk` writes (each file checksummed, no encoder: the pipe has its
own) and `named.json`, and is swapped in whole. A folder that fails its
checks on load is removed and built again, never used. Two processes
building one name build it once: the second waits for the first's lock,
then loads what it built.
"""
import hashlib
import importlib.util
import shutil
import warnings
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import srsly
from filelock import FileLock

from ..downloads import DownloadError, cache_folder, cached_path, cached_record, forget
from ..errors import DictionaryError
from ..storage import replaced_atomically
from .catalogue import NamedVocabulary, named_vocabulary
from .dictionary import Dictionary
from .linker import Linker
from .mesh import with_mapped_tree_numbers
from .vocabularies import read_vocabulary_file

_RECORD = "named.json"
# Bumped when what a cached linker holds changes: older folders are then not found.
_LAYOUT = 1
# Bumped, per format, when its reader reads a file into other names or types
# (MeSH: supplementary concepts typed by their mapped descriptors): that
# format's cached linkers are built again, the others' stay.
_READER_REVISIONS = {"mesh": 2}


def linkers_folder() -> Path:
    return cache_folder() / "linkers"


def fill_named_linker(
    linker: Linker, name: str, *, refresh: bool = False, announce: Optional[Callable[[str], None]] = None
) -> Path:
    """Give `linker` (its encoder loaded) the named vocabulary's names,
    from the cache, else built and cached; `refresh` fetches the files again
    (and builds again where they changed). Returns the cache folder."""
    entry = named_vocabulary(name)
    if not refresh:
        recorded = [cached_record(url) for url in entry.urls]
        if all(recorded):
            folder = _folder(entry, [record["sha256"] for record in recorded], linker)
            # Without the lock a failed load may be a folder being swapped in: it is judged again under the lock.
            if _loaded(linker, folder, repair=False):
                return folder
    paths = [cached_path(url, refresh=refresh) for url in entry.urls]
    folder = _folder(entry, [_recorded_sha256(url) for url in entry.urls], linker)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder) + ".lock"):
        if _loaded(linker, folder, repair=True):  # built meanwhile by another process, or whole after all
            return folder
        dictionary = read_named(entry, paths)
        linker.build(dictionary, announce=announce)
        with replaced_atomically(folder) as staging:
            linker.to_disk(staging, exclude=["encoder"])
            srsly.write_json(staging / _RECORD, {
                "name": entry.name, "urls": list(entry.urls), "encoder": _encoder_identity(linker),
                "index": _index_identity(linker), "n_names": len(dictionary),
            })
    return folder


def read_named(entry: NamedVocabulary, paths: Sequence[Path]) -> Dictionary:
    """The entry's files read in its format into one vocabulary. A file that
    does not read is dropped from the download cache, so the next try
    fetches it again instead of failing on the same copy."""
    dictionaries = []
    for url, path in zip(entry.urls, paths):
        try:
            dictionaries.append(read_vocabulary_file(path, entry.format)[0])
        except DictionaryError as error:
            forget(url)
            raise DictionaryError(
                f"{url} does not read as {entry.format} ({error}); the download was dropped from the "
                "cache: try again, or check the mirror's copy"
            ) from None
    merged = dictionaries[0]
    for more in dictionaries[1:]:  # MeSH: descriptors, then supplementary concepts
        details = {**merged.details, **more.details}
        merged = merged.with_synonyms(more.pairs()).with_details(details)
    if entry.format == "mesh":  # supplementary concepts typed by the descriptors they map to
        merged = merged.with_details(with_mapped_tree_numbers(merged.details))
    return merged


def cached_linkers(name: str) -> List[dict]:
    """What named.json says of each built linker of `name` in the cache."""
    found = []
    for record in sorted(linkers_folder().glob(f"{name}-*/{_RECORD}")):
        try:
            content = srsly.read_json(record)
        except (OSError, ValueError):
            continue
        if isinstance(content, dict) and content.get("name") == name:
            found.append({**content, "folder": str(record.parent)})
    return found


def _folder(entry: NamedVocabulary, checksums: List[str], linker: Linker) -> Path:
    key = {
        "layout": _LAYOUT, "format": entry.format, "sources": checksums,
        "encoder": _encoder_identity(linker), "index": _index_identity(linker),
    }
    if entry.format in _READER_REVISIONS:  # absent at revision 1, so other formats keep their folders
        key["reader_revision"] = _READER_REVISIONS[entry.format]
    digest = hashlib.sha256(srsly.json_dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:20]
    return linkers_folder() / f"{entry.name}-{digest}"


def _recorded_sha256(url: str) -> str:
    record = cached_record(url)
    if record is None:  # removed by another process between the fetch and here
        raise DownloadError(f"{url}: its cached copy went away while it was read; try again")
    return record["sha256"]


# Settings of an encoder that do not change its vectors.
_NOT_VECTORS = ("batch_size", "threads", "device")


def _encoder_identity(linker: Linker) -> Dict[str, object]:
    """What makes the names' vectors: the runtime, the model (its whole
    name or path) and every setting that changes a vector (int8 weights do)."""
    encoder = linker.encoder
    block = {**getattr(encoder, "config_block", {}), **getattr(encoder, "settings", {"name": getattr(encoder, "name", "")})}
    return {"runtime": type(encoder).__name__, **{k: v for k, v in block.items() if k not in _NOT_VECTORS}}


def _index_identity(linker: Linker) -> Dict[str, object]:
    """The back-end and its settings; and whether faiss is installed, which
    decides what a SizedIndex builds."""
    index = linker.index
    settings = {key: value for key, value in vars(index).items()
                if not key.startswith("_") and isinstance(value, (str, int, float, bool))}
    return {"back_end": type(index).__name__, "faiss": importlib.util.find_spec("faiss") is not None, **settings}


def _loaded(linker: Linker, folder: Path, repair: bool) -> bool:
    """Load the linker built in `folder`, if there is a whole one. With
    `repair` (under the folder's lock) a damaged one is removed, to be built
    again by the caller."""
    if not (folder / _RECORD).is_file():
        return False
    try:
        linker.from_disk(folder, exclude=["encoder"])
    except (ValueError, OSError, ImportError) as error:  # BiosynError is a ValueError; the index raises plain ones
        if repair:
            warnings.warn(f"{folder} is damaged and is built again: {error}", UserWarning, stacklevel=3)
            shutil.rmtree(folder, ignore_errors=True)
        return False
    return True
