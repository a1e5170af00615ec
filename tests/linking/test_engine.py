"""The linking engine without spaCy: which concepts, IDs, candidates and
scores mention strings and documents get, and how its settings and data change them."""
from pathlib import Path

import pytest
from helpers import FUNCTION_WORDS

from spacy_biosyn import Abbreviation, Candidate, Dictionary, LinkingEngine
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.linking.choice import BY_DOCUMENT
from spacy_biosyn.linking.data_sources import DataSources
from spacy_biosyn.linking.linker_settings import LinkerSettings
from spacy_biosyn.linking.links import Tie
from spacy_biosyn.linking.mentions import Mention, MentionBatch
from spacy_biosyn.search.index import ExactIndex


def make_engine(encoder, dictionary, *, index=None, sources=None, **settings):
    """An engine indexing `dictionary` with `encoder`, initialized, set as
    the tests' pipe is. tf-idf carries the ranking (a random tiny encoder
    has no semantics); `sources` are DataSources' other fields."""
    engine = LinkingEngine("engine", LinkerSettings(sparse_weight=10.0, **settings), encoder=TransformerEncoder(encoder),
                           index=ExactIndex() if index is None else index,
                           sources=DataSources(dictionary=dictionary, **(sources or {})), stop_words=FUNCTION_WORDS)
    engine.initialize()
    return engine


def documents(*docs, label="Disease"):
    """A batch of documents, each given as its text and its mentions (found
    in the text, linked in text order as a doc's entities are), no abbreviations."""
    texts, mentions = [], []
    for i, (text, *names) in enumerate(docs):
        texts.append(text)
        found = sorted((text.index(name), name) for name in names)
        mentions += [Mention(i, name, start, start + len(name), label) for start, name in found]
    return MentionBatch(texts, [[] for _ in texts], mentions)


def cuis(links):
    return [link.cui for link in links]


@pytest.fixture
def engine(tiny_encoder, disease_dictionary):
    return make_engine(tiny_encoder, disease_dictionary)


@pytest.fixture
def multi_id_engine(tiny_encoder, multi_id_dictionary):
    return make_engine(tiny_encoder, multi_id_dictionary)


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
                           sources=DataSources(dictionary=disease_dictionary), stop_words=FUNCTION_WORDS)
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


def test_links_mentions_to_their_concepts(engine):
    assert cuis(engine.link(["Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes"])) == ["D001943", "D010051", "D003924"]


def test_a_punctuation_mention_links_to_nothing(engine):
    punctuation, ovarian = engine.link(["(-)", "Ovarian Cancer"])
    assert (punctuation.cui, punctuation.kb_ents, punctuation.candidates) == (None, [], [])
    assert ovarian.cui == "D010051"


def test_kb_ents_lists_top_k_distinct_concepts_and_candidates_the_names_behind_them(engine):
    links = engine.link(["Type 2 Diabetes"])[0]
    kb_ents = [cui for cui, _ in links.kb_ents]
    assert kb_ents[:2] == ["D003924", "D003922"] and len(kb_ents) == len(set(kb_ents)) == 5
    scores = [c.score for c in links.candidates]
    assert len(scores) > 5 and scores == sorted(scores, reverse=True)
    # The names run down to the best name of the last concept listed,
    # and each concept scores as its best name.
    assert links.candidates[-1].concepts[0][0] == kb_ents[-1]
    best = {}
    for candidate in links.candidates:
        best.setdefault(candidate.concepts[0][0], candidate.score)
    assert links.kb_ents == [(cui, best[cui]) for cui in kb_ents]


def test_names_searched_bounds_how_many_concepts_kb_ents_can_find(tiny_encoder, disease_dictionary):
    # Type 2 and type 1 diabetes have two names each among the five best.
    links = make_engine(tiny_encoder, disease_dictionary, names_searched=5).link(["Type 2 Diabetes"])[0]
    assert len(links.candidates) == 5 and len(links.kb_ents) == 3


def test_scores_lie_on_0_1_and_a_name_written_as_the_mention_scores_1(engine):
    links = engine.link(["Breast-Cancer", "BRCA1"])
    scores = [score for link in links for _, score in link.kb_ents] + [c.score for link in links for c in link.candidates]
    assert scores and all(0.0 <= score <= 1.0 for score in scores)
    breast_cancer, brca1 = links
    assert breast_cancer.kb_ents[0] == ("D001943", pytest.approx(1.0))  # "breast cancer" once normalized
    assert brca1.kb_ents[0][1] < 0.6


