"""Text normalization shared by dictionary names and mentions, and the
optional spelling corrections applied to mentions; and the opening of
every text file read (vocabularies, corpora), gzip-compressed or not,
within the caps of `input_limits`.

BioSyn lower-cases, replaces every ASCII punctuation character by a space and
collapses whitespace. Here the text is first put in Unicode's NFKC form (full-
width letters, ligatures and non-breaking spaces become their plain forms),
and the typographic quotes, hyphens, dashes and primes count as punctuation
too, so "Crohn’s disease" and "Crohn's disease" read alike. Names and mentions
must go through the same function, or their tf-idf and dense vectors stop
being comparable.
"""
import gzip
import io
import os
import re
import string
import unicodedata
import zlib
from functools import lru_cache, partial
from pathlib import Path
from typing import BinaryIO, Dict, Iterator, NamedTuple, Optional, Tuple, Union

from ..errors import BiosynError

# ASCII punctuation, and what NFKC leaves of the typographic kind.
_UNICODE_PUNCTUATION = "‐‑‒–—―⁃−‘’‚‛“”„‟‹›«»′″‴•·¡¿§¶†‡"
_PUNCTUATION = re.compile("[" + re.escape(string.punctuation + _UNICODE_PUNCTUATION) + "]")
# Invisible characters that would split or glue words: soft hyphen, zero-width
# space and joiners, byte-order mark.
_INVISIBLE = re.compile("[\u00ad\u200b\u200c\u200d\u2060\ufeff]")
_WHITESPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    """Lower-case, punctuation to spaces, whitespace collapsed and stripped.

    Returns "" for text made only of punctuation and spaces: callers treat that
    as "nothing to link". Lone surrogates (from broken UTF-16 decoding) become
    spaces: tokenizers refuse them.
    """
    text = text.encode("utf-8", "replace").decode("utf-8")  # a lone surrogate becomes "?"
    text = _INVISIBLE.sub("", unicodedata.normalize("NFKC", text))
    text = _PUNCTUATION.sub(" ", text.lower())
    return _WHITESPACE.sub(" ", text).strip()


# First bytes of files that are not UTF-8 text, with what to do about them.
_NOT_UTF8 = {b"\xff\xfe": "is UTF-16: convert it to UTF-8", b"\xfe\xff": "is UTF-16: convert it to UTF-8"}
_GZIP = b"\x1f\x8b"


class InputLimits(NamedTuple):
    """What one input file may cost. A line's bytes: four times the longest
    text a pipeline links by default (nlp.max_length, 1,000,000 characters:
    at most 4 MB in UTF-8), where a PubTator abstract line holds a few KB
    and a vocabulary line less than one; so a small .gz unpacking to a line
    of a gigabyte is refused within a second, not read for a minute into
    gigabytes of memory. The bytes a .gz unpacks to: twice the largest file
    read (UMLS's MRCONSO.RRF, some 2 GB); a file that is not compressed is
    read as large as it is."""

    line_bytes: int = 16 * 2**20
    unpacked_bytes: int = 4 * 2**30


# The environment variables that set each limit, in bytes.
LIMIT_VARIABLES = InputLimits("SPACY_BIOSYN_MAX_LINE_BYTES", "SPACY_BIOSYN_MAX_UNPACKED_BYTES")


@lru_cache(maxsize=None)
def input_limits() -> InputLimits:
    """InputLimits, each as its variable in LIMIT_VARIABLES says, read once;
    BiosynError naming a variable that holds no positive whole number."""
    limits = {}
    for field, variable in LIMIT_VARIABLES._asdict().items():
        value = os.environ.get(variable)
        if value is not None:
            if not re.fullmatch("[0-9]+", value.strip()) or int(value) < 1:
                raise BiosynError(f"{variable}={value!r}: expected a positive whole number of bytes")
            limits[field] = int(value)
    return InputLimits(**limits)


def open_maybe_gzipped(path: Union[str, Path]) -> BinaryIO:
    """A file's bytes, unpacked where it is gzip-compressed (CTD's
    CTD_diseases.tsv.gz, PubTator Central's downloads), whatever its name,
    within `input_limits`: a line read (readline, iteration) longer than
    its cap, or a .gz unpacking past its cap, raises BiosynError naming the
    file and the line."""
    path = Path(path)
    with path.open("rb") as f:
        compressed = f.read(2) == _GZIP
    limits = input_limits()
    if compressed:
        return _Capped(gzip.open(path, "rb"), path, limits.line_bytes, limits.unpacked_bytes)
    return _Capped(path.open("rb"), path, limits.line_bytes, None)


# What a whole read takes at a time.
_PIECE = 2**20


