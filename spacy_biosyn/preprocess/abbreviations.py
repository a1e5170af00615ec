"""Abbreviation definitions in a text: "spinal muscular atrophy (SMA)".

The detector is a registered function so a config can swap it; Ab3P, through
`pyab3p`, is the default. Ab3P reports UTF-8 byte offsets, which drift from
Python's character offsets after the first non-ASCII character ("café",
"Schwartz–Jampel"), so they are converted here, once, for every caller.

Ab3P's native code kills the process (SIGSEGV, SIGABRT) when one call holds
a word of 100,000 bytes, a sentence of a few hundred thousand, or 25,000
nested parentheses. It is therefore given pieces of at most
`_MAX_PIECE_CHARS` characters, cut at sentence ends where the piece has
one, each seen with `_OVERLAP_CHARS` of its neighbours' text: a definition
cut by a piece's edge is whole in the piece that holds its short form.

When Ab3P cannot find one of its sentences in the text (it rewrites "_"
and "`" before looking), it writes "Failed to find sentence" and the whole
text to the process's stderr. Those two characters are given to it already
rewritten (and the characters its C code cannot read, NUL first, replaced), and whatever else it writes is caught and counted in a debug
line of the "spacy_biosyn" logger instead of filling a user's console.
"""
import ctypes
import ctypes.util
import logging
import os
import re
import sys
import tempfile
from typing import Iterator, List, Optional, Tuple, Union

import numpy as np

from ..parts import AB3P, SCHWARTZ_HEARST, SCISPACY_ABBREVIATIONS, registry
from ..ty import Abbreviation, AbbreviationDetector

logger = logging.getLogger("spacy_biosyn")
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"))

# The whitespace that collapsing to single spaces changes: a run of two or
# more, or one that is not a space; an abstract has few, and a space many.
_CHANGED_WHITESPACE = re.compile(r"\s{2,}|[^\S ]")
# 10,000 characters (11,000 with the overlaps on both sides) are at most
# 44 kB of UTF-8; measured here, Ab3P survives a 99,000-byte word and 12,000
# nested parentheses in one call.
_MAX_PIECE_CHARS = 10_000
# More than Ab3P's longest long form (2 words per short-form character, 10 at most).
_OVERLAP_CHARS = 500
_SENTENCE_END = re.compile(r"[.!?]\s+|\n")
# What Ab3P cannot be given as it is, rewritten one character for one, so
# every character offset holds:
# - "_" and "`", which Ab3P rewrites in its copy of a sentence;
# - C0 control characters: its C strings end at a NUL, and abbreviations
#   after one were silently not found ("breast cancer (BC)" then linked BC
#   to another concept);
# - lone surrogates, which have no UTF-8 form: U+FFFD, as wide in UTF-8.
_AB3P_REWRITES = {
    **str.maketrans("_`", "-'"),
    **{c: " " for c in [*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]},
    **{c: 0xFFFD for c in range(0xD800, 0xE000)},
}





class Ab3PDetector:
    """Ab3P (Sohn et al., 2008), the detector BioSyn's preprocessing used."""

    def __init__(self):
        self._ab3p = None  # built on first use: loading its word lists takes a moment
        self._native_output = None  # a file that catches what Ab3P writes to stdout and stderr

    def __getstate__(self) -> dict:
        # The native Ab3p object cannot be pickled; a copy builds its own.
        return {**self.__dict__, "_ab3p": None, "_native_output": None}

    def __call__(self, text: str) -> List[Abbreviation]:
        if not text.strip():
            return []
        if self._ab3p is None:
            import pyab3p

            self._ab3p = pyab3p.Ab3p()
        found = []
        for own_start, own_end in _pieces(text, _MAX_PIECE_CHARS):
            start = max(0, own_start - _OVERLAP_CHARS)
            end = own_end + _OVERLAP_CHARS
            # Ab3P collapses whitespace runs inside its sentences and then cannot
            # find them in the text ("Failed to find sentence"), so it is given
            # a collapsed copy, mapped byte by byte back to the original.
            collapsed, origin = _collapse_whitespace(text[start:end].translate(_AB3P_REWRITES))
            encoded = collapsed.encode("utf-8")
            for pair in self._abbreviations(collapsed):
                offsets = _checked_offsets(encoded, pair)
                if offsets is None:
                    continue
                short = _original_span(origin, offsets[0], pair.short_form, start)
                long = _original_span(origin, offsets[1], pair.long_form, start)
                # A pair is its short form's piece's: overlaps do not repeat it.
                if own_start <= short.start < own_end:
                    found.append(Abbreviation(text[short], text[long], short.start, long.start))
        return found

    def _abbreviations(self, text: str) -> list:
        """Ab3P's pairs, with what its native code writes to stdout ("tokens
        differ: ..." for a token of ~1,000 characters, which broke `link
        --json`) and stderr caught and counted: stdout is the program's own."""
        if self._native_output is None:
            self._native_output = tempfile.TemporaryFile()
        sink = self._native_output
        sys.stdout.flush()
        sys.stderr.flush()
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        for fd in saved:
            os.dup2(sink.fileno(), fd)
        try:
            pairs = self._ab3p.get_abbrs(text)
        finally:
            _LIBC.fflush(None)  # C's stdout buffer, into the sink and not into what comes after
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
        if sink.tell():
            sink.seek(0)
            said = sink.read()
            sink.seek(0)
            sink.truncate()
            lost = said.count(b"Failed to find sentence")
            if lost:
                logger.debug("Ab3P could not find %d sentence(s) of a %d-character text; offsets were checked",
                             lost, len(text))
            # A failure is two lines: "Failed to find sentence: ..." and "in text: ...".
            other = [line for line in said.splitlines()
                     if line.strip() and b"Failed to find sentence" not in line and not line.startswith(b"in text:")]
            if other:
                logger.debug("Ab3P wrote %d other line(s) on a %d-character text, such as %r", len(other), len(text),
                             other[0][:80])
        return pairs


