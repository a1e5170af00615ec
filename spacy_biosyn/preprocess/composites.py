"""Composite mentions: "breast and ovarian cancer" -> "breast cancer", "ovarian cancer".

BioSyn split composites offline with help from the gold CUIs; here the split
is decided from the mention's own words. The mention is cut at its
coordinators ("and", "or", "and/or", a list comma, a slash between words)
into conjuncts, and the words the conjuncts share are given back to each:

- a shared head after the last conjunct: "c6 or c7 deficiency",
  "breast, ovarian and prostate cancers";
- words before the first conjunct when it is longer than the last one:
  "type 1 and 2 diabetes", "inherited breast and ovarian cancer",
  "ventricular tachycardia and fibrillation";
- a head ending in a preposition: "impairments of learning and memory";
- nothing, when the conjuncts end alike: "breast cancer or ovarian cancer".

A mention that is a dictionary name as a whole ("hand, foot and mouth
disease") is never split, and a comma alone does not coordinate ("emerin,
deficiency"): a wrong split costs as much as a missed one.
"""
import re
from bisect import bisect_left
from typing import List

# A list comma may be followed by and/or; a slash coordinates only between letters
# ("cleft lip/palate"), not in "1/2".
_COORDINATOR = re.compile(
    r"\s*,\s*(?:(?:and/or|and|or)\s+)?|\s+(?:and/or|and|or)\s+|(?<=[^\W\d_])/(?=[^\W\d_])",
    re.IGNORECASE,
)
_CONJUNCTION = re.compile(r"\s(?:and|or)\s|(?<=[^\W\d_])/(?=[^\W\d_])", re.IGNORECASE)
_PREPOSITIONS = {"of", "in", "to", "on", "with"}
_COORDINATING_WORDS = {"and", "or"}
# The longest coordination in NCBI Disease and BC5CDR has 5 conjuncts; a text
# cut into more than this is a list or garbage, not one mention, and is left
# whole (a 50,000-character one made 1,234 parts, 3.5 s a pass).
MAX_PARTS = 16


def is_coordinated(text: str) -> bool:
    """Whether the text joins anything with and, or or a slash."""
    return _CONJUNCTION.search(text) is not None


def is_only_coordinators(text: str) -> bool:
    """Whether a normalized text holds nothing but "and" and "or": no part to link."""
    return bool(text) and set(text.split()) <= _COORDINATING_WORDS


def split_composite(text: str) -> List[str]:
    """The parts of a composite mention, or [text] when it is not one. A
    composite that is also a dictionary name as written is read both ways
    by the caller (readings.py), which knows the dictionary."""
    if not is_coordinated(text):
        return [text]
    segments = [_words(s.strip()) for s in _COORDINATOR.split(text)]
    # "hyper- or dyskinetic" shares a suffix inside a word: left whole.
    if len(segments) > MAX_PARTS or any(words == [""] or words[-1].endswith("-") for words in segments):
        return [text]
    first, *middle, last = segments
    prepositions = [i for i, word in enumerate(first[:-1]) if word.lower() in _PREPOSITIONS]
    if len(first) > 1 and first[-1].lower() == last[-1].lower():
        parts = segments  # each conjunct is whole: "breast cancer or ovarian cancer"
    elif prepositions:
        head = first[: prepositions[-1] + 1]
        conjuncts = [first[len(head):], *middle, last]
        parts = [head + conjunct for conjunct in conjuncts]
    else:
        # The last conjunct is one word unless it repeats the first one's opening
        # word ("stage ii and stage iii colorectal carcinomas").
        size = len(first) if last[0].lower() == first[0].lower() and len(last) > len(first) else 1
        shared_head = last[size:]
        prefix = first[:-size] if len(first) > size else []
        conjuncts = [first[len(prefix):], *middle, last[:size]]
        parts = [prefix + conjunct + shared_head for conjunct in conjuncts]
    return list(dict.fromkeys(" ".join(words) for words in parts))


def _words(text: str) -> List[str]:
    """The words of a conjunct: split at runs of whitespace, except inside
    parentheses and before one, so that "atonic (minor motor)" is one word.

    A run lies inside parentheses when the next parenthesis after it closes
    one. Finding that next parenthesis by a regex lookahead at every run was
    quadratic (82 s for a 200,000-character mention); here it is a binary
    search in the list of parenthesis positions. Before "(" a run of several
    whitespace characters breaks all but its last, as that regex did.
    """
    parens = [i for i, char in enumerate(text) if char in "()"]
    words, start = [], 0
    for run in re.finditer(r"\s+", text):
        begin, end = run.span()
        following = bisect_left(parens, end)
        if following < len(parens) and text[parens[following]] == ")":
            continue
        if end < len(text) and text[end] == "(":
            end -= 1
            if end == begin:
                continue
        words.append(text[start:begin])
        start = end
    words.append(text[start:])
    return words
