"""The `biosyn_linker` pipe: doc.ents in, span._.cui / kb_ents / candidates out.

Per doc: abbreviations are detected over the whole text
(`doc._.biosyn_abbreviations`: scispaCy's AbbreviationDetector owns
`doc._.abbreviations`); per entity: the mention is preprocessed into readings
(preprocess/readings.py), every reading's parts are ranked by the linker of the
entity's label (routes.py: its route, matched case-insensitively, else the
`dictionary`'s), and the best-scoring reading is kept (`span._.parts`).
With a `reranker`, each part's candidates are then re-scored by a
cross-encoder that reads the span in its context (reranker.py).

What users read is the concept: `span._.cui` is the best concept's preferred
ID, mirrored in `span.kb_id_` for displaCy and spaCy's scorers, and
`span._.concept_ids` holds all its IDs.

Heavy state (encoder weights, name vectors, tf-idf) is built by
`initialize()` (which the pipe calls itself on its first doc if nobody has:
adding it to a trained pipeline must not re-initialize the rest) or read by
`from_disk()`, never when the pipe is constructed: `spacy.load` of a
packaged pipeline must not need the original dictionary path, the cache of
named vocabularies or a model hub.
"""
import sys
import warnings
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import minibatch

from ..accuracy import UNSCORED_CUIS, link_scores
from ..checks import takes_arguments
from ..corpus import read_id_usage, read_synonyms
from ..encoders.base import DEFAULT_ENCODER_NAME, encoder_label
from ..kb.catalogue import named_vocabulary
from ..kb.dictionary import Dictionary, NameRows
from ..kb.knowledge_base import KnowledgeBase
from ..kb.linker import Linker
from ..kb.named import fill_named_linker
from ..kb.namespaces import IdNamespaces
from ..kb.reranker import MentionInContext
from ..kb.sparse import SparseEncoder
from ..kb.type_filter import TypeFilter
from ..kb.vocabularies import VocabularyReader, read_vocabulary
from ..names import NIL, PIPE_NAME
from ..parts import AB3P, SIZED_INDEX, TRANSFORMER_ENCODER
from ..preprocess.readings import MentionPreprocessor, long_forms_by_short_form
from ..preprocess.text import read_corrections
from ..ty import (
    Abbreviation,
    AbbreviationDetector,
    Candidate,
    ConceptScorer,
    Encoder,
    LinkedPart,
    Reranker,
    SearchIndex,
    Sieve,
)
from .annotate import annotate_span, chosen_in_document, tied_readings
from .extensions import doc_abbreviations, register_extensions
from .routes import DEFAULT, Routes, casefolded_routes
from .settings import (
    AUTO, KEEP, BoundSetting, LinkerSettings, RefusedName, Setting, change_setting, check_parts, from_scispacy,
    remember_pipeline,
)
from .state import pack_state, read_state, unpack_state, write_state

register_extensions()

# A path, read as a BioSyn `CUI||name` file, or a registered vocabulary reader.
VocabularySource = Union[str, VocabularyReader]


class DocLinks(NamedTuple):
    """What `predict` found for one doc."""

    abbreviations: List[Abbreviation]
    # Per entity, the parts of its best reading; None where no linker serves its label.
    entities: List[Optional[List[LinkedPart]]]
    # The doc's entities as predict read them: each read of doc.ents walks
    # every token, so the later steps take these instead.
    spans: Tuple[Span, ...]
    # Per entity, the key of the route that linked it (None: none serves its label).
    routes: List[Optional[str]]


