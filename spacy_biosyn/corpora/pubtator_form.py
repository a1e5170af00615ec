"""A document as a PubTator file can carry it, so that this package's
reader reads back its text and spans as they were, and bioc.pubtator too
but for the whitespace it strips from the ends of each line.

A PubTator document is a title line, an optional abstract line and one
tab-separated line per annotation, whose offsets count in title + one
character + abstract. Readers split lines at every line break Python knows
(bioc.pubtator: str.splitlines), split annotation lines at tabs, and take
any line holding `|t|` or `|a|` for a title or an abstract. So a document's
text is written one character for each of its own, its offsets unchanged:
- its title as the title (a PubTator document's; the first line of any
  other), the rest as the abstract; every other line break as a space;
- the control characters no text file holds (NUL, ESC, ...) as U+FFFD, as
  BioC XML writes them;
- the bars of `|t|` and `|a|` as `¦` (U+00A6);
- all else as given, byte for byte: tabs, and the spaces and tabs at either
  end of the title and the abstract (bioc.pubtator strips each line's ends,
  as it does reading NCBI's own files).
A mention's field has a space for each tab of its text: a tab ends a field.
"""
import re
from typing import List, NamedTuple, Optional, Sequence, Tuple

# What str.splitlines() breaks at: a line break inside a title or abstract.
_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
# Controls left after _BREAKS (but the tab), the non-characters and lone surrogates: what XML 1.0 cannot hold either.
_REPLACED = re.compile("[\x00-\x08\x0e-\x1b\x1f\ufffe\uffff\ud800-\udfff]")
_TAG = re.compile(r"\|([ta])\|")
# What no field may hold: a tab, a line break, a control character, a title or abstract tag.
_NOT_IN_FIELD = re.compile("[\t\x00-\x1f\x85\u2028\u2029]|\\|[ta]\\|")


class PubTatorForm(NamedTuple):
    title: str
    # None when the text has one line, or nothing after its first line break.
    abstract: Optional[str]
    # Each span as given, or None for one past the written text (a line
    # break that ends the text, with no abstract after it).
    spans: List[Optional[Tuple[int, int]]]

    @property
    def text(self) -> str:
        """The text as this package's reader reads it back."""
        return self.title if self.abstract is None else f"{self.title} {self.abstract}"


def pubtator_form(text: str, spans: Sequence[Tuple[int, int]] = (), title_end: Optional[int] = None) -> PubTatorForm:
    """`text` as PubTator carries it (this module's rules), with `spans`
    (character offsets in `text`); `title_end`: where the title ends, one
    separating character before the abstract (by default, at the first line
    break)."""
    if title_end is None:
        title_end = text.find("\n")
    title, abstract = (text, "") if title_end < 0 else (text[:title_end], text[title_end + 1:])
    form = PubTatorForm(one_line(title), one_line(abstract) or None, [])
    length = len(form.text)
    return form._replace(spans=[(start, end) if end <= length else None for start, end in spans])


def one_line(text: str) -> str:
    """A title or an abstract as one PubTator line, one character for each of `text`'s."""
    return _TAG.sub(r"¦\1¦", _REPLACED.sub("\ufffd", _BREAKS.sub(" ", text)))


def mention_field(text: str) -> str:
    """A mention's text (in the written text) as its annotation line's field."""
    return text.replace("\t", " ")


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
