"""A saved name ranker's folder: its files, and the checks that they agree
with each other and with the encoder before a ranker trusts them."""
from pathlib import Path
from typing import List, Optional, Protocol, Sequence, Tuple

import numpy as np
import srsly

from ..errors import DictionaryError, MismatchError, SavedStateError
from ..files.manifest import MANIFEST, check_manifest, file_sha256
from ..files.storage import read_saved_json
from ..kb.details import write_details
from ..kb.dictionary import Dictionary
from ..ty import Encoder, SearchIndex
from .index_base import SPARSE_FILE
from .nil_model import NilModel
from .tfidf import SparseEncoder

# Synonyms added at search time (add_synonyms).
SYNONYMS_FILE = "synonyms.txt"
# What the vocabulary says of each concept (names as written, types, definitions).
DETAILS_FILE = "concepts.jsonl"
# The open-world NIL model, where an annotated corpus trained one (nil_model.py),
# and the corpus's mentions it learns from, so that a loaded linker can learn it again.
NIL_MODEL_FILE = "nil_model.json"
ANNOTATED_MENTIONS_FILE = "annotated_mentions.json"
# Mentions kept (a seeded sample) of larger corpora: enough for SAMPLED_MENTIONS of any vocabulary's.
MAX_ANNOTATED_MENTIONS = 20_000
# Names re-encoded at load time to prove the saved vectors came from this encoder.
_N_PROBES = 8
_PROBE_MIN_COSINE = 0.99


class SavedRanker(Protocol):
    """What the checks read of a NameRanker."""

    encoder: Encoder
    index: SearchIndex
    sparse: SparseEncoder


def read_checked_folder(path: Path) -> Tuple[dict, Dictionary]:
    """A saved ranker's index.json and dictionary, every file of the folder
    checked first (against its manifest, or, saved before manifests, the
    checksums index.json lists)."""
    meta = read_saved_json(path / "index.json", expect=dict)
    if "manifest" in meta or (path / MANIFEST).exists():
        check_manifest(path)
    else:
        check_listed_files(path, meta)
    if not isinstance(meta.get("dictionary_sha256"), str):
        raise SavedStateError(f"{path / 'index.json'}: no dictionary_sha256 naming the dictionary the index was "
                              "built for; save or build the pipeline again")
    try:
        dictionary = Dictionary.from_saved(path / "dictionary.txt", meta["dictionary_sha256"])
    except DictionaryError:
        raise MismatchError(
            f"{path / 'dictionary.txt'} is not the dictionary the index in {path} was "
            "built for; rebuild the index (python -m spacy_biosyn build)"
        ) from None
    return meta, dictionary


def check_saved_vectors(path: Path, ranker: "SavedRanker", dictionary: Dictionary, meta: dict) -> None:
    """Refuse a saved index whose vectors or tf-idf rows do not fit the
    dictionary, the tf-idf or the encoder loaded beside them: a few names,
    re-encoded, must find their saved vectors (the encoder made them)."""
    for setting in ("similarity", "pooling"):
        if meta.get(setting) != getattr(ranker.encoder, setting):
            raise MismatchError(
                f"the vectors in {path / 'index'} were made with {setting} = {meta.get(setting)!r}, "
                f"but the encoder is configured with {getattr(ranker.encoder, setting)!r}: load the "
                "pipeline with the config it was saved with, or rebuild the index"
            )
    if len(ranker.index) != len(dictionary):
        raise MismatchError(
            f"{path / 'index'} holds {len(ranker.index)} names but "
            f"{path / 'dictionary.txt'} has {len(dictionary)}"
        )
    if ranker.index.sparse_vectors.shape[1] != ranker.sparse.n_features:
        raise MismatchError(
            f"{path / 'index'} holds tf-idf rows of {ranker.index.sparse_vectors.shape[1]} features but "
            f"{path / 'tfidf.json'} makes {ranker.sparse.n_features}"
        )
    if ranker.index.dim != ranker.encoder.dim:
        raise MismatchError(
            f"{path / 'index'} holds {ranker.index.dim}-dimensional vectors but the encoder "
            f"in {path / 'encoder'} makes {ranker.encoder.dim}-dimensional ones"
        )
    probes = np.linspace(0, len(dictionary) - 1, min(_N_PROBES, len(dictionary))).astype(int)
    saved = ranker.index.reconstruct(probes)
    fresh = ranker.encoder.encode([dictionary.names[i] for i in probes])
    cosine = (saved * fresh).sum(1) / (
        np.linalg.norm(saved, axis=1) * np.linalg.norm(fresh, axis=1) + 1e-12
    )
    if cosine.min() < getattr(ranker.encoder, "probe_min_cosine", _PROBE_MIN_COSINE):
        raise MismatchError(
            f"the vectors in {path / 'index'} were not made by the encoder in "
            f"{path / 'encoder'} (cosine {cosine.min():.3f} on a re-encoded name); "
            "rebuild the index with this encoder"
        )


