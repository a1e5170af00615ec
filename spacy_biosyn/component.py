"""The `biosyn_linker` pipe: doc.ents in, span._.cui / kb_ents / candidates out.

Heavy state (encoder weights, name vectors, tf-idf) is built by
`initialize()` or read by `from_disk()`, never when the pipe is constructed:
`spacy.load` of a packaged pipeline must not need the original dictionary
path or a model hub.
"""
from pathlib import Path
from typing import Callable, Iterable, Iterator, List, Optional, Sequence, Union

import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span
from spacy.util import minibatch

from .dense import TransformerEncoder
from .dictionary import Dictionary
from .index import ExactIndex
from .linker import Candidate, Linker
from .text import normalize

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"

for _name in ("cui", "kb_ents", "candidates"):
    if not Span.has_extension(_name):
        Span.set_extension(_name, default=None)


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
    },
    assigns=["span._.cui", "span._.kb_ents", "span._.candidates"],
)
def make_biosyn_linker(
    nlp: Language,
    name: str,
    dictionary: Optional[str],
    encoder: Union[str, TransformerEncoder],
    index: ExactIndex,
    sparse_weight: float,
    top_k: int,
) -> "BiosynLinker":
    if isinstance(encoder, str):
        encoder = TransformerEncoder(encoder)
    return BiosynLinker(nlp.vocab, name, dictionary, encoder, index, sparse_weight, top_k)


class BiosynLinker(Pipe):
    def __init__(
        self,
        vocab,
        name: str,
        dictionary: Optional[Union[str, Path]],
        encoder: TransformerEncoder,
        index: ExactIndex,
        sparse_weight: float,
        top_k: int,
    ):
        if top_k < 1:
            raise ValueError(f"biosyn_linker: top_k must be at least 1, got {top_k}")
        self.vocab = vocab
        self.name = name
        self.dictionary_path = dictionary
        self.top_k = top_k
        self.linker = Linker(encoder, index, sparse_weight)

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

    def set_dictionary(self, dictionary: Union[Dictionary, str, Path]) -> None:
        """Re-index against another dictionary, keeping encoder and tf-idf:
        BioSyn scores dev against dev_dictionary.txt with the trained model."""
        if not isinstance(dictionary, Dictionary):
            dictionary = Dictionary.from_file(dictionary)
        self.linker.build(dictionary, refit_sparse=False)

    def rank(self, texts: Sequence[str]) -> List[List[Candidate]]:
        """The top_k names for raw mention strings, through the same
        preprocessing as the spans of a Doc."""
        return self.linker.rank([normalize(t) for t in texts], self.top_k)

    def __call__(self, doc: Doc) -> Doc:
        self.set_annotations([doc], self.predict([doc]))
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        # Mentions of a whole batch of docs are ranked together, so the
        # encoder sees full batches even when each doc has few entities.
        for docs in minibatch(stream, size=batch_size):
            self.set_annotations(docs, self.predict(docs))
            yield from docs

    def predict(self, docs: Sequence[Doc]) -> List[List[Candidate]]:
        """One candidate list per entity, docs and entities in order."""
        return self.rank([span.text for doc in docs for span in doc.ents])

    def set_annotations(self, docs: Sequence[Doc], ranked: List[List[Candidate]]) -> None:
        spans = (span for doc in docs for span in doc.ents)
        for span, candidates in zip(spans, ranked):
            span._.candidates = candidates
            span._.kb_ents = _concepts(candidates, self.top_k)
            span._.cui = candidates[0].cuis[0] if candidates else None

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> None:
        path = Path(path)
        self.linker.to_disk(path)
        # lambda is learned by training, so it is state, not just config.
        srsly.write_json(path / "cfg", {"sparse_weight": self.linker.sparse_weight})

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = ()) -> "BiosynLinker":
        path = Path(path)
        self.linker.from_disk(path)
        self.linker.sparse_weight = srsly.read_json(path / "cfg")["sparse_weight"]
        return self


def _concepts(candidates: List[Candidate], limit: int) -> List[tuple]:
    """Distinct CUIs in rank order, each with its best name's score."""
    best = {}
    for candidate in candidates:
        for cui in candidate.cuis:
            best.setdefault(cui, candidate.score)
    return list(best.items())[:limit]
