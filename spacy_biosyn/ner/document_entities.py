"""A document's entities made to agree with each other, between the NER and
the linker. An NER decides token by token; a document names its diseases
consistently, and defines its abbreviations once:

- rejoin: a mention the NER split at an abbreviation's parenthesis
  ("glucose-6-phosphate dehydrogenase (G6PD) deficiency" found as
  "glucose-6-phosphate dehydrogenase" and "deficiency") is one entity again;
- abbreviations: a short form follows its long form's decision: an entity
  wherever the long form is one ("spinal muscular atrophy (SMA) ... SMA"),
  and none where no entity touches the long form ("heteroduplex (HD)" is
  no Huntington disease);
- propagate: a string the NER found at half of its occurrences or more
  (alone or inside a longer entity) is an entity at all of them, with the
  label it had most often.

An added entity never overlaps one the NER found. Which way each rule
goes was measured on NCBI Disease dev (docs/record.md): the long form
following its short form, and spreading a string found at fewer of its
occurrences, added more wrong entities than right ones.
"""
import re
from collections import Counter
from typing import Dict, Iterable, List, Optional, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..parts import AB3P
from ..ty import Abbreviation, AbbreviationDetector
from ..pipeline.extensions import doc_abbreviations, register_extensions

# (start_char, end_char, label)
Entity = Tuple[int, int, str]
_OPENING = re.compile(r"\s*\(\s*$")
_CLOSING = re.compile(r"\s*\)\s*")  # matched at a position: no ^

register_extensions()


@Language.factory(
    "biosyn_document_entities",
    default_config={
        "abbreviations": {"@misc": AB3P},
        "rejoin": True,
        "pair_abbreviations": True,
        "propagate": True,
        # Shorter strings are not spread to their other occurrences.
        "min_propagated_chars": 3,
        # The share of a string's occurrences the NER must have found for it to spread.
        "min_propagated_share": 0.5,
    },
    requires=["doc.ents"],
    assigns=["doc.ents", "doc._.biosyn_abbreviations"],
)
def make_document_entities(
    nlp: Language,
    name: str,
    abbreviations: Optional[AbbreviationDetector],
    rejoin: bool,
    pair_abbreviations: bool,
    propagate: bool,
    min_propagated_chars: int,
    min_propagated_share: float,
) -> "DocumentEntities":
    return DocumentEntities(
        name, abbreviations, rejoin, pair_abbreviations, propagate, min_propagated_chars, min_propagated_share
    )


class DocumentEntities:
    def __init__(self, name: str, abbreviations: Optional[AbbreviationDetector], rejoin: bool = True,
                 pair_abbreviations: bool = True, propagate: bool = True, min_propagated_chars: int = 3,
                 min_propagated_share: float = 0.5):
        for setting, value in (("rejoin", rejoin), ("pair_abbreviations", pair_abbreviations), ("propagate", propagate)):
            if not isinstance(value, bool):
                raise ValueError(f"{name}: {setting} must be true or false, got {value!r}")
        if (rejoin or pair_abbreviations) and abbreviations is None:
            raise ValueError(f"{name}: rejoin and pair_abbreviations need an abbreviation detector; set them to false")
        self.name = name
        self.detector = abbreviations
        self.rejoin, self.pair_abbreviations, self.propagate = rejoin, pair_abbreviations, propagate
        self.min_propagated_chars, self.min_propagated_share = min_propagated_chars, min_propagated_share

    def __call__(self, doc: Doc) -> Doc:
        ents = [(e.start_char, e.end_char, e.label_) for e in doc.ents]
        if not ents:
            return doc
        pairs = []
        if self.detector is not None:
            # Kept for the linker, which reads them instead of running the detector again.
            pairs = doc._.biosyn_abbreviations = doc_abbreviations(doc, self.detector)
        if self.rejoin:
            ents = rejoined(doc.text, ents, pairs)
        if self.pair_abbreviations:
            ents = with_abbreviations(doc.text, ents, pairs)
        if self.propagate:
            ents = propagated(doc.text, ents, self.min_propagated_chars, self.min_propagated_share)
        doc.ents = _spans(doc, ents)
        return doc


