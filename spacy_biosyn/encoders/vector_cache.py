"""Each name encoded once per encoder, on this machine: the vectors of a
vocabulary's names are kept in `$SPACY_BIOSYN_CACHE/vectors/KEY.sqlite`,
KEY a digest of the encoder's identity (its weights' digest and every
setting that changes a vector), and a later build with the same encoder
encodes only the names it has not seen. MEDIC, MONDO, MeSH and UMLS share
many names, and a rebuild after a change of lambda, index or reader
re-encodes none.

Only an encoder that gives its weights' digest is cached (a model known
only by its name may change under it). Vectors are stored as the encoder
gave them (float32), so a cached name scores as a freshly encoded one. A
store is trusted only after a few of the names it answers are encoded again
and come within the encoder's probe cosine of what it holds; a store that
fails this, or that SQLite cannot read, is removed with a warning and the
names are encoded. A store that cannot be written costs a warning, never
the build. Clear it with `rm -r $SPACY_BIOSYN_CACHE/vectors` (by default
~/.cache/spacy_biosyn/vectors).
"""
import hashlib
import sqlite3
import warnings
from contextlib import closing
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import srsly
from tqdm import tqdm

from ..files.storage import cache_folder
from ..ty import Encoder
from .base import PROGRESS_MIN_TEXTS, encoder_identity, identity_key

# Fewer names than this are encoded directly: hashing the weights for the
# key costs about what encoding a few hundred short names does.
MIN_CACHED_NAMES = 1000
# Names re-encoded to check a store before its vectors are used.
N_PROBES = 8
# SQLite's default limit on the parameters of one statement is 999 (older builds).
_LOOKUP_CHUNK = 900
# How long a build waits for another one writing the same store.
_BUSY_TIMEOUT_S = 60
# Names encoded, then stored, at a time: under the encoder's own progress bar's
# threshold, and what a stopped build loses at most.
_CHUNK = 4096


def vectors_folder() -> Path:
    return cache_folder() / "vectors"


def encode_names(encoder: Encoder, names: Sequence[str], folder: Optional[Path] = None) -> np.ndarray:
    """`encoder.encode(names)`, with the vectors of names this encoder has
    encoded before read from its store in `folder` (default
    vectors_folder()), and the others encoded and added to it a chunk at a
    time, so that a build that is stopped resumes where it stopped."""
    return EncodedNames(encoder, names, folder).whole()


class EncodedNames:
    """The vectors of a list of names, given a chunk at a time (`chunks`) or
    for some rows (`take`), never all at once: an index that is filled as
    they come spares a UMLS-size build its names' float32 vectors (4.7 GiB
    for 3.26M names of MiniLM). Read from the encoder's store where it holds
    them, else encoded and stored, as encode_names does."""

    def __init__(self, encoder: Encoder, names: Sequence[str], folder: Optional[Path] = None):
        self.encoder = encoder
        self.names = names
        self.folder = folder

    def __len__(self) -> int:
        return len(self.names)

    @property
    def dim(self) -> int:
        return self.encoder.dim

    @cached_property
    def store(self) -> Optional[Tuple[Path, Dict[str, object]]]:
        """The encoder's store and identity; None where it is not cached."""
        if len(self.names) < MIN_CACHED_NAMES:
            return None
        # Once per list of names: a PyTorch encoder's digest hashes every weight.
        identity = encoder_identity(self.encoder)
        tokenizer = getattr(self.encoder, "tokenizer_digest", None)
        if "weights_sha256" not in identity or tokenizer is None:
            return None
        # The same weights with another tokenizer (cased, accents kept) make other vectors.
        identity["tokenizer_sha256"] = tokenizer
        return _store_path(identity, self.folder or vectors_folder()), identity

    def whole(self) -> np.ndarray:
        """Every name's vector (a name given twice is encoded once)."""
        if self.store is None:
            return self.encoder.encode(self.names)
        unique = list(dict.fromkeys(self.names))
        if len(unique) < len(self.names):
            row_of = {name: i for i, name in enumerate(unique)}
            return self._like(unique).whole()[[row_of[name] for name in self.names]]
        vectors = np.empty((len(unique), self.dim), dtype=np.float32)
        filled = 0
        for chunk in self.chunks():
            vectors[filled : filled + len(chunk)] = chunk
            filled += len(chunk)
        return vectors

    def take(self, rows: np.ndarray) -> np.ndarray:
        """The vectors of the names at `rows` (a training sample)."""
        take = getattr(self.names, "take", None)
        return self._like(take(rows) if take is not None else [self.names[i] for i in rows]).whole()

    def _like(self, names: Sequence[str]) -> "EncodedNames":
        """Other names of the same encoder and store, without hashing its weights again."""
        other = EncodedNames(self.encoder, names, self.folder)
        if len(names) >= MIN_CACHED_NAMES:
            other.store = self.store
        return other

    def chunks(self) -> Iterator[np.ndarray]:
        """Every name's vector in order, _CHUNK names at a time, under one
        progress bar whose rate and time left are the names still to encode."""
        names, encoder, store = self.names, self.encoder, self.store
        if store is None:
            found = np.zeros(len(names), dtype=bool)
        else:
            store, identity = store
            found = _stored(store, names)
            if found.any() and not _agrees(encoder, names, found, store):
                found[:] = False
        missing = int(len(names) - found.sum())
        # The ONNX encoder may encode names another, faster way than mentions
        # (its names_precision), which loads a model: only when a name is missing.
        encode = encoder.names_encoding() if missing and store is not None and hasattr(encoder, "names_encoding") \
            else encoder.encode
        with tqdm(total=missing, desc="Encoding names", unit="name", disable=missing < PROGRESS_MIN_TEXTS) as bar:
            for start in range(0, len(names), _CHUNK):
                chunk = names[start : start + _CHUNK]
                vectors = np.empty((len(chunk), encoder.dim), dtype=np.float32)
                read = np.zeros(len(chunk), dtype=bool)
                known = np.flatnonzero(found[start : start + len(chunk)])
                if len(known):
                    read[known] = _read(store, [chunk[i] for i in known], vectors, known)
                new = np.flatnonzero(~read)
                if len(new):
                    texts = [chunk[i] for i in new]
                    vectors[new] = encode(texts)
                    if store is not None:
                        _write(store, texts, vectors[new], identity)
                    # A name the store lost since it was asked is encoded beyond the total.
                    bar.update(min(len(new), bar.total - bar.n))
                yield vectors


