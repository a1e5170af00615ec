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
loads with this one named in its config instead.
"""
import unicodedata
from typing import List, Tuple

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

    processor = model.attrs["wordpiece_processor"]
    unknown = processor.get_initial(model.attrs["unk_piece"])
    first, last = processor.get_initial(model.attrs["bos_piece"]), processor.get_initial(model.attrs["eos_piece"])
    pieces = []
    for doc in docs:
        per_token = [_token_pieces(model, processor, unknown, token) for token in doc]
        if not any(per_token):
            per_token = [[unknown] for _ in per_token]
        flat = [first, *(piece for token_pieces in per_token for piece in token_pieces), last]
        lengths = [1, *map(len, per_token), 1]
        pieces.append(Ragged(model.ops.asarray1i(flat), model.ops.asarray1i(lengths)))
    return pieces, lambda d_pieces: []


def _token_pieces(model, processor, unknown: int, token) -> List[int]:
    if token.is_space:
        return []
    text = token.lower_ if model.attrs["lowercase"] else token.text
    if model.attrs["strip_accents"]:
        text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    # Short tokens take the wrapped encoder's own split, so ordinary text is read exactly as it was.
    words = model.attrs["preprocess"](text) if len(text) <= MAX_WORD_CHARS else bert_words(text)
    return [
        unknown if piece == -1 else piece
        for word in words
        for piece in ([-1] if len(word) > MAX_WORD_CHARS else processor.encode(word)[0])
    ]
