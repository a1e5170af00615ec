"""What crosses the steps of the pipeline, and what a swappable part must do.

Data flows text -> entities -> readings -> candidates -> scores -> span
attributes. The values passed between those steps are defined here
(`Abbreviation`, `Reading`, `Concept`, `Candidate`, `LinkedPart`), and so
are the Protocols of the parts a config can swap (`Encoder`, `SearchIndex`,
`ConceptScorer`, `Sieve`, `AbbreviationDetector`, `Reranker`). A module
depends on a contract, not on the module that fulfils it. spaCy's config
validation lets any object through a Protocol, so the biosyn_linker checks
each part it is given with `check_part`; tests/test_registry.py checks
that every registered part fulfils its contract. (The Protocols are
runtime-checkable, which spaCy's validation needs to accept them.)
"""
from typing import TYPE_CHECKING, Any, Iterator, List, NamedTuple, Optional, Protocol, Sequence, Set, Tuple, runtime_checkable

if TYPE_CHECKING:
    import numpy as np
    from scipy import sparse

# One concept's IDs, preferred first.
Concept = Tuple[str, ...]
# One way to read a mention: its normalized parts (one, unless it is a composite).
Reading = Tuple[str, ...]


class Abbreviation(NamedTuple):
    """A short form defined by its long form; offsets are characters."""

    short_form: str
    long_form: str
    short_start: int
    long_start: int

    @property
    def short_end(self) -> int:
        return self.short_start + len(self.short_form)

    @property
    def long_end(self) -> int:
        return self.long_start + len(self.long_form)


class Candidate(NamedTuple):
    """One ranked dictionary name and its concepts (each a tuple of IDs,
    preferred first). A NamedTuple, so Docs holding candidates serialize
    with DocBin like any other extension value."""

    name: str
    concepts: Tuple[Concept, ...]
    score: float

    @property
    def cuis(self) -> Concept:
        """Every ID of the name: under BioSyn's rule any of them is a hit."""
        return tuple(dict.fromkeys(cui for ids in self.concepts for cui in ids))


class LinkedPart(NamedTuple):
    """One linked part of a mention (a composite has several): the
    normalized string that was ranked and its candidates, best first."""

    text: str
    candidates: List[Candidate]


class RankSettings(Protocol):
    """What a name ranker reads of its linker's settings each time it ranks
    (a linking engine's LinkerSettings): it keeps no copy of its own."""

    sparse_weight: float
    cache_size: int


@runtime_checkable
class AbbreviationDetector(Protocol):
    """A doc's text in (the doc itself, where the detector has `reads_doc`),
    its (short form, long form) pairs out."""

    def __call__(self, text: Any) -> List[Abbreviation]: ...


@runtime_checkable
class Encoder(Protocol):
    """Texts in, one vector each out; `similarity` says how the vectors
    compare (cosine: unit rows)."""

    name: str
    similarity: str

    @property
    def is_loaded(self) -> bool: ...

    @property
    def dim(self) -> int: ...

    def load(self, name_or_path: Any = None) -> "Encoder": ...

    def encode(self, texts: Sequence[str]) -> "np.ndarray": ...

    def to_disk(self, path: Any) -> None: ...

    def from_disk(self, path: Any) -> "Encoder": ...


@runtime_checkable
class NameVectors(Protocol):
    """The names' dense vectors as an index is built from them: in row
    order a chunk at a time, some rows for training, or all at once."""

    def __len__(self) -> int: ...

    @property
    def dim(self) -> int: ...

    def take(self, rows: "np.ndarray") -> "np.ndarray": ...

    def chunks(self) -> Iterator["np.ndarray"]: ...

    def whole(self) -> "np.ndarray": ...


@runtime_checkable
class SearchIndex(Protocol):
    """The names' vectors and tf-idf rows, and the k best names of each
    mention by S = dense + weight * sparse."""

    def __len__(self) -> int: ...

    @property
    def dim(self) -> int: ...

    @property
    def sparse_vectors(self) -> "sparse.csr_matrix": ...

    @property
    def holds_exact_vectors(self) -> bool: ...

    def build(self, vectors: "np.ndarray", sparse_vectors: "sparse.csr_matrix") -> Any:
        """Index the names: `vectors` is an array, or NameVectors for an index
        whose `builds_from_chunks` is True (it is filled as they are encoded)."""

    def add(self, vectors: "np.ndarray", sparse_vectors: "sparse.csr_matrix") -> None: ...

    def reconstruct(self, ids: "np.ndarray") -> "np.ndarray": ...

    def search(
        self, dense_queries: "np.ndarray", sparse_queries: "sparse.csr_matrix", sparse_weight: float, k: int
    ) -> Tuple["np.ndarray", "np.ndarray"]: ...

    def to_disk(self, path: Any, *, idf: Optional["np.ndarray"] = None) -> None:
        """Save the index; `idf` is the weights of the tf-idf that made the rows."""

    def from_disk(self, path: Any) -> Any: ...


