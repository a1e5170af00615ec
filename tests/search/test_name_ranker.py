"""The kb layer's NameRanker, built as a pipe's engine builds one for its
dictionary: mention strings in, ranked names out."""
import pytest
from helpers import assert_same_ranking

from spacy_biosyn import Dictionary
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.search.index import ExactIndex
from spacy_biosyn.search.name_ranker import FixedSettings, NameRanker


# A stored vector is int16-rounded by default: its scores move by that rounding, never its ranking here.
@pytest.mark.parametrize("precision, tolerance", [("float32", 1e-5), ("int16", 1e-4)])
def test_a_mention_that_is_a_name_takes_its_stored_vectors_and_ranks_as_if_encoded(
    tiny_encoder, disease_dictionary, monkeypatch, precision, tolerance
):
    # The kb layer's NameRanker, as the pipe's engine builds one for its dictionary.
    linker = NameRanker(TransformerEncoder(tiny_encoder).load(), ExactIndex(vector_precision=precision),
                        lambda: FixedSettings(0.125))
    linker.build(Dictionary.from_file(disease_dictionary))
    texts = ["breast cancer", "ovarian tumour", "type 2 diabetes", "breast cancer"]
    encoded, transformed = [], []
    encode, transform = linker.encoder.encode, linker.sparse.transform
    monkeypatch.setattr(linker.encoder, "encode", lambda batch: encoded.append(list(batch)) or encode(batch))
    monkeypatch.setattr(linker.sparse, "transform", lambda batch: transformed.append(list(batch)) or transform(batch))
    distinct = list(dict.fromkeys(texts))
    _, sparse_rows = linker._queries(distinct)
    assert transformed == [["ovarian tumour"]]
    assert (sparse_rows != transform(distinct)).nnz == 0  # the stored tf-idf rows, in the texts' order
    encoded.clear()
    reused = linker.rank(texts, 5)
    assert encoded == [["ovarian tumour"]]
    monkeypatch.setattr(type(linker.index), "holds_exact_vectors", property(lambda self: False))
    every_text_encoded = linker.rank(texts, 5)
    assert encoded[-1] == ["breast cancer", "ovarian tumour", "type 2 diabetes"]
    for a, b in zip(reused, every_text_encoded):
        assert [c.name for c in a] == [c.name for c in b]
        assert [c.score for c in a] == pytest.approx([c.score for c in b], abs=tolerance)


def test_faiss_is_filled_as_the_names_are_encoded_never_holding_every_vector(tiny_encoder, monkeypatch):
    from helpers import THOUSAND_NAMES

    from spacy_biosyn.encoders.vector_cache import EncodedNames
    from spacy_biosyn.search.faiss_index import FaissIndex

    dictionary = Dictionary.from_pairs((f"D{i:06d}", name) for i, name in enumerate(THOUSAND_NAMES))
    encoder = TransformerEncoder(tiny_encoder).load()
    held_at_once = []
    whole = EncodedNames.whole
    monkeypatch.setattr(EncodedNames, "whole", lambda self: held_at_once.append(len(self)) or whole(self))

    def built(vectors=None):
        linker = NameRanker(encoder, FaissIndex("IVF8,SQ8", nprobe=8, max_training_names=200), lambda: FixedSettings(0.125))
        linker.build(dictionary, vectors=vectors)
        return linker

    streamed = built()
    assert held_at_once == [200]  # the training sample; the rest came a chunk at a time
    from_every_vector = built(vectors=encoder.encode(list(dictionary.names)))
    texts = ["renal cancer type 3", "brest tumour type 7", "lung fibrosis"]
    for a, b in zip(streamed.rank(texts, 5), from_every_vector.rank(texts, 5)):
        assert_same_ranking([c.name for c in a], [c.score for c in a], [c.name for c in b], [c.score for c in b])
