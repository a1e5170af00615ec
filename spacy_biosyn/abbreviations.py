"""Abbreviation definitions in a text: "spinal muscular atrophy (SMA)".

The detector is a registered function so a config can swap it; Ab3P, through
`pyab3p`, is the default. Ab3P reports UTF-8 byte offsets, which drift from
Python's character offsets after the first non-ASCII character ("café",
"Schwartz–Jampel"), so they are converted here, once, for every caller.
"""
import re
from typing import Callable, List, NamedTuple, Optional, Tuple

import numpy as np
from spacy.util import registry

_WHITESPACE_RUN = re.compile(r"\s+")


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


AbbreviationDetector = Callable[[str], List[Abbreviation]]


class Ab3PDetector:
    """Ab3P (Sohn et al., 2008), the detector BioSyn's preprocessing used."""

    def __init__(self):
        self._ab3p = None  # built on first use: loading its word lists takes a moment

    def __call__(self, text: str) -> List[Abbreviation]:
        if not text.strip():
            return []
        if self._ab3p is None:
            import pyab3p

            self._ab3p = pyab3p.Ab3p()
        # Ab3P collapses whitespace runs inside its sentences and then cannot
        # find them in the text ("Failed to find sentence"), so it is given
        # a collapsed copy, mapped byte by byte back to the original.
        collapsed, origin = _collapse_whitespace(text)
        found = []
        for pair in self._ab3p.get_abbrs(collapsed):
            short = _original_span(origin, pair.short_form_offset, pair.short_form)
            long = _original_span(origin, pair.long_form_offset, pair.long_form)
            found.append(Abbreviation(text[short], text[long], short.start, long.start))
        return found


def _collapse_whitespace(text: str) -> Tuple[str, np.ndarray]:
    """The text with every whitespace run as one space, and for each UTF-8
    byte of it the index of the original character it came from."""
    kept = np.ones(len(text), dtype=bool)
    run_starts = []
    for run in _WHITESPACE_RUN.finditer(text):
        kept[run.start() + 1 : run.end()] = False
        run_starts.append(run.start())
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    n_bytes = 1 + (codepoints >= 0x80) + (codepoints >= 0x800) + (codepoints >= 0x10000)
    n_bytes[run_starts] = 1  # each run becomes one ASCII space
    positions = np.flatnonzero(kept)
    return _WHITESPACE_RUN.sub(" ", text), np.repeat(positions, n_bytes[positions])


def _original_span(origin: np.ndarray, byte_offset: int, form: str) -> slice:
    last_byte = byte_offset + len(form.encode("utf-8")) - 1
    return slice(int(origin[byte_offset]), int(origin[last_byte]) + 1)


@registry.misc("spacy_biosyn.Ab3P.v1")
def make_ab3p() -> AbbreviationDetector:
    return Ab3PDetector()


class SchwartzHearstDetector:
    """Schwartz & Hearst (2003): a short form in parentheses is defined by
    the nearest preceding words that contain its characters in order, the
    first at the start of a word. Pure Python, no word lists."""

    _DEFINITION = re.compile(r"\(([^()]{1,10})\)")

    def __call__(self, text: str) -> List[Abbreviation]:
        found = []
        for match in self._DEFINITION.finditer(text):
            short = match.group(1).strip()
            if not _is_short_form(short):
                continue
            # The long form lies in the same sentence, as in the original.
            previous_end = text.rfind(". ", 0, match.start())
            sentence_start = previous_end + 2 if previous_end >= 0 else 0
            window = text[sentence_start : match.start()].rstrip()
            max_words = min(len(short) + 5, 2 * len(short))
            start = _long_form_start(short, window, list(re.finditer(r"\S+", window))[-max_words:])
            if start is not None:
                short_start = match.start(1) + match.group(1).index(short)
                found.append(Abbreviation(short, window[start:], short_start, sentence_start + start))
        return found


def _is_short_form(candidate: str) -> bool:
    return (
        len(candidate) >= 2
        and len(candidate.split()) <= 2
        and candidate[0].isalnum()
        and any(c.isalpha() for c in candidate)
    )


def _long_form_start(short: str, window: str, words) -> Optional[int]:
    """Where the long form starts in `window`, matching the short form's
    letters and digits from the right; None when the words cannot hold them."""
    if not words:
        return None
    chars = [c.lower() for c in short if c.isalnum()]
    lower = window.lower()
    position = len(window)
    first_word = words[0].start()
    for i, char in enumerate(reversed(chars)):
        is_first = i == len(chars) - 1
        position -= 1
        while position >= first_word and (
            lower[position] != char
            or (is_first and position > 0 and window[position - 1].isalnum())
        ):
            position -= 1
        if position < first_word:
            return None
    return max(w.start() for w in words if w.start() <= position)


@registry.misc("spacy_biosyn.SchwartzHearst.v1")
def make_schwartz_hearst() -> AbbreviationDetector:
    return SchwartzHearstDetector()
