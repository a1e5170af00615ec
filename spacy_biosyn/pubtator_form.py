"""A document as a PubTator file can carry it, so that every PubTator
reader (this package's, bioc.pubtator) reads back the same text and spans.

A PubTator document is a title line, an optional abstract line and one
tab-separated line per annotation, whose offsets count in title + one
character + abstract. Readers split lines at every line break Python knows
(bioc.pubtator: str.splitlines), strip each line, split annotation lines at
tabs, and take any line holding `|t|` or `|a|` for a title or an abstract.
So a document's text is written:
- its title as the title (a PubTator document's; the first line of any
  other), the rest as the abstract; every other line break, and every tab,
  as a space, one character for one;
- the control characters no text file holds (NUL, ESC, ...) as U+FFFD, as
  BioC XML writes them;
- the bars of `|t|` and `|a|` as `¦` (U+00A6);
- without the whitespace at either end of the title and of the abstract,
  which readers strip: spans count in the text as written, and a span of
  that whitespace alone is left out.
"""
import re
from typing import List, NamedTuple, Optional, Sequence, Tuple

# What str.splitlines() breaks at, and the tab that separates fields.
_SPACED = re.compile("[\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Controls left after _SPACED, the non-characters and lone surrogates: what XML 1.0 cannot hold either.
_REPLACED = re.compile("[\x00-\x08\x0e-\x1b\x1f\ufffe\uffff\ud800-\udfff]")
_TAG = re.compile(r"\|([ta])\|")
# What no field may hold: a tab, a line break, a control character, a title or abstract tag.
_NOT_IN_FIELD = re.compile("[\t\x00-\x1f\x85\u2028\u2029]|\\|[ta]\\|")


class PubTatorForm(NamedTuple):
    title: str
    # None when the text has one line, or only whitespace after its first.
    abstract: Optional[str]
    # Each span's (start, end) in title + one character + abstract; None for
    # a span of stripped whitespace alone.
    spans: List[Optional[Tuple[int, int]]]

    @property
    def text(self) -> str:
        """The text as this package's reader reads it back."""
        return self.title if self.abstract is None else f"{self.title} {self.abstract}"


def pubtator_form(text: str, spans: Sequence[Tuple[int, int]] = (), title_end: Optional[int] = None) -> PubTatorForm:
    """`text` as PubTator carries it (this module's rules), with `spans`
    (character offsets in `text`) moved to count in it; `title_end`: where
    the title ends, one separating character before the abstract (by
    default, at the first line break)."""
    if title_end is None:
        title_end = text.find("\n")
    title, abstract = (text, None) if title_end < 0 else (text[:title_end], text[title_end + 1:])
    kept, lines, at = [], [], 0
    for offset, line in [(0, title)] + ([(len(title) + 1, abstract)] if abstract is not None else []):
        written = one_line(line)
        stripped = written.strip()
        if not stripped and lines:
            break  # an abstract of whitespace alone: no abstract line
        lead = len(written) - len(written.lstrip())
        kept.append((offset + lead, offset + lead + len(stripped), at - offset - lead))
        lines.append(stripped)
        at += len(stripped) + 1
    return PubTatorForm(lines[0], lines[1] if len(lines) > 1 else None, [_moved(span, kept) for span in spans])


def one_line(text: str) -> str:
    """A title, an abstract or a mention as one PubTator field, one
    character for each of `text`'s."""
    return _TAG.sub(r"¦\1¦", _REPLACED.sub("\ufffd", _SPACED.sub(" ", text)))


def field_problem(value: str, bars: bool = True) -> Optional[str]:
    """Why a label, an ID (`bars`: a composite's are joined by '|') or a
    document id (no bars: '|' ends it) cannot be a PubTator field, or None:
    one that holds a tab, a line break, a control character, `|t|` or `|a|`,
    or whitespace at its ends reads back as something else."""
    if not bars and "|" in value:
        return "holds '|', which ends a PubTator document id"
    if _NOT_IN_FIELD.search(value):
        return "holds a tab, a line break, a control character, |t| or |a|"
    if value != value.strip():
        return "begins or ends with whitespace, which PubTator readers strip"
    return None


def _moved(span: Tuple[int, int], kept: List[Tuple[int, int, int]]) -> Optional[Tuple[int, int]]:
    """A span's offsets in the written text: `kept` holds each line's kept
    characters (start, end in the text) and how far they move."""
    start, end = span
    pieces = [(max(start, a), min(end, b), shift) for a, b, shift in kept if max(start, a) < min(end, b)]
    if not pieces:
        return None
    return pieces[0][0] + pieces[0][2], pieces[-1][1] + pieces[-1][2]