@Language.factory(
    PIPE_NAME,
    default_config={
        # A vocabulary of the catalogue (kb/catalogue.py: umls, mesh, rxnorm,
        # go, hpo as scispaCy's linker_name; medic, ctd-chemicals, mondo,
        # mesh-current from their publishers): fetched, encoded and indexed on
        # first use and cached, so the pipe links with no initialize().
        "linker_name": None,
        # A BioSyn `CUI||name` path or a vocabulary reader block
        # ({"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": ...}).
        "dictionary": None,
        # Entity label (any case) -> vocabulary for spans of that label (Chemical
        # spans against a chemical one): a path or reader block as for `dictionary`,
        # or a folder of .concept files whose mentions are the names. Other
        # labels use `dictionary`.
        "routes": {},
        # `CUI||name` files or folders of training .concept files whose names
        # initialize() adds to the dictionary (saved with the pipeline).
        "synonyms": [],
        # Annotated corpora (.concept folders, PubTator files) whose gold IDs
        # decide which of a concept's IDs span._.cui reports: the one its
        # annotators used most (read by initialize(), saved with the pipeline).
        "preferred_ids_from": [],
        # A `misspelling||correction` file such as BioSyn's ncbi-spell-check.txt,
        # read by initialize() and saved with the pipeline.
        "corrections": None,
        "encoder": {"@misc": TRANSFORMER_ENCODER, "name": DEFAULT_ENCODER_NAME},
        # Exact search, or faiss's from a million names on (kb/sized_index.py).
        "index": {"@misc": SIZED_INDEX},
        # null turns abbreviation expansion off
        "abbreviations": {"@misc": AB3P},
        # Synonyms first (spacy_biosyn.Sieve.v1); null searches all names alike.
        "sieve": None,
        # Concepts ranked from their names' scores (spacy_biosyn.AliasCountReranker.v1
        # or spacy_biosyn.ConceptCentroids.v1); null ranks names.
        "concept_scorer": None,
        # A cross-encoder that re-scores the first stage's best names with the
        # mention's context (spacy_biosyn.CrossEncoderReranker.v1, trained by
        # `spacy_biosyn train-reranker`); null keeps the first stage's ranking.
        "reranker": None,
        # The settings: their defaults and meaning are in settings.py.
        **LinkerSettings().model_dump(),
    },
    requires=["doc.ents"],
    assigns=[
        "token.ent_kb_id",
        "doc._.biosyn_abbreviations",
        "span._.cui",
        "span._.concept_ids",
        "span._.kb_ents",
        "span._.candidates",
        "span._.parts",
    ],
    default_score_weights={"link_cui_acc": 1.0, "link_acc_1": 0.0, "link_acc_5": 0.0, "nel_micro_f": 0.0},
)
def make_biosyn_linker(
    nlp: Language,
    name: str,
    linker_name: Optional[str],
    dictionary: Optional[VocabularySource],
    routes: Dict[str, VocabularySource],
    synonyms: List[str],
    preferred_ids_from: List[str],
    corrections: Optional[str],
    encoder: Union[str, Encoder],
    index: SearchIndex,
    abbreviations: Optional[AbbreviationDetector],
    sieve: Optional[Sieve],
    concept_scorer: Optional[ConceptScorer],
    reranker: Optional[Reranker],
    # LinkerSettings' fields, typed loosely here: the model checks them strictly.
    sparse_weight: float,
    top_k: int,
    names_searched: int,
    split_composites: bool,
    dictionary_labels: Optional[List[str]],
    nil_threshold: Optional[Union[float, str]],
    nil_threshold_encoder: Optional[str],
    types: Optional[Union[List[str], str]],
    exclude_types: Union[List[str], str, None],
    drop_nil: bool,
    resolve_shared_names: bool,
    cache_size: int,
    set_kb_id: bool,
    id_namespaces: Optional[Dict[str, str]],
    # scispaCy's names for settings (settings.from_scispacy); null unless given.
    resolve_abbreviations: Optional[bool] = None,
    k: Optional[int] = None,
    max_entities_per_mention: Optional[int] = None,
    threshold: Optional[float] = None,
    filter_for_definitions: Optional[bool] = None,
) -> "BiosynLinker":
    given = from_scispacy(name, locals())
    settings = LinkerSettings.checked(name, given)
    abbreviations = given["abbreviations"]
    if isinstance(encoder, str):
        from ..encoders.transformer import TransformerEncoder

        encoder = TransformerEncoder(encoder)
    pipe = BiosynLinker(
        nlp.vocab,
        name,
        settings,
        encoder=encoder,
        index=index,
        abbreviations=abbreviations,
        sieve=sieve,
        concept_scorer=concept_scorer,
        reranker=reranker,
        linker_name=linker_name,
        dictionary=dictionary,
        routes=routes,
        synonyms=synonyms,
        preferred_ids_from=preferred_ids_from,
        corrections=corrections,
    )
    _warn_if_threshold_of_another_encoder(name, pipe.nil_threshold, nil_threshold_encoder, encoder)
    remember_pipeline(pipe, nlp)
    return pipe


def _to_stderr(text: str) -> None:
    # stdout is the program's own (link --json): what building says goes to stderr.
    print(f"ℹ {text}", file=sys.stderr, flush=True)


