"""The `biosyn_linker` factory: a config block in, a BiosynLinker out.

Its `default_config` is what `nlp.add_pipe("biosyn_linker")` builds: the
parts (encoder, index, abbreviation detector, scorers) as registered
functions, the data sources initialize() reads, and every setting of
linking/linker_settings.py with its default. Nothing heavy happens here: the
encoder loads and the vocabulary is indexed by initialize() or on first
use, so `spacy.load` of a packaged pipeline needs no dictionary or hub.
"""
import inspect
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from spacy.lang.en.stop_words import STOP_WORDS
from spacy.language import Language

from ..checks import takes_arguments
from ..encoders.base import DEFAULT_ENCODER_NAME, encoder_label
from ..linking.data_sources import DataSources, VocabularySource
from ..linking.engine import LinkingEngine
from ..linking.linker_settings import SCISPACY_ALIASES, SCISPACY_REFUSALS, LinkerSettings, from_scispacy
from ..names import PIPE_NAME
from ..parts import AB3P, ONNX_ENCODER, SIZED_INDEX
from ..ty import AbbreviationDetector, ConceptScorer, Encoder, Reranker, SearchIndex, Sieve
from .component import BiosynLinker
from .configure import remember_pipeline, store_blocks_in_our_names


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
    # LinkerSettings' fields, and scispaCy's names for some: declared by the
    # settings model, and added to the signature spaCy validates a block against below.
    **settings: Any,
) -> "BiosynLinker":
    # spaCy checks a config block against the signature; a direct call is checked here.
    unexpected = sorted(set(settings) - set(inspect.signature(make_biosyn_linker).parameters))
    if unexpected:
        raise TypeError(f"{name}: make_biosyn_linker() got unexpected settings {', '.join(unexpected)}")
    given = from_scispacy(name, {**settings, "abbreviations": abbreviations})
    checked = LinkerSettings.checked(name, given)
    abbreviations = given["abbreviations"]
    if isinstance(encoder, str):
        from ..encoders.transformer import TransformerEncoder

        encoder = TransformerEncoder(encoder)
    # A class's instances all have __call__ on their type: the detector is checked by its signature.
    if abbreviations is not None and not takes_arguments(abbreviations, 1):
        raise ValueError(
            f"{name}: abbreviations must be a detector called on a doc's text, such as spacy_biosyn.Ab3P.v1 "
            "or spacy_biosyn.SchwartzHearst.v1, spacy_biosyn.ScispacyAbbreviations.v1 (the pairs of scispaCy's "
            f"abbreviation_detector), or null; got {type(abbreviations).__name__}"
        )
    sources = DataSources.checked(
        name, linker_name=linker_name, dictionary=dictionary, routes=routes, synonyms=synonyms,
        preferred_ids_from=preferred_ids_from, corrections=corrections,
    )
    engine = LinkingEngine(name, checked, encoder=encoder, index=index, abbreviations=abbreviations, sieve=sieve,
                           concept_scorer=concept_scorer, reranker=reranker, sources=sources, stop_words=STOP_WORDS)
    _warn_if_threshold_of_another_encoder(name, engine.nil_threshold(), checked.nil_threshold_encoder, encoder)
    pipe = BiosynLinker(nlp.vocab, name, engine)
    remember_pipeline(pipe, nlp)
    store_blocks_in_our_names(nlp)
    return pipe


def _with_settings(signature: inspect.Signature) -> inspect.Signature:
    """The factory's signature with each setting as a parameter of its own:
    LinkerSettings' fields (their defaults come from default_config) and
    scispaCy's names (null unless given). spaCy validates a config block
    against it, so a misspelt setting is refused by name; the settings
    model then checks each value strictly."""
    fixed = [p for p in signature.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    declared = [inspect.Parameter(field, inspect.Parameter.KEYWORD_ONLY, annotation=Any)
                for field in LinkerSettings.model_fields]
    declared += [inspect.Parameter(alias, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=Any)
                 for alias in (*SCISPACY_ALIASES, *SCISPACY_REFUSALS)]
    return signature.replace(parameters=fixed + declared)


make_biosyn_linker.__signature__ = _with_settings(inspect.signature(make_biosyn_linker))
Language.factory(
    PIPE_NAME,
    default_config={
        # A vocabulary of the catalogue (named/catalogue.py: umls, mesh, rxnorm,
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
        # ONNX Runtime links on a CPU at PyTorch's vectors (to 1e-6), faster and
        # without importing transformers' model code; spacy_biosyn.TransformerEncoder.v1
        # trains, and runs on a GPU.
        "encoder": {"@misc": ONNX_ENCODER, "name": DEFAULT_ENCODER_NAME},
        # Exact search, or faiss's from a million names on (search/sized_index.py).
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
        # The settings: their defaults and meaning are in linking/linker_settings.py.
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
)(make_biosyn_linker)


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
