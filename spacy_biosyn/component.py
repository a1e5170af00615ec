"""The `biosyn_linker` pipe: doc.ents in, span._.cui / kb_ents / candidates out.

Per doc: abbreviations are detected over the whole text (`doc._.abbreviations`);
per entity: the mention is preprocessed into readings (preprocessing.py), every
reading's parts are ranked by the linker of the entity's label (`routes`, else
the `dictionary`'s), and the best-scoring reading is kept (`span._.parts`).

Heavy state (encoder weights, name vectors, tf-idf) is built by
`initialize()` or read by `from_disk()`, never when the pipe is constructed:
`spacy.load` of a packaged pipeline must not need the original dictionary
path or a model hub.
"""
import copy
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from .abbreviations import Abbreviation, AbbreviationDetector
from .concepts import ConceptScorer
from .corpus import read_synonyms
from .dense import TransformerEncoder
from .dictionary import Dictionary
from .index import SearchIndex
from .linker import Candidate, LinkedPart, Linker
from .preprocessing import MentionPreprocessor, Reading, long_forms_by_short_form
from .sieve import Sieve
from .text import read_corrections

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"

for _name in ("cui", "kb_ents", "candidates", "parts"):
    if not Span.has_extension(_name):
        Span.set_extension(_name, default=None)
if not Doc.has_extension("abbreviations"):
    Doc.set_extension("abbreviations", default=None)


class DocLinks(NamedTuple):
    """What `predict` found for one doc."""

    abbreviations: List[Abbreviation]
    entities: List[List[LinkedPart]]  # per entity, the parts of its best reading


@Language.factory(
    "biosyn_linker",
    default_config={
        "dictionary": None,
        # Entity label -> dictionary for spans of that label (Chemical spans
        # against a chemical vocabulary); other labels use `dictionary`.
        "routes": {},
        "encoder": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": DEFAULT_ENCODER},
        "index": {"@misc": "spacy_biosyn.ExactIndex.v1"},
        # Chosen on NCBI and BC5CDR-Disease dev with MiniLM (benchmarks/zero_shot.py):
        # with cosine scores in [-1, 1], a larger lambda lets tf-idf overrule meaning.
        "sparse_weight": 0.125,
        "top_k": 5,
        # null turns abbreviation expansion off
        "abbreviations": {"@misc": "spacy_biosyn.Ab3P.v1"},
        "split_composites": True,
        # A `misspelling||correction` file such as BioSyn's ncbi-spell-check.txt,
        # read by initialize() and saved with the pipeline.
        "corrections": None,
        # `CUI||name` files or folders of training .concept files whose names
        # initialize() adds to the dictionary (saved with the pipeline).
        "synonyms": [],
        # Synonyms first (spacy_biosyn.Sieve.v1); null searches all names alike.
        "sieve": None,
        # Concepts ranked from their names' scores (spacy_biosyn.AliasCountReranker.v1
        # or spacy_biosyn.ConceptCentroids.v1); null ranks names.
        "concept_scorer": None,
        # Below this score span._.cui is None (NIL); kb_ents keeps the candidates.
        "nil_threshold": None,
    },
    assigns=[
        "doc._.abbreviations",
        "span._.cui",
        "span._.kb_ents",
        "span._.candidates",
        "span._.parts",
    ],
)
def make_biosyn_linker(
    nlp: Language,
    name: str,
    dictionary: Optional[str],
    routes: Dict[str, str],
    encoder: Union[str, TransformerEncoder],
    index: SearchIndex,
    sparse_weight: float,
    top_k: int,
    abbreviations: Optional[AbbreviationDetector],
    split_composites: bool,
    corrections: Optional[str],
    synonyms: List[str],
    sieve: Optional[Sieve],
    concept_scorer: Optional[ConceptScorer],
    nil_threshold: Optional[float],
) -> "BiosynLinker":
    if isinstance(encoder, str):
        encoder = TransformerEncoder(encoder)
    return BiosynLinker(
        nlp.vocab,
        name,
        dictionary,
        encoder,
        index,
        sparse_weight,
        top_k,
        routes=routes,
        abbreviations=abbreviations,
        split_composites=split_composites,
        corrections=corrections,
        synonyms=synonyms,
        sieve=sieve,
        concept_scorer=concept_scorer,
        nil_threshold=nil_threshold,
    )


