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
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import srsly
from tqdm import tqdm

from ..files.downloads import cache_folder
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
    if len(names) < MIN_CACHED_NAMES:
        return encoder.encode(names)
    # Once per call: a PyTorch encoder's digest hashes every weight.
    identity = encoder_identity(encoder)
    tokenizer = getattr(encoder, "tokenizer_digest", None)
    if "weights_sha256" not in identity or tokenizer is None:
        return encoder.encode(names)
    # The same weights with another tokenizer (cased, accents kept) make other vectors.
    identity["tokenizer_sha256"] = tokenizer
    store = _store_path(identity, folder or vectors_folder())
    unique = list(dict.fromkeys(names))
    vectors = np.empty((len(unique), encoder.dim), dtype=np.float32)
    found = _read(store, unique, vectors)
    if found.any() and not _agrees(encoder, [unique[i] for i in np.flatnonzero(found)], vectors[found], store):
        found[:] = False
    missing = np.flatnonzero(~found)
    # The ONNX encoder may encode names another, faster way than mentions (its names_precision).
    encode = encoder.names_encoding() if len(missing) and hasattr(encoder, "names_encoding") else encoder.encode
    # One bar over every chunk: its rate and time left are the whole build's.
    with tqdm(total=len(missing), desc="Encoding names", unit="name", disable=len(missing) < PROGRESS_MIN_TEXTS) as bar:
        for start in range(0, len(missing), _CHUNK):
            rows = missing[start : start + _CHUNK]
            chunk = [unique[i] for i in rows]
            vectors[rows] = encode(chunk)
            _write(store, chunk, vectors[rows], identity)
            bar.update(len(rows))
    if len(unique) == len(names):
        return vectors
    row_of = {name: i for i, name in enumerate(unique)}
    return vectors[[row_of[name] for name in names]]


def _store_path(identity: Dict[str, object], folder: Path) -> Path:
    key = srsly.json_dumps(identity_key(identity), sort_keys=True).encode("utf-8")
    return folder / f"{hashlib.sha256(key).hexdigest()[:24]}.sqlite"


def _read(store: Path, names: List[str], vectors: np.ndarray) -> np.ndarray:
    """Fill the rows of `vectors` whose name the store holds; which it held."""
    found = np.zeros(len(names), dtype=bool)
    try:
        if not store.is_file():
            return found
    except OSError:  # a folder this user may not read: no store, not a failed build
        return found
    row_of = {name: i for i, name in enumerate(names)}
    dim = vectors.shape[1]
    try:
        with closing(sqlite3.connect(store, timeout=_BUSY_TIMEOUT_S)) as db:
            for start in range(0, len(names), _LOOKUP_CHUNK):
                chunk = names[start : start + _LOOKUP_CHUNK]
                rows = db.execute(
                    f"SELECT name, vector FROM vectors WHERE name IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for name, blob in rows:
                    if len(blob) != dim * 4:
                        raise sqlite3.DatabaseError(f"a vector of {len(blob)} bytes where {dim} float32 belong")
                    vectors[row_of[name]] = np.frombuffer(blob, dtype=np.float32)
                    found[row_of[name]] = True
    except sqlite3.OperationalError as error:
        # Locked by another build past the timeout, or created by one a moment
        # ago and not yet given its table: nothing is wrong with the store.
        if "no such table" not in str(error):
            warnings.warn(f"{store} cannot be read now ({error}): the names are encoded", UserWarning)
        found[:] = False
    except sqlite3.DatabaseError as error:
        _discard(store, f"SQLite cannot read it ({error})")
        found[:] = False
    return found


def _agrees(encoder: Encoder, names: List[str], stored: np.ndarray, store: Path) -> bool:
    """Whether names the store answered, encoded again, come within the
    encoder's probe cosine of the vectors it holds."""
    picked = np.linspace(0, len(names) - 1, min(N_PROBES, len(names))).astype(int)
    fresh = encoder.encode([names[i] for i in picked])
    cosine = (stored[picked] * fresh).sum(1) / (
        np.linalg.norm(stored[picked], axis=1) * np.linalg.norm(fresh, axis=1) + 1e-12
    )
    if cosine.min() >= getattr(encoder, "probe_min_cosine", 0.99):
        return True
    worst = names[picked[int(cosine.argmin())]]
    _discard(store, f"its vector of {worst!r} is not this encoder's (cosine {cosine.min():.3f})")
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
