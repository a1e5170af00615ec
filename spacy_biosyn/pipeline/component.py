"""The `biosyn_linker` pipe: doc.ents in, span._.cui / kb_ents / candidates out.

A thin spaCy adapter over a LinkingEngine (linking/engine.py), which holds
the settings, the vocabularies and every step between a mention and its
concepts. The pipe turns a batch of docs into the engine's record of
mentions (each entity's text, label and offsets, and the doc's abbreviation
pairs: `doc._.biosyn_abbreviations` as an earlier component found them,
else the engine's detector finds them now): `predict` has the engine decide
each mention's links, the NIL threshold included, and `set_annotations`
only writes them onto the spans (annotate.py). What users read is the
concept: `span._.cui` is the best concept's preferred ID, mirrored in
`span.kb_id_` for displaCy and spaCy's scorers.

Heavy state is built by `initialize()` (which the engine calls itself on
the first doc if nobody has: adding the pipe to a trained pipeline must not
re-initialize the rest) or read by `from_disk()`, never when the pipe is
constructed. Settings are attributes (`pipe.top_k = 10`) that write through
`configure_linker`, so the pipeline's config, and what it saves, agree.
"""
from difflib import get_close_matches
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.scorer import Scorer
from spacy.tokens import Doc, Span
from spacy.training import Example
from spacy.util import minibatch

from ..kb.dictionary import Dictionary
from ..kb.ids import split_cuis
from ..kb.knowledge_base import KnowledgeBase
from ..kb.namespaces import UNSCORED_CUIS, ConceptKeys
from ..linking.data_sources import VocabularySource
from ..linking.engine import LinkingEngine
from ..linking.linker_settings import EDITABLE_SETTINGS, SCISPACY_ALIASES, SCISPACY_REFUSALS, LinkerSettings
from ..linking.links import SpanLinks
from ..linking.mentions import Mention, MentionBatch
from ..ty import Abbreviation, Candidate, Reranker
from .accuracy import link_scores
from .annotate import annotate_docs
from .configure import BoundSetting, RefusedName, Setting, change_setting, config_block_of, record_loaded
from .extensions import doc_abbreviations, register_extensions
from .saved_config import checked_load, saved_record
from .saved_engine import saved_config_block

register_extensions()


class DocLinks(NamedTuple):
    """What `predict` decided for one doc, for set_annotations to write."""

    abbreviations: List[Abbreviation]
    # The doc's entities as predict read them: each read of doc.ents walks every token.
    spans: Tuple[Span, ...]
    # Per entity, what its span says (NIL decided); None: no linker serves its label.
    links: List[Optional[SpanLinks]]


