"""Scoring: normalized mention strings in, ranked dictionary names out.

The linker owns the dictionary, both encoders and the index, and knows nothing
of spaCy: the pipeline component, the evaluation and (later) the trainer all
rank through it, so they cannot disagree about what S is.
"""
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import srsly

from .dense import TransformerEncoder
from .dictionary import Dictionary
from .index import SearchIndex
from .sparse import SparseEncoder

# Names re-encoded at load time to prove the saved vectors came from this encoder.
_N_PROBES = 8
_PROBE_MIN_COSINE = 0.99


class Candidate(NamedTuple):
    """One ranked dictionary name. A NamedTuple, so Docs holding candidates
    serialize with DocBin like any other extension value."""

    name: str
    cuis: Tuple[str, ...]
    score: float


class LinkedPart(NamedTuple):
    """One linked part of a mention (a composite has several): the
    normalized string that was ranked and its candidates, best first."""

    text: str
    candidates: List[Candidate]


class MismatchError(ValueError):
    """Saved vectors that do not belong to the saved dictionary or encoder."""


class Linker:
    def __init__(self, encoder: TransformerEncoder, index: SearchIndex, sparse_weight: float):
        self.encoder = encoder
        self.index = index
        self.sparse_weight = sparse_weight
        self.sparse = SparseEncoder()
        self.dictionary: Optional[Dictionary] = None

    @property
    def is_ready(self) -> bool:
        return self.dictionary is not None

    def build(
        self,
        dictionary: Dictionary,
        refit_sparse: bool = True,
        vectors: Optional[np.ndarray] = None,
    ) -> None:
        """Encode every name and index them. `refit_sparse=False` keeps the
        fitted tf-idf, as BioSyn does when a trained model meets a new
        dictionary (dev and test dictionaries add names to the training one).
        `vectors` are the names' dense vectors when the caller already has
        them from this encoder (the trainer does, once per epoch)."""
        if len(dictionary) == 0:
            raise ValueError("cannot build a linker over an empty dictionary")
        if vectors is not None and len(vectors) != len(dictionary):
            raise ValueError(f"{len(vectors)} vectors for {len(dictionary)} names")
        if refit_sparse or not self.sparse.is_fitted:
            self.sparse.fit(dictionary.names)
        if vectors is None:
            vectors = self.encoder.encode(dictionary.names)
        self.index.build(vectors, self.sparse.transform(dictionary.names))
        self.dictionary = dictionary

    def rank(self, texts: Sequence[str], k: int) -> List[List[Candidate]]:
        """The k best names for each normalized text, best first. Each
        distinct text is encoded once; an empty text gets no candidates."""
        if not self.is_ready:
            raise RuntimeError("the linker has no dictionary: call nlp.initialize() first")
        unique = list(dict.fromkeys(t for t in texts if t))
        ranked: Dict[str, List[Candidate]] = {"": []}
        if unique:
            scores, ids = self.index.search(
                self.encoder.encode(unique),
                self.sparse.transform(unique),
                self.sparse_weight,
                k,
            )
            names, cuis = self.dictionary.names, self.dictionary.cuis
            for text, row_scores, row_ids in zip(unique, scores.tolist(), ids.tolist()):
                ranked[text] = [
                    Candidate(names[i], cuis[i], s) for s, i in zip(row_scores, row_ids)
                ]
        return [ranked[t] for t in texts]

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.dictionary.to_file(path / "dictionary.txt")
        self.sparse.to_disk(path / "tfidf.json")
        self.encoder.to_disk(path / "encoder")
        self.index.to_disk(path / "index")
        srsly.write_json(
            path / "index.json",
            {"n_names": len(self.index), "dictionary_sha256": self.dictionary.fingerprint()},
        )

    def from_disk(self, path: Union[str, Path]) -> "Linker":
        path = Path(path)
        dictionary = Dictionary.from_file(path / "dictionary.txt")
        self.sparse.from_disk(path / "tfidf.json")
        self.encoder.from_disk(path / "encoder")
        self.index.from_disk(path / "index")
        self._check_saved_state(path, dictionary, srsly.read_json(path / "index.json"))
        self.dictionary = dictionary
        return self

    def _check_saved_state(self, path: Path, dictionary: Dictionary, meta: dict) -> None:
        if meta["dictionary_sha256"] != dictionary.fingerprint():
            raise MismatchError(
                f"{path / 'dictionary.txt'} is not the dictionary the index in {path} was "
                "built for; rebuild the index (python -m spacy_biosyn build)"
            )
        if len(self.index) != len(dictionary):
            raise MismatchError(
                f"{path / 'index'} holds {len(self.index)} names but "
                f"{path / 'dictionary.txt'} has {len(dictionary)}"
            )
        if self.index.dim != self.encoder.dim:
            raise MismatchError(
                f"{path / 'index'} holds {self.index.dim}-dimensional vectors but the encoder "
                f"in {path / 'encoder'} makes {self.encoder.dim}-dimensional ones"
            )
        probes = np.linspace(0, len(dictionary) - 1, min(_N_PROBES, len(dictionary))).astype(int)
        saved = self.index.reconstruct(probes)
        fresh = self.encoder.encode([dictionary.names[i] for i in probes])
        cosine = (saved * fresh).sum(1) / (
            np.linalg.norm(saved, axis=1) * np.linalg.norm(fresh, axis=1) + 1e-12
        )
        if cosine.min() < _PROBE_MIN_COSINE:
            raise MismatchError(
                f"the vectors in {path / 'index'} were not made by the encoder in "
                f"{path / 'encoder'} (cosine {cosine.min():.3f} on a re-encoded name); "
                "rebuild the index with this encoder"
            )
