"""The name ranker: normalized mention strings in, ranked dictionary names out.

A NameRanker owns one vocabulary's dictionary, its tf-idf and its index, and
knows nothing of spaCy: the linking engine (one ranker per route), the
evaluation and the trainer all rank through it, so they cannot disagree
about what S is (scoring.py).

Search strategies plug in around the name search: synonyms added at search
time join the index, an optional concept scorer
(strategies/concept_scorers.py) re-ranks each mention's pool of names by
concept, and an optional sieve (strategies/sieve.py) puts an accepted
synonym first.
"""
import gc
from pathlib import Path
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
import srsly
from scipy.sparse import csr_matrix, vstack

from ..encoders.vector_cache import EncodedNames, encode_names
from ..errors import MismatchError
from ..files.manifest import MANIFEST, write_manifest
from ..kb.details import read_details
from ..kb.dictionary import Dictionary, NameRows
from ..kb.knowledge_base import KnowledgeBase
from ..ty import Candidate, Encoder, RankSettings, SearchIndex
from .index import ExactIndex
from .index_base import estimated_bytes
from .nil_default import NilDefault, nil_default
from .nil_model import NilModel, SparseView, fit_nil_model, training_cases
from .rank_cache import RankCache
from .saved_ranker import (DETAILS_FILE, SYNONYMS_FILE, check_saved_vectors, read_checked_folder, read_mentions,
                           read_nil_model, read_synonyms, write_learned)
from .scoring import name_score, perfect_score, tie_order
from .tfidf import SparseEncoder



class _NamesByConcept:
    """The linker as a concept scorer sees it (ty.NamesByConcept)."""

    def __init__(self, linker: "NameRanker"):
        self._linker = linker
        self.similarity = linker.encoder.similarity
        self.sparse_weight = linker.sparse_weight

    def rows_of(self, cui: str) -> np.ndarray:
        return self._linker.dictionary.rows_by_cui[cui]

    def dense_vectors(self, rows: np.ndarray) -> np.ndarray:
        return self._linker.index.reconstruct(rows)

    def sparse_vectors(self, rows: np.ndarray) -> csr_matrix:
        return self._linker.index.sparse_vectors[rows]


class FixedSettings(NamedTuple):
    """Settings for a ranker used alone (benchmarks, tests); in a pipe the
    ranker reads its engine's LinkerSettings."""

    sparse_weight: float
    cache_size: int = 0