def test_a_mention_scoring_under_nil_threshold_is_nil(tiny_encoder, multi_id_dictionary):
    engine = make_engine(tiny_encoder, multi_id_dictionary, nil_threshold=0.95)  # only a name written as the mention scores 1.0
    assert cuis(engine.link(["breast cancer", "bananas"])) == ["D001943", None]


@pytest.mark.parametrize("factory", ["HNSW32,SQfp16", "IVF2,SQ8"])
def test_an_approximate_index_links(tiny_encoder, disease_dictionary, factory):
    from spacy_biosyn.search.faiss_index import FaissIndex

    engine = make_engine(tiny_encoder, disease_dictionary, index=FaissIndex(factory, nprobe=2))
    assert cuis(engine.link(["Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes"])) == ["D001943", "D010051", "D003924"]


def test_a_name_with_several_ids_is_one_concept_read_by_its_preferred_id(multi_id_engine):
    breast, composite, tooth = multi_id_engine.link(["Breast cancer", "breast and ovarian cancer", "tooth agenesis selective 6"])
    # MeSH before OMIM, whatever the file's order; "breast neoplasms" is the same concept.
    assert (breast.cui, breast.concept_ids) == ("D001943", [("D001943", "114480")])
    assert [cui for cui, _ in breast.kb_ents] == ["D001943", "D010051", "C567755"]
    assert composite.cui == "D001943|D010051"
    assert composite.concept_ids == [("D001943", "114480"), ("D010051", "167000")]
    assert [cui for cui, _ in tooth.kb_ents][:2] == ["C567755", "D001943"]  # 613097 is no rival


def test_a_composite_whose_parts_name_one_concept_reads_it_once(multi_id_engine):
    links = multi_id_engine.link(["breast cancer and breast neoplasms"])[0]
    assert len(links.parts) == 2 and [ids[0] for ids in links.concept_ids] == ["D001943", "D001943"]
    assert links.cui == "D001943"


def test_the_id_preference_is_configurable(tiny_encoder, multi_id_dictionary):
    from spacy_biosyn.vocabularies.biosyn import biosyn_dictionary

    engine = make_engine(tiny_encoder, biosyn_dictionary(multi_id_dictionary, preferred_ids=["\\d+"]))
    links = engine.link(["breast cancer"])[0]
    assert (links.cui, links.concept_ids) == ("114480", [("114480", "D001943")])


def test_id_namespaces_prefix_every_reported_id(tiny_encoder, multi_id_dictionary):
    namespaces = {"MESH": "[CD]\\d{6}(\\d{3})?", "OMIM": "\\d{6}"}
    engine = make_engine(tiny_encoder, multi_id_dictionary, id_namespaces=namespaces)
    breast, composite = engine.link(["Breast cancer", "breast and ovarian cancer"])
    assert (breast.cui, breast.concept_ids) == ("MESH:D001943", [("MESH:D001943", "OMIM:114480")])
    assert all(cui.startswith("MESH:") for cui, _ in breast.kb_ents)
    assert composite.cui == "MESH:D001943|MESH:D010051"
    assert breast.candidates[0].concepts == (("D001943", "114480"),)  # the dictionary's own
    assert engine.kb().cui_to_entity[breast.cui].concept_id == "D001943"


def test_a_composite_training_mention_is_no_alias_of_its_first_part(multi_id_engine, tmp_path):
    synonyms = tmp_path / "synonyms.txt"
    synonyms.write_text("D001943|D010051||breast and ovarian cancer\n")
    multi_id_engine.add_synonyms(synonyms)
    entity = multi_id_engine.kb().cui_to_entity["D001943"]
    assert entity.ids == ("D001943", "114480") and "breast and ovarian cancer" not in entity.aliases


def test_an_annotated_corpus_chooses_each_concepts_preferred_id(tiny_encoder, multi_id_dictionary, tmp_path):
    train = tmp_path / "processed_train"
    train.mkdir()
    (train / "1.concept").write_text(
        "1||0|13||Disease||breast cancer||OMIM:114480\n"  # annotators use OMIM for this one
        "1||20|34||Disease||ovarian cancer||D010051\n"
        "1||40|44||Disease||gout||-1\n"
    )
    engine = make_engine(tiny_encoder, multi_id_dictionary, sources={"preferred_ids_from": [str(train)]})
    mentions = ["breast cancer", "ovarian cancer", "tooth agenesis selective 6"]
    assert cuis(engine.link(mentions)) == ["114480", "D010051", "C567755"]  # unused concepts keep the MeSH-first rule
    engine.set_dictionary(multi_id_dictionary)  # re-indexing keeps it
    assert cuis(engine.link(mentions)) == ["114480", "D010051", "C567755"]