def rejoined(text: str, ents: List[Entity], pairs: List[Abbreviation]) -> List[Entity]:
    """Entities of one label on either side of a defined short form's
    parentheses, "LONG FORM (SF) rest", joined into one (the short form's
    own entity inside them with them). The second may begin inside the
    parentheses ("G6PD) deficiency"), and then, with no entity on the long
    form, the joined entity opens where the long form does."""
    ents = sorted(ents)
    for pair in pairs:
        opening, closing = text[pair.long_end:pair.short_start], _CLOSING.match(text, pair.short_end)
        if not _OPENING.match(opening) or closing is None:
            continue
        before = next((e for e in ents if e[1] == pair.long_end), None)
        after = next((e for e in ents if pair.short_start <= e[0] <= closing.end() < e[1]), None)
        if after is not None and before is None and after[0] < closing.end():
            # "G6PD) deficiency" alone: an entity cannot open inside the parentheses, so
            # it opens where the long form does, if no other entity holds the long form
            if not any(e[0] < pair.long_end and pair.long_start < e[1] for e in ents):
                before = (pair.long_start, pair.long_end, after[2])
        if before is None or after is None or before[2] != after[2]:
            continue
        inside = [e for e in ents if before[1] <= e[0] and e[1] <= after[0]]
        ents = sorted([e for e in ents if e not in (before, after, *inside)] + [(before[0], after[1], before[2])])
    return ents


def with_abbreviations(text: str, ents: List[Entity], pairs: List[Abbreviation]) -> List[Entity]:
    """Each short form's occurrences as entities where an entity is its long
    form, with that entity's label; and as none where no entity overlaps
    the long form."""
    ents = list(ents)
    for pair in pairs:
        occurrences = {(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(pair.short_form)}(?!\w)", text)}
        long_entity = next((e for e in ents if (e[0], e[1]) == (pair.long_start, pair.long_end)), None)
        if long_entity is not None:
            ents = _added(ents, [(start, end, long_entity[2]) for start, end in occurrences])
        elif not any(e[0] < pair.long_end and pair.long_start < e[1] for e in ents):
            ents = [e for e in ents if (e[0], e[1]) not in occurrences]
    return sorted(ents)


def propagated(text: str, ents: List[Entity], min_chars: int, min_share: float) -> List[Entity]:
    """Every other occurrence of an entity's text (whole words, the same
    case but for the first letter's: "Gout" at a sentence's start and
    "gout") as an entity with the label that text had most often, for the
    texts found at `min_share` of their occurrences or more (an occurrence
    inside a longer entity counts as found)."""
    labels: Dict[str, Counter] = {}
    for start, end, label in ents:
        labels.setdefault(_case_free(text[start:end]), Counter())[label] += 1
    added = []
    for mention, counts in labels.items():
        if len(mention) < min_chars:
            continue
        first = f"[{re.escape(mention[0].lower())}{re.escape(mention[0].upper())}]"
        occurrences = [(m.start(), m.end()) for m in re.finditer(rf"(?<!\w){first}{re.escape(mention[1:])}(?!\w)", text)]
        found = sum(any(start < e[1] and e[0] < end for e in ents) for start, end in occurrences)
        if found >= min_share * len(occurrences):
            added.extend((start, end, counts.most_common(1)[0][0]) for start, end in occurrences)
    return sorted(_added(ents, added))


def _case_free(mention: str) -> str:
    """A mention with its first letter lower-cased: "Gout" and "gout" count as one."""
    return mention[:1].lower() + mention[1:]


def _added(ents: List[Entity], candidates: Iterable[Entity]) -> List[Entity]:
    """`ents` with each candidate that overlaps none of them (nor an earlier one)."""
    result = list(ents)
    for candidate in sorted(set(candidates)):
        if not any(candidate[0] < e[1] and e[0] < candidate[1] for e in result):
            result.append(candidate)
    return result


def _spans(doc: Doc, ents: List[Entity]) -> List[Span]:
    """The entities as spans; one that does not fall on token edges is left out."""
    spans = (doc.char_span(start, end, label=label) for start, end, label in ents)
    return [span for span in spans if span is not None]