class _Capped(io.BufferedIOBase):
    """`raw`'s bytes, refused past `line_bytes` in a line read by readline
    or iteration (a reader that holds a line at a time), or past
    `unpacked_bytes` in all; the lines are counted, for an error to name
    the one at fault."""

    def __init__(self, raw: BinaryIO, path: Path, line_bytes: int, unpacked_bytes: Optional[int]):
        self._raw, self.name = raw, str(path)
        self._line_bytes, self._unpacked_bytes = line_bytes, unpacked_bytes
        self._read = self._lines = 0

    def readable(self) -> bool:
        return True

    def read(self, size: Optional[int] = -1) -> bytes:
        if size is None or size < 0:  # in pieces, so that a .gz past the cap is refused before it is all held
            return b"".join(iter(partial(self.read, _PIECE), b""))
        return self._counted(self._raw.read(size))

    def read1(self, size: int = -1) -> bytes:
        return self.read(_PIECE if size < 0 else size)

    def readline(self, size: Optional[int] = -1) -> bytes:
        cap = self._line_bytes
        line = self._raw.readline(cap + 1 if size is None or size < 0 else min(size, cap + 1))
        if len(line) > cap and not line.endswith(b"\n"):
            raise BiosynError(f"{self.name}, line {self._lines + 1}: over {cap:,} bytes long, more than a line of "
                              f"text or of a vocabulary holds (set {LIMIT_VARIABLES.line_bytes} to allow it)")
        return self._counted(line)

    def _counted(self, data: bytes) -> bytes:
        cap = self._unpacked_bytes
        if cap is not None and self._read + len(data) > cap:
            line = self._lines + data.count(b"\n", 0, cap - self._read) + 1  # the line that passes the cap
            raise BiosynError(f"{self.name}, line {line}: unpacks to over {cap:,} bytes, the most a .gz may "
                              f"(set {LIMIT_VARIABLES.unpacked_bytes} to allow more)")
        self._read += len(data)
        self._lines += data.count(b"\n")
        return data

    def close(self) -> None:
        self._raw.close()
        super().close()


def text_lines(path: Union[str, Path]) -> Iterator[Tuple[int, str]]:
    """(line number, line without its end) for every line of a UTF-8 file,
    gzip-compressed or not, BOM and CRLF tolerated; a file that is not UTF-8
    text raises BiosynError naming it and the line where decoding failed."""
    path = Path(path)
    if path.is_dir():
        raise BiosynError(f"{path} is a folder; give the vocabulary or corpus file in it")
    try:
        yield from _text_lines(path)
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:  # a .gz cut short, or not gzip after all
        raise BiosynError(f"{path}: cannot be read ({type(error).__name__}: {error})") from None
    except FileNotFoundError:
        raise BiosynError(f"{path}: no such file") from None


def _text_lines(path: Path) -> Iterator[Tuple[int, str]]:
    with open_maybe_gzipped(path) as f:
        head = f.read(4096)
    if head[:2] in _NOT_UTF8:
        raise BiosynError(f"{path} {_NOT_UTF8[head[:2]]}")
    # UTF-16 without a byte-order mark decodes as UTF-8 with a NUL in every
    # other byte, which no text file holds.
    nul = head.find(b"\x00")
    if nul >= 0:
        raise BiosynError(
            f"{path} holds NUL bytes (byte {nul + 1}): it is UTF-16 without a byte-order mark, "
            "or not text; convert it to UTF-8"
        )
    with open_maybe_gzipped(path) as f:  # decoded line by line, so an error names its line
        for number, raw in enumerate(f, start=1):
            nul = raw.find(b"\x00")
            if nul >= 0:  # past the first 4,096 bytes too: no text file holds one
                raise BiosynError(
                    f"{path}, line {number}: holds a NUL byte (byte {nul + 1} of the line); "
                    "a text file holds none: remove it, or convert the file to UTF-8"
                )
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise BiosynError(
                    f"{path}, line {number}: not UTF-8 text ({error.reason} at byte {error.start + 1} of "
                    "the line); convert the file to UTF-8 (latin-1 and UTF-16 files must be converted)"
                ) from None
            yield number, (line[1:] if number == 1 and line.startswith("\ufeff") else line).rstrip("\r\n")


def without_lone_surrogates(text: str) -> str:
    """`text` with each lone surrogate (JSON's "\\ud800", broken UTF-16)
    replaced by U+FFFD, one character for one: no UTF-8 form exists for
    one, so spaCy's tokenizer and every native library refuse the text."""
    return _LONE_SURROGATE.sub("\ufffd", text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def numbered_lines(path: Union[str, Path]) -> Iterator[Tuple[int, str]]:
    """(line number, line) for every non-blank line: what each line-based
    reader needs to name a bad line."""
    return ((number, line) for number, line in text_lines(path) if line.strip())


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
