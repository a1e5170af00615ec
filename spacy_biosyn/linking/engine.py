"""The linking engine: mentions in, linked parts out, with no spaCy type.

It holds the one LinkerSettings of a linker, its routes (one NameRanker per
vocabulary, routes.py), the mention preprocessor, the re-ranker and the
abbreviation detector, and does every step between a mention and what its
span will say:

    route by label -> readings (preprocess/readings.py) -> ranked names per
    route, in one call each -> readings that tie (choice.py) -> re-ranked in
    context (strategies/reranker.py) -> the document's choice -> SpanLinks (links.py)

each step over a whole batch (link_steps.py), under each route's NIL rule
(nil_rules.py). The biosyn_linker pipe adapts it to spaCy (doc.ents in,
span attributes out); the service, the trainer, the CLI and notebooks use
it through the pipe's `engine`, or alone (`LinkingEngine.from_disk`):
`rank(texts)` and `link(texts)` take mention strings. Its state is saved
and loaded by state.py, what it is made of by engine_config.py.
"""
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Collection, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..corpora.readers import read_synonyms
from ..kb.dictionary import Dictionary, NameRows
from ..kb.knowledge_base import KnowledgeBase
from ..kb.namespaces import KNOWN_NAMESPACES, IdNamespaces
from ..named.cache import fill_named_linker
from ..preprocess.readings import MentionPreprocessor
from ..preprocess.text import read_corrections
from ..search.name_ranker import NameRanker
from ..search.tfidf import SparseEncoder
from ..strategies.type_filter import TypeFilter
from ..ty import AbbreviationDetector, Candidate, ConceptScorer, Encoder, MentionInContext, Reranker, SearchIndex, Sieve
from ..vocabularies.formats import read_vocabulary
from .choice import tied_readings
from .data_sources import DataSources, VocabularySource
from .engine_config import engine_cfg_writer, read_engine_cfg
from .annotated_corpora import id_usage_and_mentions
from .linker_settings import AUTO, KEEP, LinkerSettings, check_parts
from .links import NilRule, SpanLinks
from .link_steps import choose_in_documents, decide, read_mentions, rerank_in_context
from .mentions import MentionBatch
from .nil_rules import linking_every_span, resolved_nil_rule
from .routes import DEFAULT, Routes, VocabularyView
from .state import CfgCheck, load_state, pack_state, save_state, unpack_state


def _to_stderr(text: str) -> None:
    # stdout is the program's own (link --json): what building says goes to stderr.
    print(f"ℹ {text}", file=sys.stderr, flush=True)


