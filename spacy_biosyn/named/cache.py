"""A named vocabulary (catalogue.py) as a ready linker: fetched, read,
encoded and indexed once, then loaded from the cache by every later use, in
any process, without encoding the vocabulary or fetching a file (a load
re-encodes 8 names to check the stored vectors).

A built linker lies in `$SPACY_BIOSYN_CACHE/linkers/NAME-KEY`, KEY a digest
of all that changes what is stored: the source files' SHA-256 (recorded
when they were fetched, so finding it reads no source file), the reader,
the encoder (by its weights' digest where it gives one, not by the path it
was loaded from, where two models may be saved in turn), lambda (the saved
NIL threshold is derived with it), the corpora's ID preferences
(`preferred_ids_from`, which order each concept's IDs) and the index
back-end. An encoder whose names_precision is "auto" loads a build of
either precision (a server without PyTorch, which encodes in fp32 only,
loads a bf16 build). The folder holds `named.json` and, in `linker/`, what
`NameRanker.to_disk` writes (checked against its manifest on load; no encoder:
the pipe has its own), and is swapped in whole. A folder that fails its
checks on load is removed and built again, never used. Two processes
building one name build it once: the second waits for the first's lock,
then loads what it built. A cache that cannot be written is said in one
line (downloads.CacheError).
"""
import glob
import hashlib
import importlib.util
import shutil
import warnings
from importlib import metadata
from itertools import chain
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import srsly
from filelock import FileLock

from ..encoders.base import encoder_identity, identity_key
from ..errors import BiosynError, DictionaryError
from ..files.downloads import cache_written, cached_path, cached_record, forget
from ..files.fetching import DownloadError, redacted
from ..files.spill import give_back_freed_memory
from ..files.storage import cache_folder, remove_stale_staging, replaced_atomically
from ..kb.dictionary import Dictionary
from ..search.index import HOLDING_SETTINGS
from ..search.name_ranker import NameRanker
from ..vocabularies.formats import read_vocabulary_file
from ..vocabularies.mesh import with_mapped_tree_numbers
from .catalogue import NamedVocabulary, named_vocabulary

_RECORD = "named.json"
_LINKER = "linker"
# Bumped when what a cached linker holds changes: older folders are then not found.
_LAYOUT = 2
# Bumped, per format, when its reader reads a file into other names or types
# (MeSH: supplementary concepts typed by their mapped descriptors): that
# format's cached linkers are built again, the others' stay.
_READER_REVISIONS = {"mesh": 2}


def linkers_folder() -> Path:
    return cache_folder() / "linkers"


def fill_named_linker(
    linker: NameRanker,
    name: str,
    *,
    id_usage: Optional[Mapping[str, int]] = None,
    refresh: bool = False,
    announce: Optional[Callable[[str], None]] = None,
) -> Path:
    """Give `linker` (its encoder loaded) the named vocabulary's names,
    from the cache, else built and cached. `id_usage` (gold ID -> count in
    annotated corpora, as Routes.id_usage) puts each concept's most used ID
    first, as it does for a `dictionary`; `refresh` fetches the files again
    (and builds again where they changed). Returns the cache folder."""
    entry = named_vocabulary(name)
    usage = dict(id_usage or {})
    encoder = encoder_identity(linker.encoder)
    made_by = _made_by(entry, linker, encoder, usage)
    if not refresh:
        recorded = [cached_record(url) for url in entry.urls]
        if all(recorded):
            checksums = [record["sha256"] for record in recorded]
            for kept in [made_by] + [_made_by(entry, linker, other, usage) for other in _either_precision(linker, encoder)]:
                folder = _folder(entry, kept, checksums)
                # Without the lock a failed load may be a folder being swapped in: it is judged again under the lock.
                if _loaded(linker, folder, repair=False):
                    return folder
    paths = [cached_path(url, refresh=refresh) for url in entry.urls]
    folder = _folder(entry, made_by, [_recorded_sha256(url) for url in entry.urls])
    with cache_written(folder):
        folder.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(folder) + ".lock"):
            if _loaded(linker, folder, repair=True):  # built meanwhile by another process, or whole after all
                return folder
            dictionary = read_named(entry, paths)
            linker.build(dictionary.with_preferred_ids(usage) if usage else dictionary, announce=announce)
            with replaced_atomically(folder) as staging:
                linker.to_disk(staging / _LINKER, exclude=["encoder"])
                srsly.write_json(staging / _RECORD, {
                    **made_by, "name": entry.name, "urls": list(entry.urls), "encoder": encoder,
                    "n_names": len(dictionary),
                })
            # Searched from the files just saved, as every later run searches
            # them: a faiss index's lists then stay on disk until probed (a
            # UMLS-size index held 1.5 GiB more in the run that built it).
            linker.index.from_disk(folder / _LINKER / "index")
            give_back_freed_memory()
    return folder


def read_named(entry: NamedVocabulary, paths: Sequence[Path]) -> Dictionary:
    """The entry's files read in its format into one vocabulary. A file that
    does not read, whatever the reader says, is dropped from the download
    cache, so the next try fetches it again instead of failing on the same
    copy; the error names the URL and the copy it came from, not the cache's."""
    dictionaries = []
    for url, path in zip(entry.urls, paths):
        try:
            dictionaries.append(read_vocabulary_file(path, entry.format)[0])
        except (ValueError, OSError, EOFError) as error:  # DictionaryError, UnicodeDecodeError, a gzip's errors
            raise _unread(entry, url, path, error) from None
    merged = dictionaries[0]
    for more in dictionaries[1:]:  # MeSH: descriptors, then supplementary concepts
        details = dict(chain(merged.details.items(), more.details.items()))
        merged = merged.with_synonyms(more.pairs()).with_details(details)
    if entry.format == "mesh":  # supplementary concepts typed by the descriptors they map to
        merged = merged.with_details(with_mapped_tree_numbers(merged.details))
    return merged


