"""Texts are encoded in batches of the same number of word pieces, as near
as can be, and every vector comes back in its text's place."""
import numpy as np

from spacy_biosyn.encoders.base import encode_in_batches
from spacy_biosyn.encoders.onnx import OnnxEncoder


def test_batches_hold_texts_of_one_token_count_and_rows_keep_their_place():
    # Character lengths mislead: "hiv" is one piece, "xyzqk" five.
    texts = ["xyzqk", "hiv", "qzxv", "cancer", "zqxj", "lung", "xqzv", "renal"]
    pieces = {"xyzqk": 5, "hiv": 1, "qzxv": 4, "cancer": 1, "zqxj": 4, "lung": 1, "xqzv": 4, "renal": 1}
    batches = []

    def embed(batch):
        batches.append(batch)
        return np.array([[len(text)] for text in batch], dtype=np.float32)

    out = encode_in_batches(texts, 1, 4, embed, lambda batch: [pieces[text] for text in batch])
    assert [sorted(pieces[text] for text in batch) for batch in batches] == [[1, 1, 1, 1], [4, 4, 4, 5]]
    np.testing.assert_array_equal(out[:, 0], [len(text) for text in texts])


def test_the_onnx_encoder_counts_word_pieces_without_padding(tiny_encoder):
    encoder = OnnxEncoder(tiny_encoder).load()
    # The tiny encoder's vocabulary is characters: a word is [CLS], its letters, [SEP].
    assert encoder._count_tokens(["ab", "abcd", ""]) == [4, 6, 2]