def _warn_if_threshold_of_another_encoder(
    name: str, threshold: Optional[float], chosen_with: Optional[str], encoder: Encoder
) -> None:
    if threshold is None or chosen_with is None or Path(str(chosen_with)).name == encoder_label(encoder):
        return
    warnings.warn(
        f"{name}: nil_threshold {threshold} was chosen with the encoder {chosen_with!r}, but this pipe encodes with "
        f"{encoder_label(encoder)!r}, whose scores lie on another scale: spans would be left without an ID, or "
        "given one, by a threshold that means nothing here. Choose one on dev abstracts for this encoder "
        "(python -m spacy_biosyn tune-nil), or set nil_threshold and nil_threshold_encoder to null",
        UserWarning,
        stacklevel=2,
    )


class BiosynLinker(Pipe):
    # Editable settings as attributes: set, they are saved with the pipeline.
    top_k = Setting()
    names_searched = Setting()
    nil_threshold_encoder = Setting()
    types = Setting()
    exclude_types = Setting()
    drop_nil = Setting()
    resolve_shared_names = Setting()
    cache_size = Setting()
    set_kb_id = Setting()
    id_namespaces = Setting()
    # scispaCy's names for them
    k = Setting("names_searched")
    max_entities_per_mention = Setting("top_k")
    # Bound to the saved state, or with no equivalent: refused when assigned.
    sparse_weight = BoundSetting()
    split_composites = BoundSetting()
    dictionary_labels = BoundSetting()
    threshold = RefusedName()
    filter_for_definitions = RefusedName()
    resolve_abbreviations = RefusedName()

    def __init__(
        self,
        vocab,
        name: str,
        settings: LinkerSettings,
        *,
        encoder: Encoder,
        index: SearchIndex,
        abbreviations: Optional[AbbreviationDetector] = None,
        sieve: Optional[Sieve] = None,
        concept_scorer: Optional[ConceptScorer] = None,
        reranker: Optional[Reranker] = None,
        linker_name: Optional[str] = None,
        dictionary: Optional[Union[VocabularySource, Path]] = None,
        routes: Optional[Dict[str, Union[VocabularySource, Path]]] = None,
        synonyms: Sequence[Union[str, Path]] = (),
        preferred_ids_from: Sequence[Union[str, Path]] = (),
        corrections: Optional[Union[str, Path]] = None,
    ):
        """`settings` are checked by their model; each part against its
        Protocol (ty.py). The data sources (a named vocabulary, or a
        dictionary and routes) are what initialize() reads unless it is
        given others; a pipe that has not read them reads them on first use."""
        check_parts(name, {"encoder": encoder, "index": index, "sieve": sieve, "concept_scorer": concept_scorer,
                           "reranker": reranker})
        # A class's instances all have __call__ on their type: the detector is checked by its signature.
        if abbreviations is not None and not takes_arguments(abbreviations, 1):
            raise ValueError(
                f"{name}: abbreviations must be a detector called on a doc's text, such as spacy_biosyn.Ab3P.v1 "
                "or spacy_biosyn.SchwartzHearst.v1, spacy_biosyn.ScispacyAbbreviations.v1 (the pairs of scispaCy's "
                f"abbreviation_detector), or null; got {type(abbreviations).__name__}"
            )
        if linker_name is not None:
            try:
                named_vocabulary(linker_name)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
            if dictionary is not None:
                raise ValueError(f"{name}: give linker_name or dictionary, not both")
        self.vocab = vocab
        self.name = name
        self.settings = settings
        self.linker_name = linker_name
        self.dictionary_path = dictionary
        self.route_paths = casefolded_routes(name, routes or {})
        self.corrections_path = corrections
        self.synonym_paths = list(synonyms)
        self.id_usage_paths = list(preferred_ids_from)
        default = Linker(encoder, index, settings.sparse_weight, concept_scorer=concept_scorer, sieve=sieve,
                         cache_size=settings.cache_size)
        self.routes = Routes(default, labels=self.route_paths, dictionary_labels=settings.dictionary_labels)
        self.abbreviation_detector = abbreviations
        self.preprocessor = MentionPreprocessor(settings.split_composites)
        self.reranker = None
        self.configure({}, reranker=reranker)  # sets what the settings derive: namespaces, cache sizes

    def configure(self, changes: Dict[str, object], *, reranker: Optional[Reranker] = KEEP) -> None:
        """Change EDITABLE_SETTINGS (and the re-ranker, unless KEEP) of the
        built pipe, checked as the factory checks them; nothing changes
        unless all are valid. `configure_linker` also keeps nlp.config in
        agreement: use it on a pipeline that will be saved."""
        settings = self.settings.updated(self.name, changes)
        reranker = self.reranker if reranker is KEEP else reranker
        if reranker is not None and reranker.candidates < settings.top_k:
            raise ValueError(
                f"{self.name}: the re-ranker re-scores {reranker.candidates} candidates but top_k is "
                f"{settings.top_k}: set reranker.candidates >= top_k"
            )
        self.settings = settings
        self.reranker = reranker
        self.namespaced = None if settings.id_namespaces is None else IdNamespaces(settings.id_namespaces)
        self.type_filter = TypeFilter(settings.types, settings.exclude_types)
        self.routes.set_cache_size(settings.cache_size)

    @property
    def nil_threshold(self) -> Optional[float]:
        """The threshold the nil_threshold setting means for spans the
        dictionary's linker links (`nil_threshold_of`)."""
        return self.nil_threshold_of(DEFAULT)

    def nil_threshold_of(self, route: str) -> Optional[float]:
        """The threshold the nil_threshold setting means for the spans of a
        route (a key of routes.linkers). "auto" is that linker's NIL default
        (kb/nil_default.py): measured for its encoder, known by a digest of
        its weights, and lambda, else derived from its vocabulary once and
        saved with it; none before it has names, and none with a re-ranker,
        which scores on its own scale (20 S + a logit)."""
        setting = self.settings.nil_threshold
        if setting != AUTO:
            return setting
        linker = self.routes.linkers.get(route)
        if self.reranker is not None or linker is None or not linker.is_ready:
            return None
        return linker.nil_default.threshold

    @nil_threshold.setter
    def nil_threshold(self, value: Optional[Union[float, str]]) -> None:
        change_setting(self, "nil_threshold", value)

    def initialize(
        self,
        get_examples: Optional[Callable] = None,
        *,
        nlp: Optional[Language] = None,
        dictionary: Optional[Union[VocabularySource, Path]] = None,
        routes: Optional[Dict[str, Union[VocabularySource, Path]]] = None,
        synonyms: Optional[Sequence[Union[str, Path]]] = None,
        preferred_ids_from: Optional[Sequence[Union[str, Path]]] = None,
        corrections: Optional[Union[str, Path]] = None,
        refresh: bool = False,
    ) -> None:
        """Load the encoder and index the dictionary (or the named
        vocabulary, from its cache) and each route's vocabulary. The data
        come from `[initialize.components.<name>]` (spaCy's place for what
        building reads), each setting given there replacing the component's
        own of the same name. `refresh` fetches a named vocabulary's files
        again. A pipe that was not initialized does this on first use, so
        adding it to a trained pipeline needs no nlp.initialize()."""
        path = dictionary or self.dictionary_path
        route_sources = self.route_paths if routes is None else casefolded_routes(self.name, routes)
        if path is None and self.linker_name is None and not route_sources:
            raise ValueError(
                f"{self.name}: no dictionary to index. Set it in the component's config "
                "(add_pipe(..., config={'linker_name': NAME}) or {'dictionary': PATH}) or in "
                f"[initialize.components.{self.name}] dictionary = PATH"
            )
        if not self.routes.encoder.is_loaded:
            self.routes.encoder.load()
        if self.reranker is not None and not self.reranker.is_loaded:
            self.reranker.load()
        self.learn_preferred_ids(self.id_usage_paths if preferred_ids_from is None else preferred_ids_from)
        if path is not None:
            self.routes.build(None, read_vocabulary(path))
        elif self.linker_name is not None:
            fill_named_linker(self.linker, self.linker_name, refresh=refresh, announce=_to_stderr)
        if path is not None or self.linker_name is not None:
            for source in self.synonym_paths if synonyms is None else synonyms:
                self.add_synonyms(source)
        # Routes the config named but initialize() replaced would stay empty.
        self.routes.use_labels(label for label in self.routes.labels if self.routes.linkers[label].is_ready)
        for label, route_source in route_sources.items():
            self.add_route(label, route_source)
        corrections = corrections or self.corrections_path
        if corrections is not None:
            self.preprocessor.corrections = read_corrections(corrections)

    def set_dictionary(
        self,
        dictionary: Union[Dictionary, VocabularySource, Path],
        *,
        sparse: Optional[SparseEncoder] = None,
        vectors: Optional[np.ndarray] = None,
    ) -> None:
        """Re-index against another dictionary, keeping encoder and tf-idf:
        BioSyn scores dev against dev_dictionary.txt with the trained model.
        A trainer gives its own fitted tf-idf (`sparse`) and the names'
        `vectors` it has just encoded with this encoder."""
        if not isinstance(dictionary, Dictionary):
            dictionary = read_vocabulary(dictionary)
        self.routes.build(None, dictionary, refit_sparse=False, sparse=sparse, vectors=vectors)

    def add_route(self, label: str, vocabulary: Union[Dictionary, VocabularySource, Path]) -> None:
        """Link spans of `label` (any case) against their own vocabulary from
        now on: a Dictionary, a vocabulary reader, a `CUI||name` file or a
        folder of `.concept` files whose mentions become the names (BC5CDR's
        training chemicals, where no chemical vocabulary is at hand). The
        encoder is shared; the route is saved with the pipeline."""
        if not isinstance(label, str) or not label.strip():
            raise ValueError(f"{self.name}: a route needs an entity label, got {label!r}")
        if callable(vocabulary):
            vocabulary = vocabulary()
        elif not isinstance(vocabulary, Dictionary):
            vocabulary = read_synonyms(vocabulary)
        if not len(vocabulary):
            raise ValueError(f"{self.name}: the vocabulary for the route {label!r} has no names")
        self.routes.build(label, vocabulary)

    def set_reranker(self, reranker: Optional[Reranker]) -> None:
        """Re-score the first stage's candidates with `reranker` from now on
        (None: the first stage's ranking stands)."""
        self.configure({}, reranker=reranker)

    @property
    def linker(self) -> Linker:
        """The `dictionary`'s linker: the one that ranks labels without a route."""
        return self.routes.default

    @property
    def kb(self) -> KnowledgeBase:
        """What the dictionary's IDs mean, as scispaCy's `linker.kb`:
        `kb.cui_to_entity[cui]` (preferred ID, every ID, canonical name,
        aliases) and `kb.alias_to_cuis[name]`."""
        self.ensure_ready()
        return self.linker.kb

    def kb_for(self, label: str) -> KnowledgeBase:
        """The knowledge base that links spans of `label`: its route's, else the dictionary's."""
        key = self.routes.route_of(label)
        if key is None:
            raise ValueError(f"{self.name}: no linker serves the label {label!r}")
        return self.routes.linkers[key].kb

    def set_encoder(self, encoder: Encoder, reencode: bool) -> None:
        """Give every linker (the dictionary's and each route's) another
        encoder; `reencode` encodes their names with it (Linker.set_encoder)."""
        self.routes.set_encoder(encoder, reencode)

    def learn_preferred_ids(self, corpora: Iterable[Union[str, Path]]) -> None:
        """Count the gold IDs of annotated corpora (folders of .concept
        files, PubTator files): dictionaries indexed from now on report each
        concept's most used ID as span._.cui. No corpora: the vocabulary's
        order stands."""
        usage: Dict[str, int] = {}
        for corpus in corpora:
            for cui, count in read_id_usage(corpus).items():
                usage[cui] = usage.get(cui, 0) + count
        self.routes.id_usage = usage

    def add_synonyms(self, synonyms: Union[Dictionary, str, Path], label: Optional[str] = None) -> None:
        """Teach the linker more names without retraining: a Dictionary, a
        `CUI||name` file or a folder of training `.concept` files, for the
        default dictionary or the route of `label`. They are saved with the
        pipeline, and searched first when the sieve is on."""
        try:
            self.routes.key_for(label)  # before reading the file
        except ValueError as e:
            raise ValueError(f"{self.name}: {e}") from None
        if not isinstance(synonyms, Dictionary):
            synonyms = read_synonyms(synonyms)
        self.routes.add_synonyms(label, synonyms)

    @property
    def pool_size(self) -> int:
        """How many names the first stage ranks: the re-ranker's candidates;
        top_k where a concept scorer already gives one name per concept;
        else enough names (names_searched) to fill kb_ents with top_k concepts."""
        if self.reranker is not None:
            return self.reranker.candidates
        if self.linker.concept_scorer is not None:
            return self.top_k
        return max(self.top_k, self.names_searched)

    def first_stage(self, texts: Sequence[str], k: Optional[int] = None) -> Tuple[List[str], List[List[Candidate]]]:
        """Mention strings normalized and spell-corrected like the parts of
        a Doc's spans (no abbreviations or splitting: those need the doc),
        and the `k` best names of each by S (default: the pool the re-ranker
        re-scores, else top_k), before any re-ranking."""
        self.ensure_ready()
        cleaned = [self.preprocessor.clean(t) for t in texts]
        return cleaned, self._ranked_by(DEFAULT, cleaned, self.pool_size if k is None else k)

    def _ranked_by(self, route: str, texts: List[str], k: int, rows: Optional[NameRows] = None) -> List[List[Candidate]]:
        """The k best names of each text by the route's linker, without the
        concepts the type filter drops."""
        linker = self.routes.linkers[route]
        where = self.name if route == DEFAULT else f"{self.name}, the route for {route!r}"
        return self.type_filter(linker.rank(texts, k, rows), linker.dictionary, where)

    def rank(
        self, texts: Sequence[str], contexts: Optional[Sequence[MentionInContext]] = None
    ) -> List[List[Candidate]]:
        """The top_k names for mention strings (`first_stage`). With a
        re-ranker, `contexts` (one per text) are what it reads; without them
        it reads the mention alone."""
        cleaned, ranked = self.first_stage(texts)
        if self.reranker is not None:
            if contexts is None:
                contexts = [MentionInContext(t) for t in cleaned]
            elif len(contexts) != len(texts):
                raise ValueError(f"{self.name}: {len(texts)} texts but {len(contexts)} contexts")
            ranked = self.reranker.rerank([c._replace(mention=t) for c, t in zip(contexts, cleaned)], ranked)
        return [candidates[: self.top_k] for candidates in ranked]

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        # Mentions of a whole batch of docs are ranked together, so the
        # encoder sees full batches even when each doc has few entities.
        for docs in minibatch(stream, size=batch_size):
            self.set_annotations(docs, self.predict(docs))
            yield from docs

    def ensure_ready(self) -> None:
        """Read the configured data now if initialize() has not: the pipe's
        own, never the pipeline's other components."""
        if self.routes.is_ready:
            return
        if self.linker_name is None and self.dictionary_path is None and not self.route_paths:
            raise RuntimeError(
                f"{self.name} has no dictionary: give linker_name or dictionary in its config, or call "
                f"nlp.get_pipe({self.name!r}).initialize(dictionary=...)"
            )
        self.initialize()

    def predict(self, docs: Sequence[Doc]) -> List[DocLinks]:
        """Abbreviations and the linked parts of every entity, per doc. The
        strings of all readings of all docs are ranked in one call per
        route (the default one, or the route of the entity's label)."""
        self.ensure_ready()
        found, route_keys, readings, spans = [], [], [], []
        # Per route, each string's row among the names, looked up once for
        # preprocessing's question (is it a name?) and the ranking alike.
        name_rows = {key: NameRows(linker.dictionary) for key, linker in self.routes.linkers.items() if linker.is_ready}
        for doc in docs:
            ents = doc.ents  # read once per doc: each read walks every token
            spans.append(ents)
            abbreviations = []
            # Ab3P is only worth its time on docs that have entities to link.
            if self.abbreviation_detector is not None and ents:
                abbreviations = doc_abbreviations(doc, self.abbreviation_detector)
            long_forms = long_forms_by_short_form(abbreviations)
            found.append(abbreviations)
            doc_routes = [self.routes.route_of(span.label_) for span in ents]
            route_keys.append(doc_routes)
            readings.append([
                None if route is None
                else self.preprocessor.readings(span.text, long_forms, name_rows[route].is_name)
                for span, route in zip(ents, doc_routes)
            ])
        wanted: Dict[str, Dict[str, None]] = {}
        for doc_routes, doc_readings in zip(route_keys, readings):
            for route, span_readings in zip(doc_routes, doc_readings):
                if route is not None:
                    wanted.setdefault(route, {}).update(dict.fromkeys(p for reading in span_readings for p in reading))
        ranked = {
            route: dict(zip(texts, self._ranked_by(route, list(texts), self.pool_size, name_rows[route])))
            for route, texts in wanted.items()
        }
        tied = [
            [None if route is None else tied_readings(span_readings, ranked[route])
             for route, span_readings in zip(doc_routes, doc_readings)]
            for doc_routes, doc_readings in zip(route_keys, readings)
        ]
        if self.reranker is not None:
            tied = self._rerank_in_context(docs, spans, tied)
        return [
            DocLinks(abbreviations, chosen_in_document(doc_tied, self.resolve_shared_names), ents, doc_routes)
            for abbreviations, doc_tied, ents, doc_routes in zip(found, tied, spans, route_keys)
        ]

    def _rerank_in_context(
        self, docs: Sequence[Doc], spans: List[Tuple[Span, ...]], tied: List[List[Optional[List[List[LinkedPart]]]]]
    ) -> List[List[Optional[List[List[LinkedPart]]]]]:
        """The candidates of every part of every reading re-scored by the
        re-ranker with its span's context, all docs in one call, before the
        document chooses among them."""
        parts = [
            (doc, span, part)
            for doc, ents, doc_tied in zip(docs, spans, tied)
            for span, readings in zip(ents, doc_tied) if readings is not None
            for reading in readings
            for part in reading
        ]
        contexts = [
            MentionInContext.in_text(doc.text, span.start_char, span.end_char, part.text, self.reranker.context_chars)
            for doc, span, part in parts
        ]
        reranked = iter(self.reranker.rerank(contexts, [part.candidates for _, _, part in parts]))
        # The same walk as `parts`, so each part takes its own candidates back.
        return [
            [None if readings is None else [[part._replace(candidates=next(reranked)) for part in reading] for reading in readings]
             for readings in doc_tied]
            for doc_tied in tied
        ]

    def set_annotations(self, docs: Sequence[Doc], links: List[DocLinks]) -> None:
        top_k, drop_nil, set_kb_id = self.top_k, self.drop_nil, self.set_kb_id
        thresholds = {route: self.nil_threshold_of(route) for route in self.routes.linkers}
        for doc, doc_links in zip(docs, links):
            doc._.biosyn_abbreviations = doc_links.abbreviations
            ents = list(doc_links.spans)
            dropped = set()
            for i, (span, parts, route) in enumerate(zip(ents, doc_links.entities, doc_links.routes)):
                if parts is None:  # no linker for its label: left as it came
                    continue
                annotate_span(span, parts, top_k, thresholds[route], self.namespaced)
                if drop_nil and span._.cui is None:
                    dropped.add(i)
                elif set_kb_id:
                    # Extension values are keyed by offsets, so the new span keeps them.
                    ents[i] = Span(doc, span.start, span.end, label=span.label, kb_id=span._.cui or NIL)
            if set_kb_id or dropped:
                doc.ents = [span for i, span in enumerate(ents) if i not in dropped]

    def score(self, examples: Iterable[Example], **kwargs) -> Dict[str, float]:
        """Linking scores of predicted docs against reference entities that
        carry their gold IDs as kb_id (CUI-less ones, kb_id "" or "-1", are
        not scored; a gold entity the prediction lacks is a miss), as
        fractions: `link_cui_acc`, the share whose `span._.cui` is a gold ID
        (every part of a composite), and `link_acc_1` / `link_acc_5` under
        BioSyn's rule (any ID of the best names); and spaCy's own
        `nel_micro_p/r/f` (Scorer.score_links: `kb_id_` equal to the gold
        field, over the entities whose offsets the prediction shares). IDs
        compare with their namespaces, bare ones through `id_namespaces`."""
        examples = list(examples)
        metrics = link_scores(examples, max_k=5, id_namespaces=self.settings.id_namespaces)
        # None, as spaCy's scorers say, when no gold entity has an ID to score.
        scores = {key: metrics.get(key) for key in ("link_cui_acc", "link_acc_1", "link_acc_5")}
        links = Scorer.score_links(examples, negative_labels=sorted(UNSCORED_CUIS))
        scores.update((key, links[key]) for key in ("nel_micro_p", "nel_micro_r", "nel_micro_f"))
        return scores

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """Save all but the `exclude`d fields (pipe_state.FIELDS); the folder
        is replaced whole, so a save killed midway leaves the previous one.
        A pipe not yet used reads its data first: the save holds its index,
        and loading it needs neither the cache nor the network."""
        self._ready_to_save()
        write_state(self, path, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        read_state(self, path, exclude)
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        """The files `to_disk` writes, packed with msgpack (no pickle)."""
        self._ready_to_save()
        return pack_state(self, exclude)

    def _ready_to_save(self) -> None:
        if self.linker_name is not None:
            self.ensure_ready()

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        unpack_state(self, data, exclude)
        return self