def _store_path(identity: Dict[str, object], folder: Path) -> Path:
    key = srsly.json_dumps(identity_key(identity), sort_keys=True).encode("utf-8")
    return folder / f"{hashlib.sha256(key).hexdigest()[:24]}.sqlite"


def _stored(store: Path, names: Sequence[str]) -> np.ndarray:
    """Which of `names` the store holds (their names only: the vectors are
    read a chunk at a time as they are used)."""
    found = np.zeros(len(names), dtype=bool)
    try:
        if not store.is_file():
            return found
    except OSError:  # a folder this user may not read: no store, not a failed build
        return found

    def take(start: int, chunk: List[str], rows) -> None:
        held = {name for (name,) in rows}
        if held:
            found[start : start + len(chunk)] = [name in held for name in chunk]

    if not _looked_up(store, names, "name", take):
        found[:] = False
    return found


def _read(store: Path, names: List[str], vectors: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Fill vectors[rows[i]] with the stored vector of names[i]; which were
    read (a store changed or locked since it was asked leaves some to encode)."""
    read = np.zeros(len(names), dtype=bool)
    index_of = {name: i for i, name in enumerate(names)}
    dim = vectors.shape[1]

    def take(start: int, chunk: List[str], found) -> None:
        for name, blob in found:
            if len(blob) != dim * 4:
                raise sqlite3.DatabaseError(f"a vector of {len(blob)} bytes where {dim} float32 belong")
            vectors[rows[index_of[name]]] = np.frombuffer(blob, dtype=np.float32)
            read[index_of[name]] = True

    if not _looked_up(store, names, "name, vector", take):
        read[:] = False
    return read


def _looked_up(store: Path, names: Sequence[str], columns: str, take: Callable[[int, List[str], Any], None]) -> bool:
    """Give `take` each chunk of names' start, names and `columns` of the
    rows the store holds for them; False where the store could not be read
    (warned of, or removed if SQLite cannot read it)."""
    try:
        with closing(sqlite3.connect(store, timeout=_BUSY_TIMEOUT_S)) as db:
            for start in range(0, len(names), _LOOKUP_CHUNK):
                chunk = names[start : start + _LOOKUP_CHUNK]
                take(start, chunk, db.execute(
                    f"SELECT {columns} FROM vectors WHERE name IN ({','.join('?' * len(chunk))})", chunk
                ))
        return True
    except sqlite3.OperationalError as error:
        # Locked by another build past the timeout, or created by one a moment
        # ago and not yet given its table: nothing is wrong with the store.
        if "no such table" not in str(error):
            warnings.warn(f"{store} cannot be read now ({error}): the names are encoded", UserWarning)
    except sqlite3.DatabaseError as error:
        _discard(store, f"SQLite cannot read it ({error})")
    return False


def _agrees(encoder: Encoder, names: Sequence[str], found: np.ndarray, store: Path) -> bool:
    """Whether names the store holds, encoded again, come within the
    encoder's probe cosine of the vectors it holds."""
    held = np.flatnonzero(found)
    # Distinct names: one given twice would be read once, and the probe fail.
    picked = list(dict.fromkeys(names[i] for i in held[np.linspace(0, len(held) - 1, min(N_PROBES, len(held))).astype(int)]))
    stored = np.empty((len(picked), encoder.dim), dtype=np.float32)
    if not _read(store, picked, stored, np.arange(len(picked))).all():
        return False
    fresh = encoder.encode(picked)
    cosine = (stored * fresh).sum(1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(fresh, axis=1) + 1e-12)
    if cosine.min() >= getattr(encoder, "probe_min_cosine", 0.99):
        return True
    _discard(store, f"its vector of {picked[int(cosine.argmin())]!r} is not this encoder's (cosine {cosine.min():.3f})")
    return False


def _write(store: Path, names: List[str], vectors: np.ndarray, identity: Dict[str, object]) -> None:
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(store, timeout=_BUSY_TIMEOUT_S)) as db, db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (name TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS encoder (identity TEXT NOT NULL)")
            if db.execute("SELECT COUNT(*) FROM encoder").fetchone()[0] == 0:
                db.execute("INSERT INTO encoder VALUES (?)", (srsly.json_dumps(identity),))
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                ((name, np.ascontiguousarray(vector, dtype=np.float32).tobytes()) for name, vector in zip(names, vectors)),
            )
    except (OSError, sqlite3.Error) as error:
        warnings.warn(f"the name vectors could not be kept in {store} ({error}): the next build encodes them again", UserWarning)


def _discard(store: Path, why: str) -> None:
    warnings.warn(f"{store}: {why}; it is removed and the names are encoded again", UserWarning)
    for part in (store, *(store.with_name(store.name + suffix) for suffix in ("-journal", "-wal", "-shm"))):
        try:
            part.unlink()
        except OSError:
            pass