def write_learned(path: Path, dictionary: Dictionary, synonyms: Optional[Dictionary], nil_model: Optional[NilModel],
                  annotated_mentions: Sequence[Tuple[str, str]]) -> None:
    """What a ranker learned beyond its index (each file removed where there is none of it): the concepts' details,
    the synonyms added at search time, the NIL model and the annotated mentions it learns from."""
    write_details(path / DETAILS_FILE, dictionary.details)
    if synonyms is not None:
        synonyms.to_file(path / SYNONYMS_FILE)
    else:
        (path / SYNONYMS_FILE).unlink(missing_ok=True)
    if nil_model is not None:
        srsly.write_json(path / NIL_MODEL_FILE, nil_model.to_json())
    else:
        (path / NIL_MODEL_FILE).unlink(missing_ok=True)
    if annotated_mentions:
        srsly.write_json(path / ANNOTATED_MENTIONS_FILE, [list(pair) for pair in annotated_mentions])
    else:
        (path / ANNOTATED_MENTIONS_FILE).unlink(missing_ok=True)


def read_synonyms(folder: Path) -> Optional[Dictionary]:
    path = folder / SYNONYMS_FILE
    return Dictionary.from_file(path) if path.exists() else None


def read_nil_model(folder: Path) -> Optional[NilModel]:
    """The saved NIL model; None where saved without one (or before it)."""
    path = folder / NIL_MODEL_FILE
    return NilModel.from_json(read_saved_json(path, expect=dict), str(path)) if path.exists() else None


def read_mentions(folder: Path) -> List[Tuple[str, str]]:
    """The saved annotated mentions, [] where there is no file; a file of
    another shape, or more than MAX_ANNOTATED_MENTIONS, is refused naming it."""
    path = folder / ANNOTATED_MENTIONS_FILE
    if not path.exists():
        return []
    saved = read_saved_json(path, expect=list)
    if len(saved) > MAX_ANNOTATED_MENTIONS or not all(
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, str) for x in pair) for pair in saved):
        raise SavedStateError(f"{path}: expected at most {MAX_ANNOTATED_MENTIONS:,} [mention, ID] pairs of strings; "
                              "save or build the pipeline again")
    return [(text, cui) for text, cui in saved]


def check_listed_files(path: Path, meta: dict) -> None:
    """Saves from before manifests checksummed the tf-idf and the index
    files in index.json (the earliest the tf-idf rows alone)."""
    checksums = {"tfidf.json": meta.get("tfidf_sha256")}
    checksums.update(meta.get("index_sha256") or {f"index/{SPARSE_FILE}": meta.get("sparse_sha256")})
    for name, checksum in checksums.items():
        file = path / name
        if not file.is_file() or file_sha256(file) != checksum:
            raise MismatchError(
                f"{file} is not the file saved with {path / 'index.json'} (missing, or its checksum "
                "differs): the pipeline's files come from different saves; save or build it again"
            )