def _checked_offsets(encoded: bytes, pair) -> Optional[Tuple[int, int]]:
    """Byte offsets of a pair's short and long form in the text Ab3P was
    given. Once Ab3P fails to find one of its sentences in that text (it
    prints "Failed to find sentence"), the offsets it reports for later
    sentences are off; the forms are then looked up, the short form after
    its long form ("long form (SF)") or else before it, and a pair whose
    forms are not there is dropped."""
    short, long = pair.short_form.encode("utf-8"), pair.long_form.encode("utf-8")
    short_at, long_at = pair.short_form_offset, pair.long_form_offset
    if encoded[short_at : short_at + len(short)] == short and encoded[long_at : long_at + len(long)] == long:
        return short_at, long_at
    long_at = encoded.find(long)
    if long_at < 0:
        return None
    short_at = encoded.find(short, long_at + len(long))
    if short_at < 0:
        short_at = encoded.rfind(short, 0, long_at)
    return (short_at, long_at) if short_at >= 0 else None


def _pieces(text: str, limit: int) -> Iterator[Tuple[int, int]]:
    """(start, end) of consecutive pieces of at most `limit` characters,
    each ending at the last sentence end inside it, else at the last
    whitespace, else at the limit (a single word that long)."""
    start = 0
    while len(text) - start > limit:
        window = text[start : start + limit]
        ends = [m.end() for m in _SENTENCE_END.finditer(window)]
        cut = ends[-1] if ends else max(window.rfind(" "), window.rfind("\t")) + 1 or limit
        yield start, start + cut
        start += cut
    if start < len(text):
        yield start, len(text)


def _collapse_whitespace(text: str) -> Tuple[str, np.ndarray]:
    """The text with every whitespace run as one space, and for each UTF-8
    byte of it the index of the original character it came from."""
    kept = np.ones(len(text), dtype=bool)
    run_starts = []
    for run in _CHANGED_WHITESPACE.finditer(text):
        kept[run.start() + 1 : run.end()] = False
        run_starts.append(run.start())
    positions = np.flatnonzero(kept)
    collapsed = _CHANGED_WHITESPACE.sub(" ", text)
    if text.isascii():  # a byte a character
        return collapsed, positions
    codepoints = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    n_bytes = 1 + (codepoints >= 0x80) + (codepoints >= 0x800) + (codepoints >= 0x10000)
    n_bytes[run_starts] = 1  # each run becomes one ASCII space
    return collapsed, np.repeat(positions, n_bytes[positions])


def _original_span(origin: np.ndarray, byte_offset: int, form: str, piece_start: int) -> slice:
    last_byte = byte_offset + len(form.encode("utf-8")) - 1
    return slice(piece_start + int(origin[byte_offset]), piece_start + int(origin[last_byte]) + 1)


@registry.misc(AB3P)
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


@registry.misc(SCHWARTZ_HEARST)
def make_schwartz_hearst() -> AbbreviationDetector:
    return SchwartzHearstDetector()


class ScispacyAbbreviations:
    """The pairs scispaCy's AbbreviationDetector found earlier in the
    pipeline (`nlp.add_pipe("abbreviation_detector")`): `doc._.abbreviations`,
    each short form's spans with their `._.long_form`. Reads the doc, not
    its text, so Ab3P does not run a second time."""

    reads_doc = True

    def __call__(self, doc) -> List[Abbreviation]:
        if not type(doc).has_extension("abbreviations"):
            raise ValueError(
                "abbreviations = spacy_biosyn.ScispacyAbbreviations.v1 reads doc._.abbreviations, which no component "
                "set: add scispaCy's detector before the linker (import scispacy.abbreviation; "
                "nlp.add_pipe('abbreviation_detector', before='biosyn_linker')), or use spacy_biosyn.Ab3P.v1"
            )
        return [
            Abbreviation(short.text, short._.long_form.text, short.start_char, short._.long_form.start_char)
            for short in doc._.abbreviations or ()
        ]


@registry.misc(SCISPACY_ABBREVIATIONS)
def make_scispacy_abbreviations() -> ScispacyAbbreviations:
    return ScispacyAbbreviations()


def detect_abbreviations(detector: Union[AbbreviationDetector, ScispacyAbbreviations], doc) -> List[Abbreviation]:
    """A doc's abbreviations by a detector of its text, or of the doc itself."""
    return detector(doc) if getattr(detector, "reads_doc", False) else detector(doc.text)
