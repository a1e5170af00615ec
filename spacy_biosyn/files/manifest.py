"""A saved folder's manifest (`manifest.json`): the SHA-256 of every file
in it, written last and read back before any of them is trusted, so a file
that was edited, cut short, deleted or added is named on load instead of
read. A folder that passed is remembered in the cache folder by the stat of
every file in it (device, inode, size, modification and change times), so
the next process that loads it unchanged does not hash it again: a 250 MB
text pipeline's files took 0.2 s of every start on 2 cores."""
import hashlib
import os
import time
import uuid
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Union

import srsly

from ..errors import SavedStateError
from .storage import cache_folder, read_saved_json

MANIFEST = "manifest.json"
# Folders this process has checked against their manifest, by the stat of
# every file: a pipe's folder and the linker inside it are hashed once.
_CHECKED: Dict[tuple, str] = {}
_CHECKED_AT_MOST = 64
# Folders checked by any process, a file each in the cache folder; the
# least recently used go beyond this many (from_bytes checks a new temporary
# folder each time).
_REMEMBERED_AT_MOST = 256
# Coarser than any file system's clock (FAT's 2 s; ext4's is a few ms).
_SETTLING_S = 3
RECHECK_VARIABLE = "SPACY_BIOSYN_RECHECK"


def write_manifest(folder: Union[str, Path]) -> None:
    """Write `folder`'s manifest: the SHA-256 of every file below it (the
    manifests of folders inside it included), written last."""
    folder = Path(folder)
    files = {name: file_sha256(folder / name) for name in _files_below(folder)}
    srsly.write_json(folder / MANIFEST, {"sha256": files})


def check_manifest(folder: Union[str, Path]) -> str:
    """Check every file below `folder` against its manifest; returns the
    manifest's digest (what the folder holds, byte for byte). Raises
    SavedStateError naming the first file that is missing, changed or not
    in the manifest, or the manifest itself when it is not one. A folder
    that passed unchanged since, in this process or another, is not read."""
    folder = Path(folder)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise SavedStateError(f"{manifest} is missing: the save is incomplete; save or build it again")
    present = list(_files_below(folder))
    key = (str(folder.resolve()), *((name, *_stat(folder / name)) for name in (MANIFEST, *present)))
    if key not in _CHECKED:
        if len(_CHECKED) >= _CHECKED_AT_MOST:
            _CHECKED.clear()
        _CHECKED[key] = _remembered(key) or _remember(key, _checked_digest(folder, present))
    return _CHECKED[key]


def _checked_digest(folder: Path, present: List[str]) -> str:
    manifest = folder / MANIFEST
    listed = read_saved_json(manifest, expect=dict).get("sha256")
    if not isinstance(listed, dict) or not all(isinstance(v, str) for v in listed.values()):
        raise SavedStateError(f"{manifest}: not a manifest (no \"sha256\" object of file checksums); save it again")
    for name in sorted(set(listed) | set(present)):
        if name not in present:
            raise SavedStateError(f"{folder / name} is missing: the save is incomplete; save or build it again")
        if name not in listed:
            raise SavedStateError(f"{folder / name} is not part of the save in {folder} (its manifest does not list it): remove it")
        if file_sha256(folder / name) != listed[name]:
            raise SavedStateError(
                f"{folder / name} is not the file that was saved (its checksum differs from {manifest}): "
                "it was edited or damaged; save or build it again"
            )
    return file_sha256(manifest)


def _record(key: tuple) -> Path:
    return cache_folder() / "checked" / hashlib.sha256(repr(key).encode("utf8")).hexdigest()[:40]


def _remembered(key: tuple) -> Optional[str]:
    """The digest a process wrote for this very folder state, if any, its
    record touched (the least recently used go first); none where
    $SPACY_BIOSYN_RECHECK is 1, which hashes every load (damage on disk that
    no write made changes no stat)."""
    if os.environ.get(RECHECK_VARIABLE) == "1":
        return None
    try:
        record = _record(key)
        digest = record.read_text(encoding="ascii")
        os.utime(record)
    except (OSError, RuntimeError, UnicodeDecodeError):  # RuntimeError: Path.home() with no home
        return None
    return digest if len(digest) == 64 and all(c in "0123456789abcdef" for c in digest) else None


def _remember(key: tuple, digest: str) -> str:
    """Write that the folder state `key` passed with `digest`; a cache that
    cannot be written only means the next process hashes it again. Not for
    a file changed in the last `_SETTLING_S`: a write in the same tick of
    the file system's clock, of the same size, would leave its stat as it
    was (as git's index treats a racily clean file)."""
    newest = max(max(stat[-2:]) for stat in key[1:])  # each file's (name, dev, ino, size, mtime, ctime)
    if newest > time.time_ns() - _SETTLING_S * 1e9:
        return digest
    try:
        record = _record(key)
        record.parent.mkdir(parents=True, exist_ok=True)
        staging = record.with_name(f".{record.name}.{uuid.uuid4().hex}")
        staging.write_text(digest, encoding="ascii")
        os.replace(staging, record)
        kept = sorted(record.parent.iterdir(), key=lambda path: path.stat().st_mtime_ns)
        for old in kept[:-_REMEMBERED_AT_MOST]:
            old.unlink(missing_ok=True)
    except (OSError, RuntimeError):
        pass
    return digest


def _files_below(folder: Path) -> Iterator[str]:
    """The files a save wrote: not the manifest, nor hidden ones, which no
    save writes or reads (.ipynb_checkpoints, .DS_Store, editors' swap files)."""
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_file() and path != folder / MANIFEST and not any(part.startswith(".") for part in relative.parts):
            yield relative.as_posix()


def _stat(path: Path) -> tuple:
    # ctime too: a copy that puts the mtime back (cp -p, rsync -a) cannot put it back.
    stat = path.stat()
    return stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns


def file_sha256(path: Union[str, Path]) -> str:
    """The SHA-256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
