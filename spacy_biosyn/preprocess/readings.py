"""Mention preprocessing: an entity's text in, the normalized strings to rank out.

Abbreviations defined anywhere in the doc are expanded, also where the short
form is used far from its definition; composite mentions are split into
parts; every part is normalized and spell-corrected. A mention can have more
than one reading (a short form defined with two long forms, or a mention that
is a dictionary name as written, such as "dmd"): the component ranks them all
and keeps the one that scores best.
"""
import re
from itertools import islice, product
from typing import Callable, Collection, Dict, Iterable, List, Optional

from ..ty import Abbreviation, Reading
from .composites import is_only_coordinators, split_composite
from .everyday_words import function_words, is_everyday_english
from .text import correct, normalize

_MAX_EXPANSIONS = 4  # a mention using several ambiguous short forms stays cheap


def long_forms_by_short_form(abbreviations: Iterable[Abbreviation]) -> Dict[str, List[str]]:
    """Each short form's distinct long forms, in the order they were defined."""
    long_forms: Dict[str, List[str]] = {}
    for abbreviation in abbreviations:
        forms = long_forms.setdefault(abbreviation.short_form, [])
        if abbreviation.long_form not in forms:
            forms.append(abbreviation.long_form)
    return long_forms


class MentionPreprocessor:
    def __init__(self, stop_words: Collection[str], corrections: Optional[Dict[str, str]] = None):
        """`stop_words`: a language's, the function words of everyday English
        (everyday_words.py); `corrections`: misspelling -> correction."""
        self.stop_words = frozenset(stop_words)  # as given: a saved engine keeps them
        self.function_words = function_words(stop_words)
        self.corrections = corrections or {}

    def clean(self, text: str) -> str:
        """Normalize and spell-correct one string, as every ranked string is."""
        return correct(normalize(text), self.corrections)

    def readings(
        self, text: str, long_forms: Dict[str, List[str]], is_name: Callable[[str], bool], split_composites: bool = True
    ) -> List[Reading]:
        """The ways to read a mention, most likely first; a mention of only
        punctuation, or of everyday English (everyday_words.py), has the
        single empty reading (nothing to link). `is_name` says whether a
        normalized string is a dictionary name; `split_composites` whether
        a composite mention is read as its parts."""
        if is_everyday_english(text, is_name, self.function_words):
            return [()]
        readings: List[Reading] = []
        for expanded in self._expansions(text, long_forms, is_name):
            ways = [[expanded]]
            if split_composites:
                parts = split_composite(expanded)
                # A composite that is a name as written ("breast and ovarian
                # cancer" names a syndrome too) is also read as its parts, after
                # the name: the component lets the document choose between them.
                ways = [[expanded], parts] if len(parts) > 1 and is_name(self.clean(expanded)) else [parts]
            for parts in ways:
                reading = tuple(p for p in map(self.clean, parts) if p and not is_only_coordinators(p))
                if reading not in readings:
                    readings.append(reading)
        return readings

    def _expansions(
        self, text: str, long_forms: Dict[str, List[str]], is_name: Callable[[str], bool]
    ) -> List[str]:
        # A short form is expanded where it stands as a whole word, unless the
        # mention already spells out its long form ("spinal muscular atrophy (SMA)").
        lowered = text.lower()
        used = {
            short: forms
            for short, forms in long_forms.items()
            if short in text
            and _whole_word(short).search(text)
            and not any(form.lower() in lowered for form in forms)
        }
        if not used:
            return [text]
        longest_first = sorted(used, key=len, reverse=True)
        pattern = re.compile("|".join(_whole_word(short).pattern for short in longest_first))
        expansions = []
        for choice in islice(product(*used.values()), _MAX_EXPANSIONS):
            replacement = dict(zip(used, choice))
            expansions.append(pattern.sub(lambda m: replacement[m.group()], text))
        if is_name(self.clean(text)):
            expansions.append(text)
        return expansions


def _whole_word(form: str) -> "re.Pattern[str]":
    return re.compile(r"(?<!\w)" + re.escape(form) + r"(?!\w)")
