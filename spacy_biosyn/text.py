"""Text normalization shared by dictionary names and mentions.

BioSyn lower-cases, replaces every ASCII punctuation character by a space and
collapses whitespace. Names and mentions must go through the same function, or
their tf-idf and dense vectors stop being comparable.
"""
import re
import string

_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")
_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower-case, punctuation to spaces, whitespace collapsed and stripped.

    Returns "" for text made only of punctuation and spaces: callers treat that
    as "nothing to link".
    """
    text = _PUNCTUATION.sub(" ", text.lower())
    return _WHITESPACE.sub(" ", text).strip()
