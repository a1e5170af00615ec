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

from ..files.downloads import cache_folder
from ..ty import Encoder
from .base import encoder_identity, identity_key

# Fewer names than this are encoded directly: hashing the weights for the
# key costs about what encoding a few hundred short names does.
MIN_CACHED_NAMES = 1000
# Names re-encoded to check a store before its vectors are used.
N_PROBES = 8
# SQLite's default limit on the parameters of one statement is 999 (older builds).
_LOOKUP_CHUNK = 900


def vectors_folder() -> Path:
    return cache_folder() / "vectors"


def encode_names(encoder: Encoder, names: Sequence[str], folder: Optional[Path] = None) -> np.ndarray:
    """`encoder.encode(names)`, with the vectors of names this encoder has
    encoded before read from its store in `folder` (default
    vectors_folder()), and the others encoded and added to it."""
    digest = getattr(encoder, "weights_digest", None) if len(names) >= MIN_CACHED_NAMES else None
    if digest is None:
        return encoder.encode(names)
    store = _store_path(encoder, folder or vectors_folder())
    known = _read(store, names, encoder.dim)
    if known and not _agrees(encoder, known, store):
        known = {}
    missing = sorted({name for name in names if name not in known})
    if missing:
        fresh = encoder.encode(missing)
        _write(store, missing, fresh, encoder)
        known.update(zip(missing, fresh))
    return np.stack([known[name] for name in names]).astype(np.float32, copy=False)


def _store_path(encoder: Encoder, folder: Path) -> Path:
    key = srsly.json_dumps(identity_key(encoder_identity(encoder)), sort_keys=True).encode("utf-8")
    return folder / f"{hashlib.sha256(key).hexdigest()[:24]}.sqlite"


def _read(store: Path, names: Sequence[str], dim: int) -> Dict[str, np.ndarray]:
    if not store.is_file():
        return {}
    wanted = list(dict.fromkeys(names))
    found: Dict[str, np.ndarray] = {}
    try:
        with closing(sqlite3.connect(store, timeout=60)) as db:
            for start in range(0, len(wanted), _LOOKUP_CHUNK):
                chunk = wanted[start : start + _LOOKUP_CHUNK]
                rows = db.execute(
                    f"SELECT name, vector FROM vectors WHERE name IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
                for name, blob in rows:
                    if len(blob) != dim * 4:
                        raise sqlite3.DatabaseError(f"a vector of {len(blob)} bytes where {dim} float32 belong")
                    found[name] = np.frombuffer(blob, dtype=np.float32)
    except sqlite3.Error as error:
        _discard(store, f"SQLite cannot read it ({error})")
        return {}
    return found


def _agrees(encoder: Encoder, known: Dict[str, np.ndarray], store: Path) -> bool:
    """Whether names the store answers, encoded again, come within the
    encoder's probe cosine of the stored vectors."""
    hits: List[str] = sorted(known)
    probes = [hits[i] for i in np.linspace(0, len(hits) - 1, min(N_PROBES, len(hits))).astype(int)]
    stored = np.stack([known[name] for name in probes])
    fresh = encoder.encode(probes)
    cosine = (stored * fresh).sum(1) / (np.linalg.norm(stored, axis=1) * np.linalg.norm(fresh, axis=1) + 1e-12)
    if cosine.min() >= getattr(encoder, "probe_min_cosine", 0.99):
        return True
    _discard(store, f"its vector of {probes[int(cosine.argmin())]!r} is not this encoder's (cosine {cosine.min():.3f})")
    return False


def _write(store: Path, names: List[str], vectors: np.ndarray, encoder: Encoder) -> None:
    try:
        store.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(store, timeout=60)) as db, db:
            db.execute("CREATE TABLE IF NOT EXISTS vectors (name TEXT PRIMARY KEY, vector BLOB NOT NULL)")
            db.execute("CREATE TABLE IF NOT EXISTS encoder (identity TEXT NOT NULL)")
            if db.execute("SELECT COUNT(*) FROM encoder").fetchone()[0] == 0:
                db.execute("INSERT INTO encoder VALUES (?)", (srsly.json_dumps(encoder_identity(encoder)),))
            db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                ((name, np.ascontiguousarray(vector, dtype=np.float32).tobytes()) for name, vector in zip(names, vectors)),
            )
    except (OSError, sqlite3.Error) as error:
        warnings.warn(f"the name vectors could not be kept in {store} ({error}): the next build encodes them again", UserWarning)


def _discard(store: Path, why: str) -> None:
    warnings.warn(f"{store}: {why}; it is removed and the names are encoded again", UserWarning)
    try:
        store.unlink()
    except OSError:
        pass
