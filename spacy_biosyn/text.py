"""Text normalization shared by dictionary names and mentions, and the
optional spelling corrections applied to mentions.

BioSyn lower-cases, replaces every ASCII punctuation character by a space and
collapses whitespace. Names and mentions must go through the same function, or
their tf-idf and dense vectors stop being comparable.
"""
import re
import string
from pathlib import Path
from typing import Dict, Iterator, Tuple, Union

_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]")
_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower-case, punctuation to spaces, whitespace collapsed and stripped.

    Returns "" for text made only of punctuation and spaces: callers treat that
    as "nothing to link".
    """
    text = _PUNCTUATION.sub(" ", text.lower())
    return _WHITESPACE.sub(" ", text).strip()


def numbered_lines(path: Union[str, Path]) -> Iterator[Tuple[int, str]]:
    """(line number, line) for every non-blank line of a UTF-8 file, BOM and
    CRLF tolerated: what each line-based reader needs to name a bad line."""
    with Path(path).open(encoding="utf-8-sig") as f:
        for number, line in enumerate(f, start=1):
            line = line.rstrip("\r\n")
            if line.strip():
                yield number, line


def read_corrections(path: Union[str, Path]) -> Dict[str, str]:
    """A `misspelling||correction` file (BioSyn's ncbi-spell-check.txt) as
    {normalized word: normalized replacement}. Keys must be single words,
    because corrections are applied word by word."""
    path = Path(path)
    corrections: Dict[str, str] = {}
    for number, line in numbered_lines(path):
        wrong, sep, right = line.partition("||")
        wrong, right = normalize(wrong), normalize(right)
        if not sep or not wrong or not right or " " in wrong:
            raise ValueError(
                f"{path}, line {number}: expected 'misspelled-word||correction', "
                f"found {line[:80]!r}"
            )
        corrections[wrong] = right
    if not corrections:
        raise ValueError(f"{path}: the corrections file has no 'word||correction' lines")
    return corrections


def correct(text: str, corrections: Dict[str, str]) -> str:
    """Replace whole words of a normalized text by their corrections."""
    if not corrections:
        return text
    return " ".join(corrections.get(word, word) for word in text.split(" "))
