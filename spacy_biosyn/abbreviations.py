"""Abbreviation definitions in a text: "spinal muscular atrophy (SMA)".

The detector is a registered function so a config can swap it; Ab3P, through
`pyab3p`, is the default. Ab3P reports UTF-8 byte offsets, which drift from
Python's character offsets after the first non-ASCII character ("café",
"Schwartz–Jampel"), so they are converted here, once, for every caller.
"""
from typing import Callable, List, NamedTuple

from spacy.util import registry


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
        encoded = text.encode("utf-8")
        return [
            Abbreviation(
                found.short_form,
                found.long_form,
                _char_offset(encoded, found.short_form_offset),
                _char_offset(encoded, found.long_form_offset),
            )
            for found in self._ab3p.get_abbrs(text)
        ]


def _char_offset(encoded: bytes, byte_offset: int) -> int:
    return len(encoded[:byte_offset].decode("utf-8"))


@registry.misc("spacy_biosyn.Ab3P.v1")
def make_ab3p() -> AbbreviationDetector:
    return Ab3PDetector()