@runtime_checkable
class NamesByConcept(Protocol):
    """What a concept scorer reads of the linker: each concept's names, their
    vectors and tf-idf rows, and how S combines them."""

    similarity: str
    sparse_weight: float

    def rows_of(self, cui: str) -> "np.ndarray": ...

    def dense_vectors(self, rows: "np.ndarray") -> "np.ndarray": ...

    def sparse_vectors(self, rows: "np.ndarray") -> "sparse.csr_matrix": ...


@runtime_checkable
class ConceptScorer(Protocol):
    """Each mention's `pool_size` best names (best first) in, its concepts
    out, each shown by its best name; `names` is what it may read of the
    linker's names beyond the pool."""

    pool_size: int

    def __call__(
        self, names: NamesByConcept, dense_queries: "np.ndarray", sparse_queries: "sparse.csr_matrix",
        pools: List[List[Candidate]],
    ) -> List[List[Candidate]]: ...


@runtime_checkable
class Sieve(Protocol):
    """The whole dictionary's candidates for `text`, with the nearest added
    synonym put first when the sieve trusts it."""

    def __call__(self, text: str, nearest_synonym: Candidate, candidates: List[Candidate]) -> List[Candidate]: ...


# Marks the mention in its context; plain characters every tokenizer knows,
# so any Hugging Face encoder works without new embeddings.
_OPEN, _CLOSE = "[", "]"


class MentionInContext(NamedTuple):
    """What the cross-encoder reads of a mention: the string the linker
    ranked (normalized, abbreviations expanded, one part of a composite) and
    the span as written between its left and right context."""

    mention: str
    left: str = ""
    span: str = ""
    right: str = ""

    @classmethod
    def in_text(cls, text: str, start: int, end: int, mention: str, window: int) -> "MentionInContext":
        """The span text[start:end] with up to `window` characters each side,
        cut at whole words."""
        left = text[max(0, start - window) : start]
        right = text[end : end + window]
        if start - window > 0 and " " in left:
            left = left.split(" ", 1)[1]
        if end + window < len(text) and " " in right:
            right = right.rsplit(" ", 1)[0]
        return cls(mention, " ".join(left.split()), " ".join(text[start:end].split()), " ".join(right.split()))

    def first_segment(self) -> str:
        if not self.span:
            return self.mention
        return f"{self.mention} ; {self.left} {_OPEN} {self.span} {_CLOSE} {self.right}".strip()


@runtime_checkable
class Reranker(Protocol):
    """Re-scores the first stage's `candidates` best names of each mention
    read in its context (MentionInContext)."""

    candidates: int
    context_chars: int

    @property
    def is_loaded(self) -> bool: ...

    def load(self, name_or_path: Any = None) -> "Reranker": ...

    def rerank(self, mentions: Sequence[Any], candidates: Sequence[Sequence[Candidate]]) -> List[List[Candidate]]: ...

    def to_disk(self, path: Any) -> None: ...

    def from_disk(self, path: Any) -> "Reranker": ...


def members(contract: type) -> Set[str]:
    """What a Protocol asks for: its attributes, properties and methods."""
    own = {name for name in vars(contract) if not name.startswith("_") or name in ("__call__", "__len__")}
    return own | set(getattr(contract, "__annotations__", {}))


def fulfils(part: object, contract: type) -> bool:
    """Whether `part` has every member of `contract`, looked up on its class
    or its instance dict: isinstance() of a runtime Protocol would read each
    property, and an encoder's dim raises before its weights are loaded."""
    return all(fulfils_one(part, name) for name in members(contract))


def fulfils_one(part: object, name: str) -> bool:
    return hasattr(type(part), name) or name in getattr(part, "__dict__", {})


def check_part(component: str, setting: str, part: Optional[object], contract: type, examples: str) -> None:
    """Refuse a part (None passes) that does not fulfil its contract, naming
    the setting and the registered parts that do."""
    if part is not None and not fulfils(part, contract):
        missing = sorted(name for name in members(contract) if not fulfils_one(part, name))
        raise ValueError(
            f"{component}: {setting} must be {examples}, or an object with what spacy_biosyn.ty.{contract.__name__} "
            f"asks for; got {type(part).__name__}, which lacks {', '.join(missing)}"
        )
