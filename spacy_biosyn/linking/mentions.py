"""The record a batch of mentions travels in through the engine.

The pipe (or a text caller) fills in what it knows of each mention: its
document, text, label and offsets; each step of `LinkingEngine.link_batch`
then adds its own field to the same record (the route that serves it, its
readings, the readings that tie, the reading the document chose, and what
its span says, NIL decided), so the steps never walk parallel lists in step.
"""
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from ..ty import Abbreviation, LinkedPart, Reading
from .links import SpanLinks


@dataclass
class Mention:
    """One entity on its way from text to linked parts."""

    # Its document's position in the batch, its text, and where it lies there.
    document: int
    text: str
    start_char: int
    end_char: int
    # Its entity label; None: the dictionary's, whatever dictionary_labels says.
    label: Optional[str] = None
    # The key of the route that links it; None: no linker serves its label.
    route: Optional[str] = None
    # How it may be read (preprocess/readings.py): as written, expanded, split.
    readings: List[Reading] = field(default_factory=list)
    # The readings whose parts score best, within TIE_TOLERANCE, best first.
    tied: List[List[LinkedPart]] = field(default_factory=list)
    # The reading the document chose, its parts ranked; None: left unlinked.
    parts: Optional[List[LinkedPart]] = None
    # Each part's tie rule (choice.TIE_RULES), where several concepts share its best name.
    tie_rules: List[Optional[str]] = field(default_factory=list)
    # What its span says, the NIL threshold applied; None: left unlinked.
    links: Optional[SpanLinks] = None

    @property
    def is_routed(self) -> bool:
        """Whether a linker serves its label."""
        return self.route is not None


@dataclass
class MentionBatch:
    """The documents of a batch (their texts and abbreviation pairs) and
    all their mentions, in document order."""

    texts: List[str]
    abbreviations: List[List[Abbreviation]]
    mentions: List[Mention]

    @classmethod
    def of_strings(cls, strings: Sequence[str], label: Optional[str] = None) -> "MentionBatch":
        """Each string a mention alone in a document of its own."""
        strings = list(strings)
        return cls(strings, [[] for _ in strings],
                   [Mention(i, text, 0, len(text), label) for i, text in enumerate(strings)])

    def by_document(self) -> Iterator[Tuple[int, List[Mention]]]:
        """Each document's position and its mentions, every document once."""
        grouped: Dict[int, List[Mention]] = {i: [] for i in range(len(self.texts))}
        for mention in self.mentions:
            grouped[mention.document].append(mention)
        return iter(grouped.items())

    @property
    def routed(self) -> List[Mention]:
        """The mentions a linker serves, in batch order."""
        return [mention for mention in self.mentions if mention.is_routed]