class BiosynLinker(Pipe):
    def __init__(
        self,
        vocab,
        name: str,
        dictionary: Optional[Union[str, Path]],
        encoder: TransformerEncoder,
        index: SearchIndex,
        sparse_weight: float,
        top_k: int,
        *,
        routes: Optional[Dict[str, Union[str, Path]]] = None,
        abbreviations: Optional[AbbreviationDetector] = None,
        split_composites: bool = True,
        corrections: Optional[Union[str, Path]] = None,
        synonyms: Sequence[Union[str, Path]] = (),
        sieve: Optional[Sieve] = None,
        concept_scorer: Optional[ConceptScorer] = None,
        nil_threshold: Optional[float] = None,
    ):
        if top_k < 1:
            raise ValueError(f"biosyn_linker: top_k must be at least 1, got {top_k}")
        self.vocab = vocab
        self.name = name
        self.dictionary_path = dictionary
        self.corrections_path = corrections
        self.synonym_paths = list(synonyms)
        self.top_k = top_k
        self.nil_threshold = nil_threshold
        self.linker = Linker(
            encoder, index, sparse_weight, concept_scorer=concept_scorer, sieve=sieve
        )
        # One encoder for all; each route its own dictionary, tf-idf and index.
        self.route_paths = dict(routes or {})
        self.routes = {
            label: Linker(
                encoder, copy.deepcopy(index), sparse_weight, concept_scorer=concept_scorer, sieve=sieve
            )
            for label in self.route_paths
        }
        self.abbreviation_detector = abbreviations
        self.preprocessor = MentionPreprocessor(split_composites)

    def initialize(
        self,
        get_examples: Optional[Callable] = None,
        *,
        nlp: Optional[Language] = None,
        dictionary: Optional[Union[str, Path]] = None,
    ) -> None:
        """Load the encoder and index the dictionary, given here or in the
        component's config, and the dictionary of each route."""
        path = dictionary or self.dictionary_path
        if path is None and not self.routes:
            raise ValueError(
                f"{self.name}: no dictionary to index. Set it in the component's config "
                "(add_pipe(..., config={'dictionary': PATH})) or in "
                f"[initialize.components.{self.name}] dictionary = PATH"
            )
        if not self.linker.encoder.is_loaded:
            self.linker.encoder.load()
        if path is not None:
            self.linker.build(Dictionary.from_file(path))
            for synonyms in self.synonym_paths:
                self.add_synonyms(synonyms)
        for label, route_path in self.route_paths.items():
            self.routes[label].build(Dictionary.from_file(route_path))
        if self.corrections_path is not None:
            self.preprocessor.corrections = read_corrections(self.corrections_path)

    def set_dictionary(self, dictionary: Union[Dictionary, str, Path]) -> None:
        """Re-index against another dictionary, keeping encoder and tf-idf:
        BioSyn scores dev against dev_dictionary.txt with the trained model."""
        if not isinstance(dictionary, Dictionary):
            dictionary = Dictionary.from_file(dictionary)
        self.linker.build(dictionary, refit_sparse=False)

    def add_synonyms(self, synonyms: Union[Dictionary, str, Path], label: Optional[str] = None) -> None:
        """Teach the linker more names without retraining: a Dictionary, a
        `CUI||name` file or a folder of training `.concept` files, for the
        default dictionary or the route of `label`. They are saved with the
        pipeline, and searched first when the sieve is on."""
        if label is not None and label not in self.routes:
            raise ValueError(f"{self.name}: no route for the label {label!r}; routes: {sorted(self.routes)}")
        if not isinstance(synonyms, Dictionary):
            synonyms = read_synonyms(synonyms)
        (self.linker if label is None else self.routes[label]).add_synonyms(synonyms)

    def rank(self, texts: Sequence[str]) -> List[List[Candidate]]:
        """The top_k names for mention strings, normalized and spell-corrected
        like the parts of a Doc's spans (no abbreviations or splitting: those
        need the doc)."""
        return self.linker.rank([self.preprocessor.clean(t) for t in texts], self.top_k)

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
        """Abbreviations and the linked parts of every entity, per doc. The
        strings of all readings of all docs are ranked in one call per
        linker (the default one, or the route of the entity's label)."""
        if not self.linker.is_ready and not self.routes:
            raise RuntimeError(f"{self.name} has no dictionary: call nlp.initialize() first")
        found, linkers, readings = [], [], []
        for doc in docs:
            abbreviations = []
            # Ab3P is only worth its time on docs that have entities to link.
            if self.abbreviation_detector is not None and doc.ents:
                abbreviations = self.abbreviation_detector(doc.text)
            long_forms = long_forms_by_short_form(abbreviations)
            found.append(abbreviations)
            doc_linkers = [self._linker_for(span.label_) for span in doc.ents]
            linkers.append(doc_linkers)
            readings.append([
                [] if linker is None
                else self.preprocessor.readings(span.text, long_forms, linker.dictionary.__contains__)
                for span, linker in zip(doc.ents, doc_linkers)
            ])
        wanted: Dict[int, Tuple[Linker, Dict[str, None]]] = {}
        for doc_linkers, doc_readings in zip(linkers, readings):
            for linker, span_readings in zip(doc_linkers, doc_readings):
                if linker is not None:
                    _, texts = wanted.setdefault(id(linker), (linker, {}))
                    texts.update(dict.fromkeys(p for reading in span_readings for p in reading))
        ranked = {
            key: dict(zip(texts, linker.rank(list(texts), self.top_k)))
            for key, (linker, texts) in wanted.items()
        }
        return [
            DocLinks(abbreviations, [
                _best_reading(span_readings, ranked[id(linker)]) if linker is not None else []
                for linker, span_readings in zip(doc_linkers, doc_readings)
            ])
            for abbreviations, doc_linkers, doc_readings in zip(found, linkers, readings)
        ]

    def _linker_for(self, label: str) -> Optional[Linker]:
        """The route of an entity label, else the default linker if it has a
        dictionary; None leaves the span unlinked."""
        linker = self.routes.get(label, self.linker)
        return linker if linker.is_ready else None

    def set_annotations(self, docs: Sequence[Doc], links: List[DocLinks]) -> None:
        for doc, doc_links in zip(docs, links):
            doc._.abbreviations = doc_links.abbreviations
            for span, parts in zip(doc.ents, doc_links.entities):
                span._.parts = parts
                span._.candidates = [c for part in parts for c in part.candidates]
                span._.kb_ents = _joined_concepts(parts, self.top_k)
                span._.cui = self._cui(span._.kb_ents)

    def _cui(self, kb_ents: List[tuple]) -> Optional[str]:
        if not kb_ents:
            return None
        cui, score = kb_ents[0]
        return cui if self.nil_threshold is None or score >= self.nil_threshold else None

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        path = Path(path)
        if self.linker.is_ready:
            self.linker.to_disk(path)
        else:  # routes only: the shared encoder is saved where it would be
            self.linker.encoder.to_disk(path / "encoder")
        for i, linker in enumerate(self.routes.values()):
            linker.to_disk(path / "routes" / str(i), exclude=["encoder"])
        # lambda is learned by training, so it is state, not just config.
        srsly.write_json(
            path / "cfg", {"sparse_weight": self.linker.sparse_weight, "routes": list(self.routes)}
        )
        srsly.write_json(path / "corrections.json", self.preprocessor.corrections)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        path = Path(path)
        cfg = srsly.read_json(path / "cfg")
        saved_routes = cfg.get("routes", [])  # absent from pipelines saved before routes
        if saved_routes != list(self.routes):
            raise ValueError(
                f"{path} holds routes for the labels {saved_routes}, but the config names "
                f"{list(self.routes)}: load it with the config it was saved with"
            )
        if (path / "dictionary.txt").exists():
            self.linker.from_disk(path)
        else:
            self.linker.encoder.from_disk(path / "encoder")
        for i, linker in enumerate(self.routes.values()):
            linker.from_disk(path / "routes" / str(i), exclude=["encoder"])
        for linker in (self.linker, *self.routes.values()):
            linker.sparse_weight = cfg["sparse_weight"]
        if (path / "corrections.json").exists():  # absent from pipelines saved before 0.1
            self.preprocessor.corrections = srsly.read_json(path / "corrections.json")
        return self