AMBIGUOUS = "D003920||dm\nD003920||diabetes mellitus\nD009223||dm\nD009223||myotonic dystrophy\n"


def test_an_ambiguous_name_links_to_the_concept_the_annotated_corpus_uses(tiny_encoder, tmp_path):
    dictionary = tmp_path / "dictionary.txt"
    dictionary.write_text(AMBIGUOUS)
    train = tmp_path / "train.concept"
    train.write_text("1||0|2||Disease||dm||D009223\n1||10|12||Disease||dm||D009223\n")
    assert make_engine(tiny_encoder, str(dictionary)).link(["DM"])[0].cui == "D003920"  # the file's order
    preferring = make_engine(tiny_encoder, str(dictionary), sources={"preferred_ids_from": [str(tmp_path)]})
    assert preferring.link(["DM"])[0].cui == "D009223"


def test_an_ambiguous_name_links_to_the_concept_the_rest_of_the_document_names(tiny_encoder, tmp_path):
    dictionary = tmp_path / "dictionary.txt"
    dictionary.write_text(AMBIGUOUS)
    engine = make_engine(tiny_encoder, str(dictionary))
    myotonic = ("Myotonic dystrophy: two brothers with DM.", "Myotonic dystrophy", "DM")
    diabetic = ("Diabetes mellitus: two brothers with DM.", "Diabetes mellitus", "DM")
    alone = ("Two brothers with DM.", "DM")
    batch = engine.link_batch(documents(myotonic, diabetic, alone))
    last = [mentions[-1].links for _, mentions in batch.by_document()]
    assert cuis(last) == ["D009223", "D003920", "D003920"]
    assert [c for c, _ in last[0].kb_ents] == ["D009223", "D003920"]
    assert last[0].ties == (Tie(("D009223", "D003920"), BY_DOCUMENT),) and last[1].ties[0].rule == BY_DOCUMENT
    engine.configure({"resolve_shared_names": False})  # the dictionary's order decides
    assert engine.link_batch(documents(myotonic)).mentions[-1].links.cui == "D003920"


def test_readings_equal_but_for_float_noise_keep_the_first_and_are_both_kept_as_tied():
    from spacy_biosyn.linking.choice import tied_readings

    # "CMC" defined as "cystic mastitis chronic", and also a dictionary name: both
    # readings score 1 + lambda, give or take the last bits of a batch's arithmetic.
    ranked = {
        "cystic mastitis chronic": [Candidate("cystic mastitis chronic", (("D005348",),), 1.1249999)],
        "cmc": [Candidate("cmc", (("163000",),), 1.1250001)],
        "gout": [Candidate("gout", (("D006073",),), 0.9)],
    }
    tied = tied_readings([("cystic mastitis chronic",), ("cmc",)], ranked)
    assert [[part.text for part in reading] for reading in tied] == [["cystic mastitis chronic"], ["cmc"]]
    better = tied_readings([("gout",), ("cmc",)], ranked)  # a real difference still wins, alone
    assert [[part.text for part in reading] for reading in better] == [["cmc"]]


def test_a_composite_that_is_also_a_name_is_read_as_the_rest_of_the_document_reads_it(tiny_encoder, tmp_path):
    dictionary = tmp_path / "dictionary.txt"
    dictionary.write_text(
        "D001943||breast cancer\nD010051||ovarian cancer\nD061325||breast and ovarian cancer\n"
        "D061325||hereditary breast and ovarian cancer syndrome\n"
    )
    engine = make_engine(tiny_encoder, str(dictionary))
    text = "Ovarian cancer, then breast cancer: BRCA1 carriers with breast and ovarian cancer."
    apart = (text, "Ovarian cancer", "breast cancer", "breast and ovarian cancer")
    syndrome = ("Breast and ovarian cancer in two sisters: hereditary breast and ovarian cancer syndrome.",
                "Breast and ovarian cancer", "hereditary breast and ovarian cancer syndrome")
    alone = ("Two sisters with breast and ovarian cancer.", "breast and ovarian cancer")

    def composite(*docs):
        return [m.links.cui for m in engine.link_batch(documents(*docs)).mentions
                if m.text.lower() == "breast and ovarian cancer"]

    assert composite(apart, syndrome, alone) == ["D001943|D010051", "D061325", "D061325"]
    engine.configure({"resolve_shared_names": False})  # the likeliest reading: the name as written
    assert composite(apart) == ["D061325"]


