"""Mentions that are everyday English, not concepts: "a", "the", "protein",
"of the". An NER's false positives and an entity ruler's loose patterns
give such spans, and a transformer scores them close to some short name
("a" 0.93 against a MEDIC name with all-MiniLM-L6-v2, above most right
links), so no score threshold can tell them apart without dropping right
links; their words can.

A mention is everyday English when every word of it is frequent in
English (at least `FREQUENT` on wordfreq's Zipf scale, the log10 of uses
per billion words: about the 4,000 most frequent words), and either all of
them are function words (a language's stop words, which the pipe takes from
spaCy's English: "the", "is", "as", "all"), or one is not and neither it nor the mention is a name of the
vocabulary ("pain", "the pain" and "death" link to MEDIC's concepts;
"protein" and "sleep" are no names). A mention written in capitals is an acronym ("AS", "ALL", "CAN"
name diseases) and is never everyday English; one without a letter
("1", "2.5") is, since a number names no concept. Both lists are well kept and
installed with their packages: nothing is downloaded.
"""
from functools import lru_cache
from typing import Callable, Collection, FrozenSet

from .text import normalize

FREQUENT = 4.5


def function_words(stop_words: Collection[str]) -> FrozenSet[str]:
    """A language's stop words as function words here: "ca" is spaCy's
    tokenizer's piece of "can't" there, and calcium's symbol here."""
    return frozenset(stop_words) - {"ca"}


@lru_cache(maxsize=1)
def _wordfreq():
    # Imported at the first mention, not when spaCy loads the factory: wordfreq
    # finds its data with inspect.stack(), whose cost grows with the stack's
    # depth and with sys.modules; from inside spaCy's entry-point loading,
    # torch imported, that took 0.78 s against 0.36 s from a shallow stack.
    import wordfreq

    return wordfreq


@lru_cache(maxsize=100_000)
def _is_frequent(word: str) -> bool:
    # The small list has every English word down to Zipf 3 with the large
    # list's figure (the 3,051 words at FREQUENT or above are the same in
    # both) and loads in 0.02 s against 0.22 s.
    return _wordfreq().zipf_frequency(word, "en", wordlist="small") >= FREQUENT


def is_everyday_english(text: str, is_name: Callable[[str], bool], function_words: Collection[str]) -> bool:
    """Whether a mention as written is everyday English, not a concept;
    `is_name` says whether a normalized string is a name of the vocabulary,
    `function_words` which words are function words (`function_words()`)."""
    letters = [c for c in text if c.isalpha()]
    if not letters:
        return any(c.isdigit() for c in text)  # punctuation alone is read as nothing to link anyway
    if all(c.isupper() for c in letters):
        return False
    # wordfreq's own words ("wasn't" is one), as its frequencies count them
    words = _wordfreq().tokenize(text, "en")
    if not words or not all(map(_is_frequent, words)):
        return False
    content_words = [word for word in words if word not in function_words]
    if not content_words:
        return True
    # "pain" and "the pain" name MEDIC's concept; "protein" and "the protein" none
    return len(content_words) == 1 and not (is_name(normalize(text)) or is_name(normalize(content_words[0])))