class LinkingEngine:
    """One linker: its settings, vocabularies by label, preprocessing,
    scorers and saved state, and the steps from mentions to SpanLinks."""

    def __init__(
        self,
        name: str,
        settings: LinkerSettings,
        *,
        encoder: Encoder,
        index: SearchIndex,
        abbreviations: Optional[AbbreviationDetector] = None,
        sieve: Optional[Sieve] = None,
        concept_scorer: Optional[ConceptScorer] = None,
        reranker: Optional[Reranker] = None,
        sources: DataSources = DataSources(),
        stop_words: Collection[str],
    ):
        """`name` (the pipe's) leads every error. `settings` are checked by
        their model, each part against its Protocol (ty.py); `sources` are
        what initialize() reads unless it is given others, and what the
        engine reads on first use if nobody called it. `stop_words`: the
        function words of everyday English, which alone link to nothing
        (preprocess/everyday_words.py; the pipe gives spaCy's English ones)."""
        check_parts(name, {"encoder": encoder, "index": index, "sieve": sieve, "concept_scorer": concept_scorer,
                           "reranker": reranker})
        self.name = name
        self.sources = sources
        self.abbreviation_detector = abbreviations
        self._settings = settings
        # The engine's own: outside code asks the methods below. Each reads
        # the settings it needs from `settings` when it needs them.
        default = NameRanker(encoder, index, self._current_settings, concept_scorer=concept_scorer, sieve=sieve)
        self.routes = Routes(default, self._current_settings, labels=sources.routes)
        self.preprocessor = MentionPreprocessor(stop_words)
        self._reranker: Optional[Reranker] = None
        self._nil_rules: Optional[Dict[str, NilRule]] = None
        self._configured = False
        self._blocks: Dict[str, Optional[dict]] = {}  # the parts' config blocks engine.cfg read, to save again
        self.configure({}, reranker=reranker)  # sets what the settings derive: namespaces, type filter

    # -- settings: one holder (`settings`), one writer (`configure`) --

    @property
    def settings(self) -> LinkerSettings:
        """Every setting, checked; changed by `configure` alone."""
        return self._settings

    def _current_settings(self) -> LinkerSettings:
        # What routes, rankers and caches read at each use: they hold no copy.
        return self._settings

    @property
    def reranker(self) -> Optional[Reranker]:
        """The cross-encoder that re-scores the first stage (None: none); changed by `configure`."""
        return self._reranker

    def configure(
        self, changes: Dict[str, Any], *, reranker: Optional[Reranker] = KEEP, saved_state: bool = False
    ) -> None:
        """Change EDITABLE_SETTINGS (and the re-ranker, unless KEEP), checked
        as the factory checks them; nothing changes unless all are valid.
        `saved_state`: the changes are what a saved state holds (its trained
        lambda), which may change any setting. On a pipe, use
        `configure_linker`, which keeps nlp.config in agreement."""
        settings = (LinkerSettings.checked(self.name, {**self._settings.model_dump(), **changes}) if saved_state
                    else self._settings.updated(self.name, changes))
        reranker = self._reranker if reranker is KEEP else reranker
        if reranker is not None and reranker.candidates < settings.top_k:
            raise ValueError(
                f"{self.name}: the re-ranker re-scores {reranker.candidates} candidates but top_k is "
                f"{settings.top_k}: set reranker.candidates >= top_k"
            )
        # Not as the engine is made, nor for a saved state's lambda: a pipeline saved when
        # scores were S holds a threshold above 1, which its load moves onto [0, 1]; load()
        # and initialize() check it.
        if not saved_state and ("nil_threshold" in changes or self._configured):
            settings.check_threshold_scale(self.name, reranked=reranker is not None)
        type_filter = TypeFilter(settings.types, settings.exclude_types)
        self._check_type_filter(type_filter)
        with self._changing(vocabularies=False):
            self._settings = settings
            self._reranker = reranker
            self._namespaced = None if settings.id_namespaces is None else IdNamespaces(settings.id_namespaces)
            self._type_filter = type_filter
            self._configured = True

    def _check_type_filter(self, type_filter: Optional[TypeFilter] = None) -> None:
        """Refuse a type filter that every indexed vocabulary would let do
        nothing or empty every span (strategies/type_filter.py); a vocabulary not
        yet read is checked once it is."""
        type_filter = self._type_filter if type_filter is None else type_filter
        type_filter.check([(linker.dictionary, self._where(route))
                           for route, linker in self.routes.linkers.items() if linker.is_ready])

    @contextmanager
    def _changing(self, vocabularies: bool = True) -> Iterator[None]:
        """Every change of settings, parts or vocabularies runs inside this:
        what the engine derives from them (each route's resolved NIL rule)
        is forgotten first, so that a change failing midway leaves nothing
        stale; changed vocabularies then have the type filter checked."""
        self._nil_rules = None
        yield
        if vocabularies:
            self._check_type_filter()

    def _where(self, route: str) -> str:
        """The pipe, or its route, as errors name it."""
        return self.name if route == DEFAULT else f"{self.name}, the route for {route!r}"

    def score_namespaces(self) -> Optional[Dict[str, str]]:
        """The namespaces scores compare gold and predicted IDs through: the
        id_namespaces setting, else the ID systems the indexed vocabularies'
        IDs show (kb/namespaces.py recognized_namespaces: MEDIC's MESH and OMIM)."""
        if self._settings.id_namespaces is not None:
            return self._settings.id_namespaces
        if not self.sources.is_empty:
            self.ensure_ready()  # a named vocabulary is read on first use
        systems: Dict[str, str] = {}
        for linker in self.routes.linkers.values():
            if linker.is_ready:
                systems.update(linker.dictionary.id_systems or {})
        # in KNOWN_NAMESPACES' order, which IdNamespaces tries them in
        return {prefix: pattern for prefix, pattern in KNOWN_NAMESPACES.items() if prefix in systems} or None

    def nil_threshold(self, label: Optional[str] = None) -> Optional[float]:
        """The threshold the nil_threshold setting means for spans of
        `label` (None: the dictionary's): "auto" is their vocabulary's NIL
        default (search/nil_default.py), none before it has names."""
        return self.nil_rule(label).threshold

    def nil_rule(self, label: Optional[str] = None) -> NilRule:
        """What decides NIL for spans of `label` (None: the dictionary's):
        the resolved threshold and, under "auto", the vocabulary's
        open-world model where an annotated corpus trained one (search/nil_model.py)."""
        route = DEFAULT if label is None else self.routes.route_of(label)
        if route is None:
            raise ValueError(f"{self.name}: no linker serves the label {label!r}")
        return self._resolved_nil_rules()[route]

    def nil_rules(self) -> Dict[str, NilRule]:
        """Each route's NilRule, by the label it serves ("dictionary" for the dictionary's)."""
        return {("dictionary" if route == DEFAULT else route): rule for route, rule in self._resolved_nil_rules().items()}

    def _resolved_nil_rules(self) -> Dict[str, NilRule]:
        """What nil_threshold means for each route, "auto" resolved from its
        vocabulary: found once after settings, parts or vocabularies
        change (each change forgets it first, so that one failing midway
        leaves nothing stale), before the next batch is linked."""
        if self._nil_rules is None:
            reranked = self._reranker is not None
            self._nil_rules = {route: resolved_nil_rule(self._settings.nil_threshold, reranked, linker)
                               for route, linker in self.routes.linkers.items()}
        return self._nil_rules

    # -- parts and data --

    @property
    def encoder(self) -> Encoder:
        """The encoder every route shares; changed by `set_encoder`."""
        return self.routes.encoder

    def set_encoder(self, encoder: Encoder, reencode: bool) -> None:
        """Every route ranks with `encoder`; `reencode` encodes their names
        with it, else the stored vectors stay (the same model in another runtime)."""
        with self._changing(vocabularies=False):
            self.routes.set_encoder(encoder, reencode)

    def initialize(self, *, refresh: bool = False, announce: Callable[[str], None] = _to_stderr, **sources) -> None:
        """Load the encoder (and re-ranker) and index the dictionary, or the
        named vocabulary from its cache, and each route's vocabulary:
        `sources` (DataSources' fields) replace the engine's own. `refresh`
        fetches a named vocabulary's files again; `announce` is told what
        fetching and indexing a named vocabulary does."""
        with self._changing():
            self._settings.check_threshold_scale(self.name, reranked=self._reranker is not None)
            given = self.sources.overridden(self.name, **sources)
            if given.is_empty:
                raise ValueError(
                    f"{self.name}: no dictionary to index. Set it in the component's config "
                    "(add_pipe(..., config={'linker_name': NAME}) or {'dictionary': PATH}) or in "
                    f"[initialize.components.{self.name}] dictionary = PATH"
                )
            if not self.encoder.is_loaded:
                self.encoder.load()
            if self._reranker is not None and not self._reranker.is_loaded:
                self._reranker.load()
            self.learn_preferred_ids(given.preferred_ids_from)
            if given.dictionary is not None:
                self.routes.build(None, read_vocabulary(given.dictionary))
            elif given.linker_name is not None:
                self.routes.default.annotated_mentions = self.routes.annotated_mentions
                fill_named_linker(self.routes.default, given.linker_name, id_usage=self.routes.id_usage,
                                  refresh=refresh, announce=announce)
            if given.dictionary is not None or given.linker_name is not None:
                for source in given.synonyms:
                    self.add_synonyms(source)
            # Routes the config named but initialize() replaced would stay empty.
            self.routes.use_labels(label for label in self.routes.labels if self.routes.linkers[label].is_ready)
            for label, route_source in given.routes.items():
                self.add_route(label, route_source)
            if given.corrections is not None:
                self.preprocessor.corrections = read_corrections(given.corrections)
        self._warn_where_every_span_links()

    def _warn_where_every_span_links(self) -> None:
        """Say so once where "auto" finds no threshold for a vocabulary (too
        few concepts with two names to derive one): it would link every span."""
        if self._settings.nil_threshold != AUTO or self._reranker is not None:
            return
        for route, rule in linking_every_span(self._resolved_nil_rules(), self.routes.linkers):
            warnings.warn(
                f"{self._where(route)}: nil_threshold \"auto\" found no threshold ({rule.source}), so every span "
                "it serves gets an ID, however poorly its best name scores; set nil_threshold to a number "
                "(python -m spacy_biosyn tune-nil chooses one on annotated text)", stacklevel=2)

    @property
    def is_ready(self) -> bool:
        """Whether any vocabulary is indexed."""
        return self.routes.is_ready

    def ensure_ready(self) -> None:
        """Read the configured data now if initialize() has not."""
        if self.routes.is_ready:
            return
        if self.sources.is_empty:
            raise RuntimeError(
                f"{self.name} has no dictionary: give linker_name or dictionary in its config, or call "
                f"nlp.get_pipe({self.name!r}).initialize(dictionary=...)"
            )
        self.initialize()

    def set_dictionary(
        self,
        dictionary: Union[Dictionary, VocabularySource, Path],
        *,
        sparse: Optional[SparseEncoder] = None,
        vectors: Optional[np.ndarray] = None,
        refit_sparse: bool = False,
    ) -> None:
        """Re-index against another dictionary, keeping encoder and tf-idf:
        BioSyn scores dev against dev_dictionary.txt with the trained model
        (`refit_sparse` fits a tf-idf on these names instead). A trainer
        gives its own fitted tf-idf (`sparse`) and the names' `vectors` it
        has just encoded with this encoder."""
        with self._changing():
            if not isinstance(dictionary, Dictionary):
                dictionary = read_vocabulary(dictionary)
            self.routes.build(None, dictionary, refit_sparse=refit_sparse, sparse=sparse, vectors=vectors)

    def add_route(self, label: str, vocabulary: Union[Dictionary, VocabularySource, Path]) -> None:
        """Link spans of `label` (any case) against their own vocabulary from
        now on: a Dictionary, a vocabulary reader, a `CUI||name` file or a
        folder of `.concept` files whose mentions become the names (BC5CDR's
        training chemicals, where no chemical vocabulary is at hand). The
        encoder is shared; the route is saved with the engine."""
        with self._changing():
            if not isinstance(label, str) or not label.strip():
                raise ValueError(f"{self.name}: a route needs an entity label, got {label!r}")
            if callable(vocabulary):
                vocabulary = vocabulary()
            elif not isinstance(vocabulary, Dictionary):
                vocabulary = read_synonyms(vocabulary)
            if not len(vocabulary):
                raise ValueError(f"{self.name}: the vocabulary for the route {label!r} has no names")
            self.routes.build(label, vocabulary)

    def add_synonyms(self, synonyms: Union[Dictionary, str, Path], label: Optional[str] = None) -> None:
        """Teach more names without retraining: a Dictionary, a `CUI||name`
        file or a folder of training `.concept` files, for the dictionary or
        the route of `label`. They are saved, and searched first when the
        sieve is on."""
        with self._changing():
            try:
                self.routes.key_for(label)  # before reading the file
            except ValueError as e:
                raise ValueError(f"{self.name}: {e}") from None
            if not isinstance(synonyms, Dictionary):
                synonyms = read_synonyms(synonyms)
            self.routes.add_synonyms(label, synonyms)

    def learn_preferred_ids(self, corpora: Iterable[Union[str, Path]]) -> None:
        """Learn from annotated corpora (folders of .concept files, PubTator
        files): vocabularies indexed from now on report each concept's most
        used gold ID first, and learn their open-world NIL model from the
        corpora's mentions of one concept each (search/nil_model.py). No
        corpora: the vocabulary's order stands, and no model is learned."""
        usage, mentions = id_usage_and_mentions(corpora)
        self.routes.id_usage = usage
        self.routes.annotated_mentions = mentions

    def vocabulary(self, label: Optional[str] = None) -> VocabularyView:
        """What spans of `label` (None: the dictionary's) are linked against, read-only."""
        key = self.routes.route_of(label)
        if key is None:
            raise ValueError(f"{self.name}: no linker serves the label {label!r}" if label is not None
                             else f"{self.name} has no dictionary: its routes serve {self.routes.labels}")
        return VocabularyView(self.routes.linkers[key])

    def kb(self, label: Optional[str] = None) -> KnowledgeBase:
        """What the IDs of `label`'s vocabulary (None: the dictionary) mean,
        as scispaCy's `linker.kb`."""
        if label is None:
            self.ensure_ready()
        return self.vocabulary(label).kb

    def clear_caches(self) -> None:
        """Forget the ranked strings every route remembers, and their hit counts."""
        self.routes.clear_caches()

    # -- ranking mention strings --

    @property
    def pool_size(self) -> int:
        """How many names the first stage ranks: the re-ranker's candidates;
        top_k where a concept scorer already gives one name per concept;
        else enough names (names_searched) to fill kb_ents with top_k concepts."""
        if self._reranker is not None:
            return self._reranker.candidates
        if self.routes.default.concept_scorer is not None:
            return self._settings.top_k
        return max(self._settings.top_k, self._settings.names_searched)

    def first_stage(self, texts: Sequence[str], k: Optional[int] = None) -> Tuple[List[str], List[List[Candidate]]]:
        """Mention strings normalized and spell-corrected as a span's parts
        are (no abbreviations or splitting: those need a document), and the
        `k` best names of each by S (default: the pool the re-ranker
        re-scores, else top_k), before any re-ranking."""
        texts = self._mention_strings(texts, "first_stage")
        self.ensure_ready()
        cleaned = [self.preprocessor.clean(t) for t in texts]
        return cleaned, self._ranked_by(DEFAULT, cleaned, self.pool_size if k is None else k)

    def rank(self, texts: Sequence[str], contexts: Optional[Sequence[MentionInContext]] = None) -> List[List[Candidate]]:
        """The top_k names for mention strings (`first_stage`). With a
        re-ranker, `contexts` (one per text) are what it reads; without them
        it reads the mention alone."""
        texts = self._mention_strings(texts, "rank")
        cleaned, ranked = self.first_stage(texts)
        if self._reranker is not None:
            if contexts is None:
                contexts = [MentionInContext(t) for t in cleaned]
            elif len(contexts) != len(texts):
                raise ValueError(f"{self.name}: {len(texts)} texts but {len(contexts)} contexts")
            ranked = self._reranker.rerank([c._replace(mention=t) for c, t in zip(contexts, cleaned)], ranked)
        return [candidates[: self._settings.top_k] for candidates in ranked]

    def _mention_strings(self, texts: Sequence[str], method: str) -> List[str]:
        """`texts` as a list, refused where it is not strings: a str is a
        sequence too, whose characters would each be linked as a mention."""
        strings = [] if isinstance(texts, str) else list(texts)
        if isinstance(texts, str) or not all(isinstance(text, str) for text in strings):
            got = f"the str {texts!r:.60}" if isinstance(texts, str) else f"{type(texts).__name__} {texts!r:.60}"
            raise TypeError(f"{self.name}: {method}() takes a list of mention strings, got {got}: "
                            f"write {method}([...]) with one string per mention")
        return strings

    def _ranked_by(self, route: str, texts: List[str], k: int, rows: Optional[NameRows] = None) -> List[List[Candidate]]:
        """The k best names of each text by the route's linker, without the
        concepts the type filter drops."""
        linker = self.routes.linkers[route]
        return self._type_filter(linker.rank(texts, k, rows), linker.dictionary, self._where(route))

    # -- linking mentions --

    def link(self, texts: Sequence[str], label: Optional[str] = None) -> List[Optional[SpanLinks]]:
        """Mention strings linked as spans of `label` (None: the
        dictionary's) would be, each alone: read, split and ranked, under
        the NIL threshold; None where no linker serves the label."""
        texts = self._mention_strings(texts, "link")
        return [m.links for m in self.link_batch(MentionBatch.of_strings(texts, label)).mentions]

    def link_batch(self, batch: MentionBatch) -> MentionBatch:
        """Decide each mention: fill in its route, readings, chosen parts
        and `links`, what its span says under the NIL threshold
        (link_steps.py). The strings of all readings of all documents are
        ranked in one call per route (the dictionary's, or that of the
        mention's label)."""
        self.ensure_ready()
        settings = self._settings
        # Per route, each string's row among the names, looked up once for
        # preprocessing's question (is it a name?) and the ranking alike.
        name_rows = {key: NameRows(linker.dictionary) for key, linker in self.routes.linkers.items() if linker.is_ready}
        wanted = read_mentions(batch, self.routes, name_rows, self.preprocessor, settings.split_composites)
        ranked = {route: dict(zip(texts, self._ranked_by(route, list(texts), self.pool_size, name_rows[route])))
                  for route, texts in wanted.items()}
        routed = batch.routed
        for mention in routed:
            mention.tied = tied_readings(mention.readings, ranked[mention.route])
        if self._reranker is not None:
            rerank_in_context(self._reranker, batch.texts, routed)
        choose_in_documents(batch, settings.resolve_shared_names, self.routes.id_usage)
        decide(routed, self._resolved_nil_rules(), settings.top_k, self._namespaced)
        return batch

    # -- state --

    def to_disk(
        self, path: Union[str, Path], exclude: Iterable[str] = (), *, parts: Optional[Dict[str, Any]] = None,
        record: Optional[Dict[str, Any]] = None,
    ) -> None:
        """Save all but the `exclude`d fields (state.py: cfg, encoder, linker,
        routes, corrections, id_usage, reranker) into `path`, replaced whole,
        with engine.cfg (engine_config.py), so that `LinkingEngine.from_disk`
        opens it without spaCy. `parts`: config blocks that name its parts
        (a pipe gives its own block); an engine opened by from_disk knows
        its own, and an encoder or re-ranker names itself. Without a block
        for every part it has, the save holds no engine.cfg where parts are
        given (a pipe's save), and is refused otherwise. `record`: what the
        saver keeps in the state's cfg, to check on load (`load`'s `check`)."""
        self._ready_to_save()
        describe = engine_cfg_writer(self.name, self._settings.model_dump(), self._parts(), parts, self._blocks,
                                     self.preprocessor.stop_words)
        save_state(self, path, exclude, record, describe=describe)

    @classmethod
    def from_disk(cls, path: Union[str, Path]) -> "LinkingEngine":
        """The engine `to_disk` saved (or the linker folder of a saved
        pipeline), made from its engine.cfg and loaded, without spaCy."""
        path = Path(path)
        saved = read_engine_cfg(path)
        engine = cls(saved.name, LinkerSettings.checked(saved.name, saved.settings), **saved.parts,
                     stop_words=saved.stop_words)
        engine._blocks = saved.blocks
        engine.load(path)
        return engine

    def _parts(self) -> Dict[str, Any]:
        """Each part (PARTS) the engine now has, or None."""
        default = self.routes.default
        return {"encoder": self.encoder, "index": default.index, "abbreviations": self.abbreviation_detector,
                "sieve": default.sieve, "concept_scorer": default.concept_scorer, "reranker": self._reranker}

    def load(
        self, path: Union[str, Path], exclude: Iterable[str] = (), check: Optional[CfgCheck] = None,
    ) -> Dict[str, Any]:
        """Read what `to_disk` wrote into this engine; returns the settings loading changed
        (the saved lambda, or a threshold of an older scale), which a pipe
        writes into its config. `check(folder, cfg)` runs before any state
        is read, and raises to refuse the save (a pipe checks its config.cfg)."""
        with self._changing():
            changed = load_state(self, path, exclude, check)
            # After a threshold saved on the old scale was moved onto [0, 1].
            self._settings.check_threshold_scale(self.name, reranked=self._reranker is not None)
        return changed

    def to_bytes(self, exclude: Iterable[str] = ()) -> bytes:
        """The files `to_disk` writes, packed with msgpack (no pickle)."""
        self._ready_to_save()
        return pack_state(self, exclude)

    def from_bytes(
        self, data: bytes, exclude: Iterable[str] = (), check: Optional[CfgCheck] = None
    ) -> Dict[str, Any]:
        """Read what `to_bytes` packed; returns the settings it changed, as `load` does."""
        with self._changing():
            changed = unpack_state(self, data, exclude, check)
            # After a threshold saved on the old scale was moved onto [0, 1].
            self._settings.check_threshold_scale(self.name, reranked=self._reranker is not None)
        return changed

    def _ready_to_save(self) -> None:
        # A named vocabulary not yet used is read first: the save holds its
        # index, and loading it needs neither the cache nor the network.
        if self.sources.linker_name is not None:
            self.ensure_ready()
