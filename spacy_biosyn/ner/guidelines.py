"""One NER for several annotation guidelines: a head per guideline over one
shared transformer, and the entities of the guideline asked for.

Corpora disagree on where a disease mention ends and on what counts as one
(NCBI Disease keeps "hereditary" inside "hereditary breast cancer",
BC5CDR drops it; BC5CDR marks symptoms and chemicals, NCBI neither). Pooled
into one head, the guidelines are averaged: each corpus's edges are drawn
the other's way half of the time (docs/record.md). Here each corpus trains
its own head, spaCy's transition-based NER, and all of them train the
transformer they listen to:

- `biosyn_guideline_ner` is spaCy's `ner` told its guideline. A training
  document names its guideline in `doc.user_data["biosyn_guideline"]`
  (`convert --guideline`); the head learns from its own guideline's
  documents, and reads every other document as unannotated (spaCy's missing
  entity state: no loss either way), so the other corpora shape the shared
  encoder but not its edges. It writes its entities to
  `doc.spans["biosyn_ner_<guideline>"]`, never to `doc.ents`, so that the
  heads do not constrain each other, and is scored on its own guideline's
  documents (`<name>_ents_f`).
- `biosyn_guideline_entities` sets `doc.ents` from the heads: those of one
  guideline, or the union of all (where spans overlap, the longest; of
  equal length, the one starting first; the same span once, as the
  guideline listed first labels it). The union is the default: text of unknown
  origin gets every mention either guideline would mark.
"""
from typing import Callable, Dict, Iterable, List, Optional

from spacy.language import Language
from spacy.pipeline import EntityRecognizer
from spacy.pipeline.ner import DEFAULT_NER_MODEL
from spacy.scorer import get_ner_prf
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import filter_spans

GUIDELINE_KEY = "biosyn_guideline"
SPANS_PREFIX = "biosyn_ner_"
UNION = "union"
_ENT_ATTRS = ["ENT_IOB", "ENT_TYPE", "ENT_KB_ID"]


def guideline_of(doc: Doc) -> Optional[str]:
    return doc.user_data.get(GUIDELINE_KEY)


def spans_key(guideline: str) -> str:
    return SPANS_PREFIX + guideline


@Language.factory(
    "biosyn_guideline_ner",
    default_config={
        "guideline": None,
        "moves": None,
        "update_with_oracle_cut_size": 100,
        "model": DEFAULT_NER_MODEL,
    },
    assigns=["doc.spans"],
    default_score_weights={},
)
def make_guideline_ner(
    nlp: Language, name: str, guideline: str, moves, update_with_oracle_cut_size: int, model,
) -> "GuidelineNer":
    if not isinstance(guideline, str) or not guideline or guideline == UNION:
        raise ValueError(f"{name}: guideline must name the corpus whose annotations the head learns "
                         f"(the documents' user_data['{GUIDELINE_KEY}']), got {guideline!r}")
    return GuidelineNer(nlp.vocab, model, name, guideline=guideline, moves=moves,
                        update_with_oracle_cut_size=update_with_oracle_cut_size)


class GuidelineNer(EntityRecognizer):
    """spaCy's NER, learning from the documents of its guideline only and
    writing to its own span group."""

    def __init__(self, vocab, model, name: str, *, guideline: str, **kwargs):
        super().__init__(vocab, model, name, **kwargs)
        self.cfg["guideline"] = guideline

    @property
    def guideline(self) -> str:
        return self.cfg["guideline"]

    def _own(self, examples: Iterable[Example]) -> List[Example]:
        """Each example as this head learns it: its own guideline's as
        they are, any other's with every token's entity state missing."""
        own = []
        for eg in examples:
            if guideline_of(eg.reference) == self.guideline:
                own.append(eg)
                continue
            unannotated = eg.reference.copy()
            unannotated.set_ents([], default="missing")
            own.append(Example(eg.predicted, unannotated))
        return own

    def initialize(self, get_examples: Callable[[], Iterable[Example]], *, nlp=None, labels=None):
        # Labels from its own guideline's documents: NCBI's head has no Chemical.
        return super().initialize(lambda: self._own(get_examples()), nlp=nlp, labels=labels)

    def update(self, examples: Iterable[Example], **kwargs):
        # Every document still runs through the shared transformer's
        # listener (the parser skips those without gold), so the batch it
        # receives is the one the transformer ran.
        return super().update(self._own(examples), **kwargs)

    def set_annotations(self, docs: Iterable[Doc], states) -> None:
        docs = list(docs)
        before = [doc.to_array(_ENT_ATTRS) for doc in docs]
        super().set_annotations(docs, states)
        key = spans_key(self.guideline)
        for doc, saved in zip(docs, before):
            doc.spans[key] = list(doc.ents)
            doc.from_array(_ENT_ATTRS, saved)

    def score(self, examples: Iterable[Example], **kwargs) -> Dict[str, Optional[float]]:
        """NER P/R/F on the documents of its guideline, as `<name>_ents_*`."""
        group = spans_key(self.guideline)
        scored = []
        for eg in examples:
            if guideline_of(eg.reference) != self.guideline:
                continue
            predicted = eg.predicted.copy()
            predicted.set_ents(filter_spans(eg.predicted.spans.get(group, [])), default="outside")
            scored.append(Example(predicted, eg.reference))
        scores = get_ner_prf(scored)
        return {f"{self.name}_{measure}": scores[measure] for measure in ("ents_p", "ents_r", "ents_f")}


@Language.factory(
    "biosyn_guideline_entities",
    default_config={"decode": UNION, "guidelines": []},
    requires=["doc.spans"],
    assigns=["doc.ents"],
    default_score_weights={"ents_f": 1.0, "ents_p": 0.0, "ents_r": 0.0},
)
def make_guideline_entities(nlp: Language, name: str, decode: str, guidelines: List[str]) -> "GuidelineEntities":
    return GuidelineEntities(name, decode, guidelines)


class GuidelineEntities:
    """doc.ents from the guideline heads' span groups: `decode` names one
    guideline, or "union" takes them all, in the order of `guidelines`
    where two heads find the same span."""

    def __init__(self, name: str, decode: str, guidelines: List[str]):
        if not guidelines or not all(isinstance(g, str) and g for g in guidelines) or len(set(guidelines)) < len(guidelines):
            raise ValueError(f"{name}: guidelines must list the heads' guidelines, each once, got {guidelines!r}")
        if decode != UNION and decode not in guidelines:
            raise ValueError(f"{name}: decode must be {UNION!r} or one of the guidelines {guidelines}, got {decode!r}")
        self.name, self.decode, self.guidelines = name, decode, list(guidelines)

    def __call__(self, doc: Doc) -> Doc:
        chosen = self.guidelines if self.decode == UNION else [self.decode]
        # filter_spans keeps the longest, of equal length the one starting
        # first, and of the same span the first given (its sort is stable).
        spans = [span for guideline in chosen for span in doc.spans.get(spans_key(guideline), [])]
        doc.set_ents(filter_spans([*doc.ents, *spans]), default="outside")
        return doc

    def score(self, examples: Iterable[Example], **kwargs) -> Dict[str, Optional[float]]:
        scores = get_ner_prf(list(examples))
        return {key: scores[key] for key in ("ents_p", "ents_r", "ents_f")}
