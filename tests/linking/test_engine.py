"""The linking engine without spaCy: mention strings and documents in,
what their spans will say out, as the biosyn_linker pipe says it."""
import pytest
from spacy.lang.en.stop_words import STOP_WORDS
from helpers import doc_with_ents, make_nlp

from spacy_biosyn import Abbreviation, LinkingEngine
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.linking.data_sources import DataSources
from spacy_biosyn.linking.linker_settings import LinkerSettings
from spacy_biosyn.linking.mentions import Mention, MentionBatch
from spacy_biosyn.search.index import ExactIndex


@pytest.fixture
def engine(tiny_encoder, disease_dictionary):
    engine = LinkingEngine("engine", LinkerSettings(sparse_weight=10.0), encoder=TransformerEncoder(tiny_encoder),
                           index=ExactIndex(), sources=DataSources(dictionary=disease_dictionary), stop_words=STOP_WORDS)
    engine.initialize()
    return engine


def test_mention_strings_link_alone_as_spans_of_the_pipe_would(engine, tiny_encoder, disease_dictionary):
    texts = ["Breast and ovarian cancer", "St. Vitus dance", "gout"]
    links = engine.link(texts)
    assert links[0].cui == "D001943|D010051"  # a composite: each part links to its concept
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    for text, link in zip(texts, links):
        span = nlp(doc_with_ents(nlp, text, text)).ents[0]
        assert (span._.cui, [c.name for c in span._.candidates]) == (link.cui, [c.name for c in link.candidates])
        # Encoded in another batch, float32 scores move in their last bits.
        assert span._.kb_ents == [(cui, pytest.approx(score, abs=1e-5)) for cui, score in link.kb_ents]


def test_a_batch_of_documents_links_each_mention_with_its_documents_abbreviations(engine):
    text = "Huntington disease (HD) runs in families. HD patients"
    batch = MentionBatch(
        texts=[text, "ovarian cancer"],
        abbreviations=[[Abbreviation("HD", "Huntington disease", 20, 0)], []],
        mentions=[Mention(0, "HD", 42, 44, "Disease"), Mention(1, "ovarian cancer", 0, 14, "Disease")],
    )
    linked = engine.link_batch(batch).mentions
    assert [m.readings[0] for m in linked] == [("huntington disease",), ("ovarian cancer",)]
    assert [m.links.cui for m in linked] == ["D006816", "D010051"]


def test_a_label_no_linker_serves_is_left_unlinked(tiny_encoder, disease_dictionary):
    settings = LinkerSettings(sparse_weight=10.0, dictionary_labels=["Disease"])
    engine = LinkingEngine("engine", settings, encoder=TransformerEncoder(tiny_encoder), index=ExactIndex(),
                           sources=DataSources(dictionary=disease_dictionary), stop_words=STOP_WORDS)
    assert engine.link(["gout", "gout"], label="Gene") == [None, None]
    assert engine.link(["gout"], label="disease")[0].candidates


def test_settings_change_only_through_configure_and_stay_checked(engine):
    engine.configure({"top_k": 2})
    assert engine.settings.top_k == 2 and len(engine.link(["breast cancer"])[0].kb_ents) <= 2
    with pytest.raises(ValueError, match="sparse_weight cannot be changed on a built pipe"):
        engine.configure({"sparse_weight": 1.0})
    with pytest.raises(ValueError, match="top_k should be greater than or equal to 1, got 0"):
        engine.configure({"top_k": 0})
    assert engine.settings.top_k == 2