def _best_reading(readings: List[Reading], ranked: Dict[str, List[Candidate]]) -> List[LinkedPart]:
    """The reading whose parts' best names score highest on average."""

    def score(reading: Reading) -> float:
        tops = [ranked[part][0].score for part in reading if ranked[part]]
        return sum(tops) / len(reading) if tops else float("-inf")

    best = max(readings, key=score)  # max keeps the first of equals: the likeliest reading
    return [LinkedPart(part, ranked[part]) for part in best]


def _concepts(candidates: List[Candidate], limit: int) -> List[tuple]:
    """Distinct CUIs in rank order, each with its best name's score."""
    best = {}
    for candidate in candidates:
        for cui in candidate.cuis:
            best.setdefault(cui, candidate.score)
    return list(best.items())[:limit]


def _joined_concepts(parts: List[LinkedPart], limit: int) -> List[tuple]:
    """kb_ents: a simple mention's concepts; for a composite, the parts'
    concepts of equal rank joined with "|" (the corpus convention), scored by
    their mean, so the first entry is the parts' best CUIs."""
    per_part = [_concepts(part.candidates, limit) for part in parts]
    if len(per_part) <= 1:  # no parts: a mention of only punctuation
        return per_part[0] if per_part else []
    depth = min(len(concepts) for concepts in per_part)
    return [
        ("|".join(c[rank][0] for c in per_part), sum(c[rank][1] for c in per_part) / len(per_part))
        for rank in range(depth)
    ]
