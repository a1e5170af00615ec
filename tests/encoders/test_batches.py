"""Texts are encoded in batches of the same number of word pieces, as near
as can be, split where padding would cost more than another batch, and
every vector comes back in its text's place."""
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


def _batches_of(pieces, batch_size, padding_tokens, run_tokens=None):
    batches = []

    def embed(batch):
        batches.append(sorted(pieces[text] for text in batch))
        return np.zeros((len(batch), 1), dtype=np.float32)

    encode_in_batches(list(pieces), 1, batch_size, embed, lambda batch: [pieces[text] for text in batch],
                      padding_tokens, run_tokens)
    return batches


def test_a_few_long_mentions_get_a_batch_of_their_own_instead_of_padding_the_short_ones():
    # Ten mentions of 4 pieces, three of 20: one batch would pad the ten by 160 tokens.
    pieces = {**{f"short {i}": 4 for i in range(10)}, **{f"long {i}": 20 for i in range(3)}}
    assert _batches_of(pieces, 128, 32) == [[4] * 10, [20] * 3]
    # Without a bound on padding, batch_size alone splits them, as PyTorch's encoder batches.
    assert _batches_of(pieces, 128, None) == [[4] * 10 + [20] * 3]


def test_padding_within_the_bound_keeps_one_batch_and_batch_size_still_splits():
    pieces = {"a": 3, "b": 3, "c": 4, "d": 4, "e": 5}  # padded to 5: 2 + 2 + 1 + 1 = 6 tokens
    assert _batches_of(pieces, 128, 6) == [[3, 3, 4, 4, 5]]
    assert _batches_of(pieces, 128, 5) == [[3, 3, 4, 4], [5]]
    assert _batches_of(pieces, 2, 32) == [[3, 3], [4, 4], [5]]


def test_a_run_holds_no_more_tokens_padding_included_than_its_bound():
    # ONNX Runtime's arena keeps what the largest run needed: long mentions come in fewer a run.
    pieces = {**{f"short {i}": 4 for i in range(8)}, **{f"long {i}": 10 for i in range(5)}}
    assert _batches_of(pieces, 128, None, 20) == [[4] * 5, [4] * 3, [10] * 2, [10] * 2, [10]]
    # A text longer than the bound still gets a run, alone.
    assert _batches_of({"a": 30, "b": 30}, 128, None, 20) == [[30], [30]]
    assert _batches_of(pieces, 128, None, None) == [[4] * 8 + [10] * 5]


def test_the_onnx_encoder_gives_the_same_vectors_however_the_texts_are_batched(tiny_encoder):
    encoder = OnnxEncoder(tiny_encoder, batch_size=64).load()
    texts = ["ab", "abcdefghij" * 2, "abc", "a", "abcdefgh", "abcd", "b"]
    together = encoder.encode(texts)
    np.testing.assert_allclose(together, np.vstack([encoder.encode([t]) for t in texts]), rtol=0, atol=1e-6)


def test_the_onnx_encoder_gives_a_few_long_mentions_a_batch_of_their_own(tiny_encoder, monkeypatch):
    encoder = OnnxEncoder(tiny_encoder).load()  # its tokens: [CLS], a letter each, [SEP]
    sizes = []
    embed = encoder._embed
    monkeypatch.setattr(encoder, "_embed", lambda batch: sizes.append(len(batch)) or embed(batch))
    encoder.encode(["abc"] * 10 + ["abcdefghijklmnopq"] * 3)  # padding the ten to 19 tokens: 140
    assert sizes == [10, 3]


def test_weights_that_overflow_float32_are_refused_naming_the_encoder_and_the_text(tiny_encoder, tmp_path):
    """Finite weights, each within float32, whose products overflow at run
    time: a saved file cannot be checked for that, the vectors can. (ONNX
    Runtime's fused layer norm makes such vectors zeros, not NaN.)"""
    import pytest
    from transformers import AutoModel, AutoTokenizer

    from spacy_biosyn.encoders.transformer import TransformerEncoder
    from spacy_biosyn.errors import BiosynError

    model = AutoModel.from_pretrained(tiny_encoder)
    model.encoder.layer[0].intermediate.dense.weight.data *= 1e37
    model.save_pretrained(tmp_path / "overflowing")
    AutoTokenizer.from_pretrained(tiny_encoder).save_pretrained(tmp_path / "overflowing")
    encoder = TransformerEncoder(str(tmp_path / "overflowing")).load()
    with pytest.raises(BiosynError, match=rf"^the encoder {tmp_path / 'overflowing'} gave a vector holding NaN or "
                                          r"infinity for 'breast cancer' and 0 more of a batch of 1: its weights "
                                          "overflow float32"):
        encoder.encode(["breast cancer"])