def test_ranking_text_with_a_lone_surrogate(engine):
    assert engine.rank(["breast\ud800cancer"])[0][0].name == "breast cancer"


def test_set_dictionary_reindexes_with_the_fitted_tfidf(engine, tmp_path):
    extra = tmp_path / "more.txt"
    extra.write_text("D001943||breast cancer\nD000001||hereditary breast cancer syndrome\n")
    vocabulary = dict(engine.vocabulary().sparse.vocabulary)
    engine.set_dictionary(extra)
    assert engine.vocabulary().sparse.vocabulary == vocabulary
    assert engine.rank(["Hereditary breast-cancer syndrome"])[0][0].cuis == ("D000001",)


def test_the_cache_ranks_a_repeated_mention_once_and_forgets_when_the_names_change(tiny_encoder, disease_dictionary, monkeypatch):
    engine = make_engine(tiny_encoder, disease_dictionary, cache_size=2)
    searched = []
    index = engine.vocabulary().index
    search = index.search
    monkeypatch.setattr(index, "search", lambda dq, sq, w, k: searched.append(len(dq)) or search(dq, sq, w, k))
    first = engine.rank(["St. Vitus dance", "breast tumour"])
    assert engine.rank(["breast tumour", "St. Vitus dance"]) == first[::-1]
    cache = engine.vocabulary().cache
    assert searched == [2] and (cache.hits, cache.lookups) == (2, 4)
    engine.rank(["ovarian tumour"])  # a third string: the least recently used one goes
    engine.rank(["St. Vitus dance"])
    assert searched == [2, 1]
    engine.rank(["breast tumour"])
    assert searched == [2, 1, 1]
    engine.add_synonyms(Dictionary.from_pairs([("D006816", "st vitus dance")]))
    assert engine.rank(["St. Vitus dance"])[0][0].cuis == ("D006816",)
    assert searched == [2, 1, 1, 1]


def test_each_string_is_looked_up_among_the_names_once(tiny_encoder, multi_id_dictionary, tmp_path, monkeypatch):
    # "breast and ovarian cancer" names a syndrome too: preprocessing asks
    # whether it is a name (it is, so it is read whole and as its parts), and
    # ranking needs the rows of the same strings: one lookup serves both.
    dictionary = tmp_path / "names.txt"
    dictionary.write_text(Path(multi_id_dictionary).read_text() + "D061325||breast and ovarian cancer\n")
    engine = make_engine(tiny_encoder, str(dictionary), cache_size=0)
    looked_up = []
    row = Dictionary.row
    monkeypatch.setattr(Dictionary, "row", lambda self, name: looked_up.append(name) or row(self, name))
    engine.link(["Breast cancer", "breast and ovarian cancer"])
    assert sorted(looked_up) == ["breast and ovarian cancer", "breast cancer", "ovarian cancer"]


def test_a_change_that_fails_midway_leaves_no_stale_nil_threshold(tiny_encoder, disease_dictionary, tmp_path, monkeypatch):
    from spacy_biosyn.search.name_ranker import NameRanker
    from spacy_biosyn.search.nil_default import NilDefault

    # "auto" means 0.99 for any vocabulary once it has names: only a name written as the mention links
    monkeypatch.setattr(NameRanker, "nil_default", property(lambda ranker: NilDefault(0.99, "test")))
    engine = LinkingEngine("engine", LinkerSettings(sparse_weight=10.0), encoder=TransformerEncoder(tiny_encoder),
                           index=ExactIndex(), sources=DataSources(dictionary=disease_dictionary), stop_words=FUNCTION_WORDS)
    assert engine.nil_threshold() is None  # no names yet
    with pytest.raises(Exception, match="corrections"):
        engine.initialize(corrections=tmp_path / "missing-corrections.txt")  # fails after indexing the dictionary
    assert engine.nil_threshold() == 0.99
    assert [link.cui for link in engine.link(["parkinson disease", "parkinsons disease"])] == ["D010300", None]
    with pytest.raises(ValueError):
        engine.add_route("Chemical", tmp_path / "missing-route.txt")
    assert engine.link(["parkinson disease"], label="Disease")[0].cui == "D010300"