class BiosynLinker(Pipe):
    # Each setting of LinkerSettings is an attribute (declared below the
    # class, from the model): an editable one, set, is saved with the
    # pipeline; one bound to the saved state is refused when assigned.

    def __init__(self, vocab, name: str, engine: LinkingEngine):
        """Built by the factory (factory.py) from its config."""
        self.vocab = vocab
        self.name = name
        self.engine = engine

    def __setattr__(self, attribute: str, value) -> None:
        # A typo (`pipe.topk = 3`) or a part's name must not pass silently
        # as a new attribute that links nothing differently. What spaCy
        # sets (name, error_handler), private names and what a subclass
        # declares pass.
        if attribute == "name" and "engine" in self.__dict__:
            self.engine.name = value  # renamed in its pipeline: saves and errors use the new name
        if attribute in _OWN or attribute.startswith("_") or hasattr(type(self), attribute):
            super().__setattr__(attribute, value)
            return
        close = get_close_matches(attribute, _SETTABLE, n=1)
        raise AttributeError(
            f"{self.name}: {attribute!r} is not a setting of the pipe"
            + (f" (did you mean {close[0]!r}?)" if close else "")
            + f"; these may be set: {', '.join(_EDITABLE)}, and configure_linker(nlp, ...) changes them and the encoder"
        )

    @property
    def settings(self) -> LinkerSettings:
        """Every setting, as the engine holds them."""
        return self.engine.settings

    @property
    def nil_threshold(self) -> Optional[float]:
        """The threshold nil_threshold means for spans the dictionary links ("auto" resolved)."""
        return self.engine.nil_threshold()

    @nil_threshold.setter
    def nil_threshold(self, value: Optional[Union[float, str]]) -> None:
        change_setting(self, "nil_threshold", value)

    @property
    def reranker(self) -> Optional[Reranker]:
        """The cross-encoder that re-scores the first stage's candidates
        (None: the first stage's ranking stands); assigned, it is swapped as
        configure_linker swaps it, in the pipe and nlp.config."""
        return self.engine.reranker

    @reranker.setter
    def reranker(self, reranker: Optional[Reranker]) -> None:
        change_setting(self, "reranker", reranker)

    @property
    def kb(self) -> KnowledgeBase:
        """What the dictionary's IDs mean, as scispaCy's `linker.kb`:
        `kb.cui_to_entity[cui]` and `kb.alias_to_cuis[name]`."""
        return self.engine.kb()

    def kb_for(self, label: str) -> KnowledgeBase:
        """The knowledge base that links spans of `label`: its route's, else the dictionary's."""
        return self.engine.kb(label)

    def rank(self, texts: Sequence[str], contexts=None) -> List[List[Candidate]]:
        """The top_k names for mention strings (LinkingEngine.rank)."""
        return self.engine.rank(texts, contexts)

    def add_synonyms(self, synonyms: Union[Dictionary, str, Path], label: Optional[str] = None) -> None:
        """Teach the linker more names without retraining (LinkingEngine.add_synonyms); saved with the pipeline."""
        self.engine.add_synonyms(synonyms, label)

    def add_route(self, label: str, vocabulary: Union[Dictionary, VocabularySource, Path]) -> None:
        """Link spans of `label` against their own vocabulary (LinkingEngine.add_route); saved with the pipeline."""
        self.engine.add_route(label, vocabulary)

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
        """Load the encoder and index the vocabularies. The data come from
        `[initialize.components.<name>]` (spaCy's place for what building
        reads), each given there replacing the component's own of the same
        name; `refresh` fetches a named vocabulary's files again."""
        self.engine.initialize(refresh=refresh, dictionary=dictionary, routes=routes, synonyms=synonyms,
                               preferred_ids_from=preferred_ids_from, corrections=corrections)

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        # Mentions of a whole batch of docs are ranked together, so the
        # encoder sees full batches even when each doc has few entities.
        for docs in minibatch(stream, size=batch_size):
            self.set_annotations(docs, self.predict(docs))
            yield from docs

    def predict(self, docs: Sequence[Doc]) -> List[DocLinks]:
        """Per doc, its abbreviation pairs and what each entity's span will
        say, every decision made (NIL included): set_annotations only writes."""
        self.engine.ensure_ready()  # before Ab3P runs on a batch that cannot be linked
        detector = self.engine.abbreviation_detector
        texts, abbreviations, spans, mentions = [], [], [], []
        for i, doc in enumerate(docs):
            ents = doc.ents  # read once per doc: each read walks every token
            texts.append(doc.text)
            # Ab3P is only worth its time on docs that have entities to link.
            abbreviations.append(doc_abbreviations(doc, detector) if detector is not None and ents else [])
            spans.append(ents)
            mentions.append([Mention(i, span.text, span.start_char, span.end_char, span.label_) for span in ents])
        self.engine.link_batch(MentionBatch(texts, abbreviations, [m for doc_mentions in mentions for m in doc_mentions]))
        return [DocLinks(pairs, ents, [m.links for m in doc_mentions])
                for pairs, ents, doc_mentions in zip(abbreviations, spans, mentions)]

    def set_annotations(self, docs: Sequence[Doc], links: List[DocLinks]) -> None:
        """Write what predict decided onto the docs' spans."""
        annotate_docs(docs, links, drop_nil=self.settings.drop_nil, set_kb_id=self.settings.set_kb_id)

    def score(self, examples: Iterable[Example], **kwargs) -> Dict[str, Optional[float]]:
        """Linking scores of predicted docs against reference entities that
        carry their gold IDs as kb_id (CUI-less ones, kb_id "" or "-1", are
        not scored; a gold entity the prediction lacks is a miss), as
        fractions: `link_cui_acc`, the share whose `span._.cui` is a gold ID
        (every part of a composite), and `link_acc_1` / `link_acc_5` under
        BioSyn's rule (any ID of the best names); and spaCy's own
        `nel_micro_p/r/f` (Scorer.score_links: `kb_id_` equal to the gold
        field, over the entities whose offsets the prediction shares). IDs
        compare with their namespaces, bare ones through the pipe's own
        (`engine.score_namespaces()`: id_namespaces, else its vocabulary's)."""
        examples = list(examples)
        namespaces = self.engine.score_namespaces()
        metrics = link_scores(examples, max_k=5, id_namespaces=namespaces)
        # None, as spaCy's scorers say, when no gold entity has an ID to score.
        scores = {key: metrics.get(key) for key in ("link_cui_acc", "link_acc_1", "link_acc_5")}
        keys = ConceptKeys(namespaces)
        links = Scorer.score_links([with_keyed_ids(eg, keys) for eg in examples], negative_labels=sorted(UNSCORED_CUIS))
        scores.update((key, links[key]) for key in ("nel_micro_p", "nel_micro_r", "nel_micro_f"))
        return scores

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        """Save all but the `exclude`d fields (linking/state.py); the folder
        is replaced whole, so a save killed midway leaves the previous one."""
        saved_under = saved_config_block(path, self.name)
        # The blocks that name its parts, for engine.cfg: its pipeline's, else those nlp.to_disk just wrote
        # (a pipe sourced into another pipeline, as assemble does).
        parts = config_block_of(self) or saved_under or {}
        self.engine.to_disk(path, exclude, parts=parts, record=saved_record(saved_under))

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        check = checked_load(self.engine, config_block_of(self), saved_config_block(path, self.name))
        record_loaded(self, self.engine.load(path, exclude, check))
        return self

    def to_bytes(self, *, exclude: Iterable[str] = ()) -> bytes:
        """The files `to_disk` writes, packed with msgpack (no pickle)."""
        return self.engine.to_bytes(exclude)

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        record_loaded(self, self.engine.from_bytes(data, exclude, checked_load(self.engine, config_block_of(self), None)))
        return self