class NameRanker:
    def __init__(
        self,
        encoder: Encoder,
        index: SearchIndex,
        settings: Callable[[], RankSettings],
        *,
        concept_scorer: Optional[Callable] = None,
        sieve: Optional[Callable] = None,
    ):
        """`settings` returns the linker's settings as they are now: lambda
        and cache_size are read from it at every ranking, never copied."""
        self.encoder = encoder
        self.index = index
        self._settings = settings
        self.concept_scorer = concept_scorer
        self.sieve = sieve
        self.sparse = SparseEncoder()
        self.dictionary: Optional[Dictionary] = None
        # The names add_synonyms() merged in, searched alone by the sieve.
        self.synonyms: Optional[Dictionary] = None
        # Never saved; holds the main index's vectors as they are.
        self._synonym_index = ExactIndex(vector_precision="float32")
        self.cache = RankCache(settings)
        # Found on first use, for the lambda it was found with; a new
        # encoder or dictionary forgets it.
        self._nil_default: Optional[NilDefault] = None
        self._nil_default_weight: Optional[float] = None
        # An annotated corpus's mentions (normalized text, gold ID), which the
        # NIL model learns from; none: no model.
        self.annotated_mentions: Sequence[Tuple[str, str]] = ()
        # The NIL model, once trained or loaded (None: none), for the lambda it was trained with.
        self._nil_model: Optional[Tuple[Optional[NilModel], float]] = None

    @property
    def is_ready(self) -> bool:
        return self.dictionary is not None

    def _require_dictionary(self) -> None:
        if not self.is_ready:
            raise RuntimeError("the linker has no dictionary: call nlp.initialize() first")

    @property
    def kb(self) -> KnowledgeBase:
        """The concepts of the dictionary, synonyms included: `kb.cui_to_entity[cui]`."""
        self._require_dictionary()
        return KnowledgeBase(self.dictionary)

    @property
    def names_by_concept(self) -> "_NamesByConcept":
        """What a concept scorer may read of this linker (ty.NamesByConcept)."""
        return _NamesByConcept(self)

    @property
    def sparse_weight(self) -> float:
        """lambda, as the linker's settings hold it now."""
        return self._settings().sparse_weight

    @property
    def nil_default(self) -> NilDefault:
        """What nil_threshold "auto" is for this encoder, lambda and
        vocabulary (search/nil_default.py): found once per lambda, and
        saved with the linker."""
        if self._nil_default is None or self._nil_default_weight != self.sparse_weight:
            self._require_dictionary()
            self._nil_default = nil_default(self)
            self._nil_default_weight = self.sparse_weight
        return self._nil_default

    @property
    def sparse_view(self) -> SparseView:
        """The tf-idf side of S, as the NIL model reads it."""
        return SparseView(self._tfidf_rows, self.sparse_weight)

    def _tfidf_rows(self, texts: Sequence[str]) -> csr_matrix:
        return self._queries(list(texts), with_vectors=False)[1]

    @property
    def nil_model(self) -> Optional[NilModel]:
        """The open-world NIL model of this vocabulary (search/nil_model.py):
        trained once per lambda from `annotated_mentions`, where they teach
        one, and saved with the linker; None without."""
        if self._nil_model is None or self._nil_model[1] != self.sparse_weight:
            self._require_dictionary()
            model = fit_nil_model(training_cases(self, self.annotated_mentions)) if self.annotated_mentions else None
            self._nil_model = (model, self.sparse_weight)
        return self._nil_model[0]

    def _forget_nil_decisions(self) -> None:
        # What the vocabulary, encoder or tf-idf decided: found again on first use.
        self._nil_default = None
        self._nil_model = None

    def build(
        self,
        dictionary: Dictionary,
        refit_sparse: bool = True,
        vectors: Optional[np.ndarray] = None,
        sparse: Optional[SparseEncoder] = None,
        announce: Optional[Callable[[str], None]] = None,
    ) -> None:
        """Encode every name and index them. `refit_sparse=False` keeps the
        fitted tf-idf, as BioSyn does when a trained model meets a new
        dictionary (dev and test dictionaries add names to the training one);
        `sparse` is a fitted tf-idf to use as it is (the trainer's, fitted on
        the training dictionary). `vectors` are the names' dense vectors when
        the caller already has them from this encoder (the trainer does, once
        per epoch). `announce` is told the memory the index will take
        before the names are encoded."""
        if len(dictionary) == 0:
            raise ValueError("cannot build a linker over an empty dictionary")
        if vectors is not None and len(vectors) != len(dictionary):
            raise ValueError(f"{len(vectors)} vectors for {len(dictionary)} names")
        # The objects Python keeps for reuse (free lists), scattered by the
        # vocabulary's reader, held on to 0.5 GiB of memory it had otherwise
        # freed at UMLS size; a full collection empties them, so the index's
        # arrays, which Python's allocator does not serve, can use it.
        gc.collect()
        if sparse is not None:
            self.sparse = sparse
        if sparse is None and (refit_sparse or not self.sparse.is_fitted):
            sparse_rows = self.sparse.fit_transform(dictionary.names)
        else:
            sparse_rows = self.sparse.transform(dictionary.names)
        if announce is not None:
            announce(self._plan(len(dictionary), sparse_rows.nnz))
        self.index.build(self._name_vectors(dictionary.names) if vectors is None else vectors, sparse_rows)
        self.dictionary = dictionary
        self.synonyms = None
        self._forget_nil_decisions()

    def _plan(self, n_names: int, sparse_nnz: int) -> str:
        planned = getattr(self.index, "planned_bytes", None)
        kind, size = planned(n_names, self.encoder.dim, sparse_nnz) if planned else (
            type(self.index).__name__, estimated_bytes(n_names, self.encoder.dim, sparse_nnz)
        )
        return f"{n_names:,} names: the {kind} index will take about {size / 2**30:.2f} GiB; encoding them now"

    def set_encoder(self, encoder: Encoder, reencode: bool) -> None:
        """Search with another encoder from now on. `reencode`: encode every
        name with it; else the stored vectors stay, which is right only for
        the same model in another runtime (the load-time probe checks it)."""
        self.encoder = encoder
        self._forget_nil_decisions()
        if reencode and self.is_ready:
            self.index.build(self._name_vectors(self.dictionary.names), self.index.sparse_vectors)
            if self.synonyms is not None:
                self._index_synonyms()

    def _name_vectors(self, names: Sequence[str]):
        """The names' vectors from the encoder: as they are encoded, for an
        index that is filled so; else all of them."""
        encoded = EncodedNames(self.encoder, names)
        return encoded if getattr(self.index, "builds_from_chunks", False) else encoded.whole()

    def add_synonyms(self, synonyms: Dictionary) -> None:
        """Search more names, such as training mentions or a user's domain
        names, without retraining: only names new to the dictionary are
        encoded and indexed; a known name gains the synonym's CUIs."""
        if not self.is_ready:
            raise RuntimeError("add_synonyms needs a built linker: call build() first")
        if not len(synonyms):
            raise ValueError("add_synonyms: no names to add")
        merged = self.dictionary.with_synonyms(synonyms.pairs())
        new = merged.names[len(self.dictionary) :]
        if new:
            self.index.add(encode_names(self.encoder, new), self.sparse.transform(new))
        self.dictionary = merged
        self._forget_nil_decisions()
        if self.synonyms is not None:
            synonyms = self.synonyms.with_synonyms(synonyms.pairs())
        self.synonyms = synonyms
        self._index_synonyms()

    def _index_synonyms(self) -> None:
        # Vectors come from the main index: every synonym is one of its names.
        rows = [self.dictionary.row(name) for name in self.synonyms.names]
        if None in rows:
            missing = self.synonyms.names[rows.index(None)]
            raise MismatchError(f"the synonym {missing!r} is not a name of the linker's dictionary")
        rows = np.array(rows, dtype=np.int64)
        self._synonym_index.build(self.index.reconstruct(rows), self.index.sparse_vectors[rows])

    def rank(self, texts: Sequence[str], k: int, rows: Optional[NameRows] = None) -> List[List[Candidate]]:
        """The k best candidates for each normalized text, best first. Each
        distinct text is encoded once; an empty text gets no candidates.
        `rows`: the texts' rows among the names as already looked up (by
        preprocessing), for this linker's dictionary."""
        self._require_dictionary()
        self.cache.check((self.encoder, self.index, self.sparse, self.dictionary, self.synonyms, self.sparse_weight))
        ranked: Dict[str, List[Candidate]] = {"": []}
        unique = []
        for text in dict.fromkeys(t for t in texts if t):
            found = self.cache.get((text, k))
            if found is None:
                unique.append(text)
            else:
                ranked[text] = found
        if unique:
            dense_q, sparse_q = self._queries(unique, rows)
            scorer = self.concept_scorer
            pool = k if scorer is None else max(k, scorer.pool_size)
            sieved = self.sieve is not None and self.synonyms is not None
            # The scorer and the sieve work on S; without them, candidates are made on the unit scale at once.
            on_s = scorer is not None or sieved
            found = self._search(self.index, self.dictionary, dense_q, sparse_q, pool, None if on_s else unique)
            if scorer is not None:
                found = [c[:k] for c in scorer(self.names_by_concept, dense_q, sparse_q, found)]
            if sieved:
                nearest = self._search(self._synonym_index, self.synonyms, dense_q, sparse_q, 1)
                found = [self.sieve(t, n[0], c) for t, n, c in zip(unique, nearest, found)]
            if on_s:
                found = [self._on_unit_scale(c, query, text) for c, query, text in zip(found, dense_q, unique)]
            ranked.update(zip(unique, found))
            for text, candidates in zip(unique, found):
                self.cache.put((text, k), candidates)
        return [list(ranked[t]) for t in texts]

    def score_names(self, texts: Sequence[str], k: int) -> List[List[Candidate]]:
        """The k best names of each normalized text by S alone (no concept
        scorer, sieve or cache), scored on [0, 1] as `rank` scores them."""
        self._require_dictionary()
        dense_q, sparse_q = self._queries(list(texts))
        return self._search(self.index, self.dictionary, dense_q, sparse_q, k, list(texts))

    def _queries(self, texts: List[str], rows: Optional[NameRows] = None,
                 with_vectors: bool = True) -> Tuple[Optional[np.ndarray], csr_matrix]:
        """The dense vectors (unless not `with_vectors`) and tf-idf rows of
        normalized texts. A text that is one of the names already has both in
        the index (its vector as the index holds it: a fresh encoding up to
        batch noise of about 1e-6, or int16's rounding, about 1e-5 a
        component; its tf-idf row is the same exactly), so only the others
        are encoded."""
        if rows is None or rows.dictionary is not self.dictionary:
            rows = NameRows(self.dictionary)
        rows = [rows[text] for text in texts]
        known = [i for i, row in enumerate(rows) if row is not None]
        new = [i for i, row in enumerate(rows) if row is None]
        known_rows = np.array([rows[i] for i in known], dtype=np.int64)
        new_texts = [texts[i] for i in new]
        if not with_vectors:
            dense = None
        elif not self.index.holds_exact_vectors:
            dense = self.encoder.encode(texts)
        else:
            dense = np.empty((len(texts), self.index.dim), dtype=np.float32)
            dense[known] = self.index.reconstruct(known_rows)
            if new:
                dense[new] = self.encoder.encode(new_texts)
        pieces = [self.index.sparse_vectors[known_rows]] if known else []
        if new:
            pieces.append(self.sparse.transform(new_texts))
        # Rows back in the texts' order.
        order = np.argsort(np.array(known + new, dtype=np.int64), kind="stable")
        return dense, vstack(pieces, format="csr", dtype=np.float32)[order]

    def _on_unit_scale(self, candidates: Iterable[Tuple[str, Tuple, float]], query: np.ndarray, text: str) -> List[Candidate]:
        """Candidates (or their fields) with scores as users read and
        threshold them, on [0, 1] as scispaCy's and spaCy's are
        (scoring.name_score): a name written as the normalized mention
        `text` scores 1.0 exactly; the order is S's. (The sieve and concept
        scorers work on S itself.)"""
        perfect = perfect_score(query, self.sparse_weight)
        return [Candidate(name, concepts, name_score(name, text, score, perfect)) for name, concepts, score in candidates]

    def _search(self, index: SearchIndex, dictionary: Dictionary, dense_q, sparse_q, k: int,
                texts: Optional[List[str]] = None) -> List[List[Candidate]]:
        """The k best names of each query, scored by S, or on the unit scale
        given the queries' `texts` (_on_unit_scale)."""
        scores, ids = tie_order(*index.search(dense_q, sparse_q, self.sparse_weight, k))
        found = list(zip(dictionary.names.take(ids.ravel()), dictionary.concepts.take(ids.ravel()), scores.ravel().tolist()))
        width = ids.shape[1]
        rows = [found[start : start + width] for start in range(0, len(found), width)]
        if texts is None:
            return [[Candidate(*fields) for fields in row] for row in rows]
        return [self._on_unit_scale(row, query, text) for row, query, text in zip(rows, dense_q, texts)]

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """Save the state; exclude=["encoder"] when the encoder is saved by
        whoever shares it (linkers routed by entity label)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.dictionary.to_file(path / "dictionary.txt")
        self.sparse.to_disk(path / "tfidf.json")
        if "encoder" not in exclude:
            self.encoder.to_disk(path / "encoder")
        self.index.to_disk(path / "index", idf=self.sparse.idf)
        srsly.write_json(path / "index.json", {
            "n_names": len(self.index),
            "dictionary_sha256": self.dictionary.fingerprint(),
            "similarity": self.encoder.similarity,
            "pooling": self.encoder.pooling,
            "nil_default": self.nil_default.to_json(),
            # A load then refuses this folder without its manifest.
            "manifest": MANIFEST,
        })
        write_learned(path, self.dictionary, self.synonyms, self.nil_model, self.annotated_mentions)
        # Last: every file above, the index's whole (a probe re-encodes a few
        # names only, so one replaced vector would pass it), the concepts'
        # types and the saved threshold included.
        write_manifest(path)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "NameRanker":
        path = Path(path)
        meta, dictionary = read_checked_folder(path)
        self.sparse.from_disk(path / "tfidf.json")
        if "encoder" not in exclude:
            self.encoder.from_disk(path / "encoder")
        self.index.from_disk(path / "index")
        check_saved_vectors(path, self, dictionary, meta)
        self.dictionary = dictionary.with_details(read_details(path / DETAILS_FILE))
        # Saves from before it was saved find it on first use.
        self._nil_default = NilDefault.from_json(meta["nil_default"], str(path / "index.json")) if "nil_default" in meta else None
        self._nil_default_weight = self.sparse_weight
        # Saves from before it, or without a corpus, have none; one of another
        # version is learned again from the saved mentions on first use.
        self.annotated_mentions = read_mentions(path)
        model = read_nil_model(path)
        self._nil_model = None if model is None and self.annotated_mentions else (model, self.sparse_weight)
        self.synonyms = read_synonyms(path)
        if self.synonyms is not None:
            try:
                self._index_synonyms()
            except MismatchError as error:
                raise MismatchError(f"{path / SYNONYMS_FILE}: {error}") from None
        return self
