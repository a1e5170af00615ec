"""A name is encoded once per encoder: later builds read its vector from the
store, a store that is not the encoder's is never used, and a store that
cannot be read or written never costs the build."""
import sqlite3

import numpy as np
import pytest
from helpers import THOUSAND_NAMES as NAMES

from spacy_biosyn.encoders import vector_cache
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.encoders.vector_cache import encode_names


class Counting:
    """The encoder, counting the names it is asked to encode."""

    def __init__(self, encoder):
        self.encoder, self.encoded = encoder, 0

    def __getattr__(self, name):
        return getattr(self.encoder, name)

    def encode(self, texts):
        self.encoded += len(texts)
        return self.encoder.encode(texts)


@pytest.fixture
def encoder(tiny_encoder):
    return TransformerEncoder(tiny_encoder, device="cpu").load()


def test_a_second_build_encodes_only_the_names_it_has_not_seen(encoder, tmp_path):
    first = Counting(encoder)
    vectors = encode_names(first, NAMES, tmp_path)
    assert first.encoded == len(NAMES)
    np.testing.assert_allclose(vectors, encoder.encode(NAMES), atol=1e-5)

    # Another vocabulary sharing 900 names: 100 are new; the probe re-encodes 8 known ones.
    shared_and_new = NAMES[:900] + [f"{name} variant" for name in NAMES[:100]]
    second = Counting(encoder)
    again = encode_names(second, shared_and_new, tmp_path)
    assert second.encoded == 100 + vector_cache.N_PROBES
    np.testing.assert_allclose(again, encoder.encode(shared_and_new), atol=1e-5)


def test_another_encoders_store_is_never_used(encoder, other_tiny_encoder, tmp_path):
    encode_names(encoder, NAMES, tmp_path)
    other = TransformerEncoder(other_tiny_encoder, device="cpu").load()
    np.testing.assert_allclose(encode_names(other, NAMES, tmp_path), other.encode(NAMES), atol=1e-5)
    assert len(list(tmp_path.glob("*.sqlite"))) == 2


def test_a_store_whose_vectors_were_replaced_is_removed_and_the_names_encoded(encoder, tmp_path):
    encode_names(Counting(encoder), NAMES, tmp_path)  # a store is kept per runtime: this one's
    (store,) = tmp_path.glob("*.sqlite")
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT name, vector FROM vectors").fetchall()
        db.executemany("UPDATE vectors SET vector = ? WHERE name = ?",
                       [((-np.frombuffer(vector, dtype=np.float32)).tobytes(), name) for name, vector in rows])
    counting = Counting(encoder)
    with pytest.warns(UserWarning, match="not this encoder's"):
        vectors = encode_names(counting, NAMES, tmp_path)
    np.testing.assert_allclose(vectors, encoder.encode(NAMES), atol=1e-5)
    assert counting.encoded == len(NAMES) + vector_cache.N_PROBES


@pytest.mark.parametrize("damage", ["garbage", "short vector"])
def test_a_store_sqlite_cannot_read_is_removed_and_the_names_encoded(encoder, tmp_path, damage):
    encode_names(encoder, NAMES, tmp_path)
    (store,) = tmp_path.glob("*.sqlite")
    if damage == "garbage":
        store.write_bytes(b"not a database" * 100)
    else:
        with sqlite3.connect(store) as db:
            db.execute("UPDATE vectors SET vector = ? WHERE name = ?", (b"\0" * 8, NAMES[3]))
    with pytest.warns(UserWarning, match=store.name):
        vectors = encode_names(encoder, NAMES, tmp_path)
    np.testing.assert_allclose(vectors, encoder.encode(NAMES), atol=1e-5)


def test_a_store_that_cannot_be_written_costs_a_warning_not_the_build(encoder, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("a file where the store's folder belongs")
    with pytest.warns(UserWarning, match="could not be kept"):
        vectors = encode_names(encoder, NAMES, blocked)
    np.testing.assert_allclose(vectors, encoder.encode(NAMES), atol=1e-5)


def test_few_names_or_an_encoder_without_a_weights_digest_are_not_stored(encoder, tmp_path):
    encode_names(encoder, NAMES[: vector_cache.MIN_CACHED_NAMES - 1], tmp_path)

    class NoDigest(Counting):
        weights_digest = None

    encode_names(NoDigest(encoder), NAMES, tmp_path)
    assert not list(tmp_path.iterdir())


def test_a_build_stopped_midway_resumes_where_it_stopped(encoder, tmp_path, monkeypatch):
    monkeypatch.setattr(vector_cache, "_CHUNK", 300)

    class Interruptible(Counting):  # one class for both runs: a store is kept per runtime
        stop_after = None

        def encode(self, texts):
            if self.stop_after is not None and self.encoded >= self.stop_after:
                raise KeyboardInterrupt
            return super().encode(texts)

    stopped = Interruptible(encoder)
    stopped.stop_after = 600  # two chunks
    with pytest.raises(KeyboardInterrupt):
        encode_names(stopped, NAMES, tmp_path)
    resumed = Interruptible(encoder)
    vectors = encode_names(resumed, NAMES, tmp_path)
    assert resumed.encoded == vector_cache.N_PROBES + len(NAMES) - 600
    np.testing.assert_allclose(vectors, encoder.encode(NAMES), atol=1e-5)


def test_a_name_given_twice_gets_its_vector_twice(encoder, tmp_path):
    names = NAMES + NAMES[:5]
    np.testing.assert_allclose(encode_names(encoder, names, tmp_path), encoder.encode(names), atol=1e-5)


def test_the_same_weights_with_another_tokenizer_keep_a_store_of_their_own(encoder, tmp_path):
    class Tokenized(Counting):  # the encoder, as if its tokenizer were another (cased, accents kept)
        def __init__(self, encoder, tokenizer_digest):
            super().__init__(encoder)
            self.tokenizer_digest = tokenizer_digest

    encode_names(Tokenized(encoder, encoder.tokenizer_digest), NAMES, tmp_path)
    cased = Tokenized(encoder, "another tokenizer")
    encode_names(cased, NAMES, tmp_path)
    assert cased.encoded == len(NAMES)  # nothing taken from the first store
    assert len(list(tmp_path.glob("*.sqlite"))) == 2


def test_a_store_another_build_holds_locked_is_left_alone_and_the_names_encoded(encoder, tmp_path, monkeypatch):
    encode_names(encoder, NAMES, tmp_path)
    (store,) = tmp_path.glob("*.sqlite")
    monkeypatch.setattr(vector_cache, "_BUSY_TIMEOUT_S", 0.1)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.warns(UserWarning, match="cannot be read now"):
            vectors = encode_names(encoder, NAMES, tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    np.testing.assert_allclose(vectors, encoder.encode(NAMES), atol=1e-5)
    assert store.is_file()


def test_a_build_whose_names_are_all_stored_never_loads_the_names_encoding(encoder, tmp_path):
    class WithNamesEncoding(Counting):  # as the ONNX encoder, whose bf16 names' encoding loads a model
        loads = 0

        def names_encoding(self):
            type(self).loads += 1
            return self.encode

    encode_names(WithNamesEncoding(encoder), NAMES, tmp_path)
    assert WithNamesEncoding.loads == 1
    again = WithNamesEncoding(encoder)
    np.testing.assert_allclose(encode_names(again, NAMES, tmp_path), encoder.encode(NAMES), atol=1e-5)
    assert WithNamesEncoding.loads == 1 and again.encoded == vector_cache.N_PROBES
