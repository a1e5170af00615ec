"""The `biosyn_linker` pipe: doc.ents in, span._.cui / kb_ents / candidates out.

Per doc: abbreviations are detected over the whole text (`doc._.abbreviations`);
per entity: the mention is preprocessed into readings (preprocessing.py), every
reading's parts are ranked, and the best-scoring reading is kept
(`span._.parts`).

Heavy state (encoder weights, name vectors, tf-idf) is built by
`initialize()` or read by `from_disk()`, never when the pipe is constructed:
`spacy.load` of a packaged pipeline must not need the original dictionary
path or a model hub.
"""
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Union

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from .abbreviations import Abbreviation, AbbreviationDetector
from .dense import TransformerEncoder
from .dictionary import Dictionary
from .index import SearchIndex
from .linker import Candidate, LinkedPart, Linker
from .preprocessing import MentionPreprocessor, Reading, long_forms_by_short_form
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
    encoder: Union[str, TransformerEncoder],
    index: SearchIndex,
    sparse_weight: float,
    top_k: int,
    abbreviations: Optional[AbbreviationDetector],
    split_composites: bool,
    corrections: Optional[str],
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
        abbreviations=abbreviations,
        split_composites=split_composites,
        corrections=corrections,
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
        abbreviations: Optional[AbbreviationDetector] = None,
        split_composites: bool = True,
        corrections: Optional[Union[str, Path]] = None,
    ):
        if top_k < 1:
            raise ValueError(f"biosyn_linker: top_k must be at least 1, got {top_k}")
        self.vocab = vocab
        self.name = name
        self.dictionary_path = dictionary
        self.corrections_path = corrections
        self.top_k = top_k
        self.linker = Linker(encoder, index, sparse_weight)
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
        component's config."""
        path = dictionary or self.dictionary_path
        if path is None:
            raise ValueError(
                f"{self.name}: no dictionary to index. Set it in the component's config "
                "(add_pipe(..., config={'dictionary': PATH})) or in "
                f"[initialize.components.{self.name}] dictionary = PATH"
            )
        if not self.linker.encoder.is_loaded:
            self.linker.encoder.load()
        self.linker.build(Dictionary.from_file(path))
        if self.corrections_path is not None:
            self.preprocessor.corrections = read_corrections(self.corrections_path)

    def set_dictionary(self, dictionary: Union[Dictionary, str, Path]) -> None:
        """Re-index against another dictionary, keeping encoder and tf-idf:
        BioSyn scores dev against dev_dictionary.txt with the trained model."""
        if not isinstance(dictionary, Dictionary):
            dictionary = Dictionary.from_file(dictionary)
        self.linker.build(dictionary, refit_sparse=False)

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
        strings of all readings of all docs are ranked in one call."""
        if not self.linker.is_ready:
            raise RuntimeError(f"{self.name} has no dictionary: call nlp.initialize() first")
        is_name = self.linker.dictionary.__contains__
        found, readings = [], []
        for doc in docs:
            abbreviations = []
            # Ab3P is only worth its time on docs that have entities to link.
            if self.abbreviation_detector is not None and doc.ents:
                abbreviations = self.abbreviation_detector(doc.text)
            long_forms = long_forms_by_short_form(abbreviations)
            found.append(abbreviations)
            readings.append(
                [self.preprocessor.readings(span.text, long_forms, is_name) for span in doc.ents]
            )
        strings = [p for doc in readings for span in doc for reading in span for p in reading]
        ranked = dict(zip(strings, self.linker.rank(strings, self.top_k)))
        return [
            DocLinks(abbreviations, [_best_reading(span, ranked) for span in doc_readings])
            for abbreviations, doc_readings in zip(found, readings)
        ]

    def set_annotations(self, docs: Sequence[Doc], links: List[DocLinks]) -> None:
        for doc, doc_links in zip(docs, links):
            doc._.abbreviations = doc_links.abbreviations
            for span, parts in zip(doc.ents, doc_links.entities):
                span._.parts = parts
                span._.candidates = [c for part in parts for c in part.candidates]
                span._.kb_ents = _joined_concepts(parts, self.top_k)
                span._.cui = span._.kb_ents[0][0] if span._.kb_ents else None

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        path = Path(path)
        self.linker.to_disk(path)
        # lambda is learned by training, so it is state, not just config.
        srsly.write_json(path / "cfg", {"sparse_weight": self.linker.sparse_weight})
        srsly.write_json(path / "corrections.json", self.preprocessor.corrections)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        path = Path(path)
        self.linker.from_disk(path)
        self.linker.sparse_weight = srsly.read_json(path / "cfg")["sparse_weight"]
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
