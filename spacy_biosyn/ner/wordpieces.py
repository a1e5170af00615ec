"""The transformer NER's word pieces, read in time linear in the text.

spacy-curated-transformers' BERT piece encoder splits a token at
punctuation by copying the rest of it once per character, and its WordPiece
search tries every prefix of every word: one unbroken token costs time
quadratic in its length or worse (measured on the README's pipeline: 2k
characters 0.6 s, 16k 88 s, 200k over ten minutes). A DNA sequence or a
base64 blob in a corpus stopped `link-corpus`.

`spacy_biosyn.BertWordpieceEncoder.v1` is that encoder with two of Hugging
Face BERT's own rules, so it reads every ordinary token exactly as before:
- a word of more than `MAX_WORD_CHARS` characters (after the split at
  punctuation) is one `[UNK]` piece, as BERT's WordpieceTokenizer's
  `max_input_chars_per_word`; long tokens are split at punctuation by one
  regular-expression pass;
- a doc with no piece at all (" ", "\\n") gives each of its whitespace
  tokens an `[UNK]` piece: with no piece in a batch, the NER's layers
  received a zero-width input and raised. Whitespace never starts an
  entity, so nothing is found there either way.

Its model has the name and attributes of the encoder it wraps, so a
pipeline trained with `spacy-curated-transformers.BertWordpieceEncoder.v1`
loads with this one named in its config instead. `doc_pieces` reads the
same pieces without spacy-curated-transformers, for the NER in ONNX Runtime.
"""
import unicodedata
from typing import Callable, List, Tuple

from spacy.util import registry
from ..parts import BERT_WORDPIECE_ENCODER

# Hugging Face BertTokenizer's max_input_chars_per_word.
MAX_WORD_CHARS = 100


def bert_words(text: str) -> List[str]:
    """`text` split at punctuation as BERT splits it (each punctuation
    character a word of its own), in one pass."""
    words, start = [], 0
    for i, char in enumerate(text):
        if _is_punctuation(char):
            if start < i:
                words.append(text[start:i])
            words.append(char)
            start = i + 1
    if start < len(text):
        words.append(text[start:])
    return words


def _is_punctuation(char: str) -> bool:
    # BERT's rule: the ASCII symbols, and every Unicode P* character.
    return char in _ASCII_SYMBOLS or unicodedata.category(char).startswith("P")


_ASCII_SYMBOLS = frozenset(chr(cp) for cp in [*range(33, 48), *range(58, 65), *range(91, 97), *range(123, 127)])


@registry.architectures(BERT_WORDPIECE_ENCODER)
def build_bert_wordpiece_encoder():
    """spacy-curated-transformers' BERT WordPiece encoder, in linear time."""
    from spacy_curated_transformers.tokenization.wordpiece_encoder import build_bert_wordpiece_encoder_v1
    from thinc.api import Model

    wrapped = build_bert_wordpiece_encoder_v1()
    return Model(wrapped.name, forward=_forward, attrs=dict(wrapped.attrs))


def _forward(model, docs, is_train: bool) -> Tuple[list, object]:
    from thinc.api import Ragged

    attrs = model.attrs
    pieces = []
    for doc in docs:
        # Short tokens take the wrapped encoder's own split, so ordinary text is read exactly as it was.
        flat, lengths = doc_pieces(doc, attrs["wordpiece_processor"], lowercase=attrs["lowercase"],
                                   strip_accents=attrs["strip_accents"], split=attrs["preprocess"],
                                   marks=(attrs["bos_piece"], attrs["eos_piece"], attrs["unk_piece"]))
        pieces.append(Ragged(model.ops.asarray1i(flat), model.ops.asarray1i(lengths)))
    return pieces, lambda d_pieces: []


def doc_pieces(
    doc, processor, *, lowercase: bool, strip_accents: bool, split: Callable[[str], List[str]] = bert_words,
    marks: Tuple[str, str, str] = ("[CLS]", "[SEP]", "[UNK]"),
) -> Tuple[List[int], List[int]]:
    """`doc`'s word piece ids (curated-tokenizers' WordPieceProcessor
    `processor`), the first (`marks` [0]) before all and the last after,
    and how many each token has: 1, then one count per token, then 1.
    `split` splits a token of up to MAX_WORD_CHARS characters into words."""
    first, last, unknown = (processor.get_initial(mark) for mark in marks)
    per_token = [_token_pieces(token, processor, unknown, lowercase, strip_accents, split) for token in doc]
    if not any(per_token):
        per_token = [[unknown] for _ in per_token]
    flat = [first, *(piece for token_pieces in per_token for piece in token_pieces), last]
    return flat, [1, *map(len, per_token), 1]


def _token_pieces(token, processor, unknown: int, lowercase: bool, strip_accents: bool, split) -> List[int]:
    if token.is_space:
        return []
    text = token.lower_ if lowercase else token.text
    if strip_accents:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    words = split(text) if len(text) <= MAX_WORD_CHARS else bert_words(text)
    return [
        unknown if piece == -1 else piece
        for word in words
        for piece in ([-1] if len(word) > MAX_WORD_CHARS else processor.encode(word)[0])
    ]
