"""Which linker ranks an entity's mentions: routes as data.

`Routes.linkers` maps a key to a NameRanker (its own names, tf-idf and index):
DEFAULT for the `dictionary`'s, an entity label (casefolded: NER models
differ in case, scispaCy's emit DISEASE, the corpora Disease) for a route
of its own, such as BC5CDR's Chemical spans against a chemical vocabulary.
Every route's linker is made by `new_linker` from the default one, so all
share one encoder, search back-end and scorers, and all read lambda and
cache_size from the engine's settings; dictionary_labels is read from
there too. Every vocabulary indexed here reports each concept by the ID
its annotators used most (`id_usage`).
"""
import copy
from typing import Callable, Dict, Iterable, List, Optional, Protocol, Tuple

import numpy as np

from ..kb.dictionary import Dictionary
from ..kb.knowledge_base import KnowledgeBase
from ..search.name_ranker import NameRanker
from ..search.rank_cache import RankCache
from ..search.nil_default import NilDefault
from ..search.nil_model import NilModel
from ..search.tfidf import SparseEncoder
from ..ty import Encoder, SearchIndex

# The key of the `dictionary`'s linker; an entity label is never empty.
DEFAULT = ""


class RouteSettings(Protocol):
    """What routing reads of the engine's settings, each time it routes."""

    dictionary_labels: Optional[List[str]]


class Routes:
    """The linkers of a pipe by key: DEFAULT, and each routed label."""

    def __init__(self, default: NameRanker, settings: Callable[[], RouteSettings], *, labels: Iterable[str] = ()):
        """`default`: the dictionary's linker, not yet built, whose parts and
        settings every route shares; `settings` returns the engine's settings as they are now."""
        self._unbuilt_index = copy.deepcopy(default.index)
        self._settings = settings
        # Gold ID -> how often annotated corpora use it; empty: each vocabulary's order stands.
        self.id_usage: Dict[str, int] = {}
        # Those corpora's mentions (normalized text, gold ID), which each
        # vocabulary built from now on learns its NIL model from.
        self.annotated_mentions: List[Tuple[str, str]] = []
        self.linkers: Dict[str, NameRanker] = {DEFAULT: default}
        self.use_labels(labels)

    def new_linker(self) -> NameRanker:
        """An empty linker with the default's encoder, lambda, back-end and scorers."""
        default = self.default
        linker = NameRanker(
            default.encoder,
            copy.deepcopy(self._unbuilt_index),
            self._settings,
            concept_scorer=default.concept_scorer,
            sieve=default.sieve,
        )
        linker.annotated_mentions = self.annotated_mentions
        return linker

    @property
    def encoder(self) -> Encoder:
        return self.default.encoder

    @property
    def default(self) -> NameRanker:
        return self.linkers[DEFAULT]

    @property
    def labels(self) -> List[str]:
        """The labels with a route of their own, in the order they were added."""
        return [key for key in self.linkers if key != DEFAULT]

    def use_labels(self, labels: Iterable[str]) -> None:
        """Routes for exactly these labels: the linkers of those already
        routed are kept, the others start empty."""
        folded = [label.casefold() for label in labels]
        self.linkers = {key: self.linkers.get(key) or self.new_linker() for key in (DEFAULT, *folded)}

    def build(
        self,
        label: Optional[str],
        vocabulary: Dictionary,
        refit_sparse: bool = True,
        vectors: Optional[np.ndarray] = None,
        sparse: Optional[SparseEncoder] = None,
    ) -> None:
        """Index `vocabulary` for the spans of `label` (None: the default
        linker, rebuilt in place; `refit_sparse` False keeps its tf-idf;
        `vectors` and `sparse` as NameRanker.build takes them)."""
        vocabulary = self.with_preferred_ids(vocabulary)
        if label is None:
            self.default.annotated_mentions = self.annotated_mentions
            self.default.build(vocabulary, refit_sparse=refit_sparse, vectors=vectors, sparse=sparse)
            return
        linker = self.new_linker()
        linker.build(vocabulary)
        self.linkers[label.casefold()] = linker

    def add_synonyms(self, label: Optional[str], synonyms: Dictionary) -> None:
        """More names for the route of `label` (None: the default)."""
        self.linkers[self.key_for(label)].add_synonyms(self.with_preferred_ids(synonyms))

    def with_preferred_ids(self, dictionary: Dictionary) -> Dictionary:
        return dictionary.with_preferred_ids(self.id_usage) if self.id_usage else dictionary

    def key_for(self, label: Optional[str]) -> str:
        """The key of `label`'s route (None: the default), which must exist."""
        key = DEFAULT if label is None else label.casefold()
        if key not in self.linkers:
            raise ValueError(f"no route for the label {label!r}; routes: {self.labels}")
        return key

    def route_of(self, label: Optional[str]) -> Optional[str]:
        """The key of the linker that ranks spans of `label`: its route, else
        the default if that has names and serves the label (None: any
        label); None leaves the span unlinked."""
        if label is None:
            return DEFAULT if self.default.is_ready else None
        key = label.casefold()
        if key in self.linkers and key != DEFAULT:
            return key
        # The labels linked against the default linker; None: every label without a route.
        labels = self._settings().dictionary_labels
        if labels is not None and key not in {label.casefold() for label in labels}:
            return None
        return DEFAULT if self.default.is_ready else None

    @property
    def is_ready(self) -> bool:
        """Whether any linker has names to rank."""
        return any(linker.is_ready for linker in self.linkers.values())

    def set_encoder(self, encoder: Encoder, reencode: bool) -> None:
        """Every linker gets `encoder`; `reencode` encodes their names with it (NameRanker.set_encoder)."""
        for linker in self.linkers.values():
            linker.set_encoder(encoder, reencode)

    def clear_caches(self) -> None:
        for linker in self.linkers.values():
            linker.cache.clear()


class VocabularyView:
    """What one route links against, read-only: for reports, benchmarks and
    tests, which must not change a linker behind its engine's back."""

    def __init__(self, linker: NameRanker):
        self._linker = linker

    @property
    def dictionary(self) -> Dictionary:
        """Its names and their concepts, synonyms included."""
        return self._linker.dictionary

    @property
    def synonyms(self) -> Optional[Dictionary]:
        """The names add_synonyms merged in (None: none)."""
        return self._linker.synonyms

    @property
    def kb(self) -> KnowledgeBase:
        """What its IDs mean, as scispaCy's `linker.kb`."""
        return self._linker.kb

    @property
    def index(self) -> SearchIndex:
        """The search over its names' vectors and tf-idf rows."""
        return self._linker.index

    @property
    def sparse(self) -> SparseEncoder:
        """Its fitted char tf-idf."""
        return self._linker.sparse

    @property
    def sparse_weight(self) -> float:
        """The lambda its scores use."""
        return self._linker.sparse_weight

    @property
    def encoder(self) -> Encoder:
        """The encoder of its name vectors (every route's)."""
        return self._linker.encoder

    @property
    def nil_default(self) -> NilDefault:
        """What nil_threshold "auto" is for it (search/nil_default.py)."""
        return self._linker.nil_default

    @property
    def nil_model(self) -> Optional[NilModel]:
        """Its open-world NIL model, which "auto" uses too (search/nil_model.py); None without one."""
        return self._linker.nil_model

    @property
    def cache(self) -> RankCache:
        """The ranked strings it remembers, with its lookup and hit counts."""
        return self._linker.cache

    def score_names(self, texts, k: int):
        """Name-level S of mention strings as written (NameRanker.score_names),
        which a NIL default is derived from (search/nil_default.py)."""
        return self._linker.score_names(texts, k)