def _unread(entry: NamedVocabulary, url: str, path: Path, error: Exception) -> DictionaryError:
    """The error of a download its reader refused, which is dropped from the cache."""
    origin = (cached_record(url) or {}).get("from") or redacted(url)
    reason = str(error) if isinstance(error, BiosynError) else f"{type(error).__name__}: {error}"
    reason = reason.replace(str(path), origin)
    if forget(url):
        fate = f"the download was dropped from the cache: try again once {origin} is mended"
    else:
        fate = "the cache cannot be changed by this user: set SPACY_BIOSYN_CACHE to a folder you can write"
    return DictionaryError(f"{redacted(url)} does not read as {entry.format} ({reason}); {fate}")


def cached_linkers(name: str) -> List[dict]:
    """What named.json says of each built linker of `name` in the cache; one
    that is not such a record (damaged, edited) is passed over."""
    found = []
    for record in sorted(linkers_folder().glob(f"{glob.escape(name)}-*/{_RECORD}")):
        try:
            content = srsly.read_json(record)
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(content, dict) and content.get("name") == name and isinstance(content.get("encoder"), dict):
            found.append({**content, "folder": str(record.parent)})
    return found


def _made_by(
    entry: NamedVocabulary, linker: NameRanker, encoder: Dict[str, object], id_usage: Mapping[str, int]
) -> Dict[str, object]:
    """What, besides the source files, decides what the cached linker holds;
    `encoder` is encoders.base.encoder_identity's."""
    made_by = {
        "layout": _LAYOUT, "format": entry.format, "encoder": identity_key(encoder), "index": _index_identity(linker),
        "sparse_weight": linker.sparse_weight,
        # The release that read and built it: another release's readers, index
        # or NIL model may hold other names or scores, so its entries are not
        # taken but built again (the encoded names come from the vector store).
        "package": metadata.version("spacy-biosyn"),
    }
    if entry.format in _READER_REVISIONS:  # absent at revision 1, so other formats keep their folders
        made_by["reader_revision"] = _READER_REVISIONS[entry.format]
    if id_usage:
        counts = srsly.json_dumps(sorted(id_usage.items())).encode("utf-8")
        made_by["preferred_ids_sha256"] = hashlib.sha256(counts).hexdigest()
    if linker.annotated_mentions:  # what its NIL model learns from
        mentions = srsly.json_dumps(sorted(linker.annotated_mentions)).encode("utf-8")
        made_by["annotated_mentions_sha256"] = hashlib.sha256(mentions).hexdigest()
    return made_by


def _either_precision(linker: NameRanker, encoder: Dict[str, object]) -> List[Dict[str, object]]:
    """The identity of the same encoder with names in the other precision,
    where its names_precision is "auto", which takes a build in either: a
    server without PyTorch (fp32 only) then loads what a machine with bf16
    built, and the other way round. Mentions are fp32 in both."""
    if getattr(linker.encoder, "names_precision", None) != "auto":
        return []
    if encoder.get("names_precision") == "bf16":
        return [{key: value for key, value in encoder.items() if key != "names_precision"}]
    return [{**encoder, "names_precision": "bf16"}]


def _folder(entry: NamedVocabulary, made_by: Dict[str, object], checksums: List[str]) -> Path:
    key = {**made_by, "sources": checksums}
    digest = hashlib.sha256(srsly.json_dumps(key, sort_keys=True).encode("utf-8")).hexdigest()[:20]
    return linkers_folder() / f"{entry.name}-{digest}"


def _recorded_sha256(url: str) -> str:
    record = cached_record(url)
    if record is None:  # removed by another process between the fetch and here
        raise DownloadError(f"{redacted(url)}: its cached copy went away while it was read; try again")
    return record["sha256"]


def _index_identity(linker: NameRanker) -> Dict[str, object]:
    """The back-end and the settings its saved state depends on; and whether
    faiss is installed, which decides what a SizedIndex builds."""
    index = linker.index
    settings = {key: value for key, value in vars(index).items()
                if not key.startswith("_") and key not in HOLDING_SETTINGS and isinstance(value, (str, int, float, bool))}
    return {"back_end": type(index).__name__, "faiss": importlib.util.find_spec("faiss") is not None, **settings}


def _loaded(linker: NameRanker, folder: Path, repair: bool) -> bool:
    """Load the linker built in `folder`, if there is a whole one. With
    `repair` (under the folder's lock) a damaged one is removed, to be built
    again by the caller. Loading removes what killed builds left beside it."""
    if not (folder / _RECORD).is_file():
        return False
    try:
        linker.from_disk(folder / _LINKER, exclude=["encoder"])
    except (ValueError, OSError, ImportError) as error:  # BiosynError (SavedStateError) is one; the index's are plain
        if repair:
            warnings.warn(f"{folder} is damaged and is built again: {error}", UserWarning, stacklevel=3)
            shutil.rmtree(folder, ignore_errors=True)
        return False
    remove_stale_staging(folder)
    return True