def _declare_settings(pipe: type) -> None:
    """The pipe's setting attributes, one per setting of the model (but
    nil_threshold, a property that says the threshold it means), and one
    per scispaCy name: an alias reads and sets ours, a name with no
    equivalent is refused."""
    attributes = {name: Setting() if name in EDITABLE_SETTINGS else BoundSetting()
                  for name in LinkerSettings.model_fields if name != "nil_threshold"}
    attributes.update((alias, Setting(ours)) for alias, ours in SCISPACY_ALIASES.items())
    attributes.update((name, RefusedName()) for name in SCISPACY_REFUSALS)
    for name, attribute in attributes.items():
        attribute.__set_name__(pipe, name)
        setattr(pipe, name, attribute)


_declare_settings(BiosynLinker)
# What the pipe holds itself, and what spaCy sets on any pipe.
_OWN = ("vocab", "name", "engine", "error_handler")
# The attributes an assignment may name: the settings (editable, or refused
# with what to do instead), nil_threshold and the re-ranker.
_SETTABLE = tuple(
    name for name, value in vars(BiosynLinker).items()
    if isinstance(value, (Setting, RefusedName)) or name in ("nil_threshold", "reranker")
)
_EDITABLE = sorted(
    name for name in _SETTABLE if not isinstance(vars(BiosynLinker)[name], (BoundSetting, RefusedName))
)


def with_keyed_ids(example: Example, keys: ConceptKeys) -> Example:
    """The example with each entity's kb_id written as `keys` compare IDs
    (a composite's parts in order), for spaCy's Scorer.score_links, which
    compares kb_id strings: `MESH:D001943` then meets a gold `D001943`."""
    return Example(_keyed(example.predicted, keys), _keyed(example.reference, keys))


def _keyed(doc: Doc, keys: ConceptKeys) -> Doc:
    # The words alone: Doc.copy would copy every span's candidates and any tensor too.
    copy = Doc(doc.vocab, words=[t.text for t in doc], spaces=[bool(t.whitespace_) for t in doc])
    copy.ents = [
        Span(copy, e.start, e.end, label=e.label,
             kb_id=e.kb_id_ if e.kb_id_ in UNSCORED_CUIS else "|".join(sorted({keys(c) for c in split_cuis(e.kb_id_)})))
        for e in doc.ents
    ]
    return copy
