"""Search strategies: synonyms added at search time, the sieve, concept-level
scoring and the NIL threshold, each through the pipe and its serialization."""
import numpy as np
import pytest
import spacy
from helpers import doc_with_ents, make_nlp, resealed
from spacy.tokens import Span

from spacy_biosyn import AliasCountReranker, ConceptCentroids, Dictionary, MismatchError
from spacy_biosyn.corpora.readers import CorpusError
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.kb.dictionary import DictionaryError
from spacy_biosyn.search.index import ExactIndex
from spacy_biosyn.search.name_ranker import FixedSettings, NameRanker
from spacy_biosyn.ty import Candidate

SIEVE = {"@misc": "spacy_biosyn.Sieve.v1", "exact_match": True}
# Two training mentions: one absent from the dictionary, and one the corpus
# annotates with another concept than the dictionary's name of the same text.
TRAINING = [
    "1||0|18||Disease||St. Vitus dance||D006816",
    "1||20|38||Disease||Parkinson disease||D020734",
    "2||0|9||Disease||Breast and ovarian cancer||D001943|D010051",  # a name of both concepts
    "2||10|14||Disease||CIPS||-1",  # CUI-less: not a synonym
]


@pytest.fixture
def training_mentions(tmp_path):
    folder = tmp_path / "processed_train"
    folder.mkdir()
    (folder / "1.concept").write_text("\n".join(TRAINING[:2]) + "\n")
    (folder / "2.concept").write_text("\n".join(TRAINING[2:]) + "\n")
    return str(folder)


def first(nlp, mention):
    span = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, f"{mention}.", mention)).ents[0]
    return span._.cui, span._.kb_ents


def test_training_mentions_become_searchable_synonyms(tiny_encoder, disease_dictionary, training_mentions):
    plain = make_nlp(tiny_encoder, disease_dictionary)
    taught = make_nlp(tiny_encoder, disease_dictionary, synonyms=[training_mentions])
    assert first(plain, "St. Vitus dance")[0] != "D006816"
    assert first(taught, "St. Vitus dance")[0] == "D006816"
    linker = taught.get_pipe("biosyn_linker").engine.vocabulary()
    assert list(linker.synonyms.names) == ["st vitus dance", "parkinson disease", "breast and ovarian cancer"]
    assert linker.synonyms.cuis[2] == ("D001943", "D010051")
    # A known name gains the corpus's CUI after its own and keeps its row.
    row = linker.dictionary.row("parkinson disease")
    assert linker.dictionary.cuis[row] == ("D010300", "D020734") and row < 17


def test_add_synonyms_equals_configuring_them(tiny_encoder, disease_dictionary, tmp_path):
    path = tmp_path / "domain.txt"
    path.write_text("D006816||st vitus dance\n")
    configured = make_nlp(tiny_encoder, disease_dictionary, synonyms=[str(path)])
    added = make_nlp(tiny_encoder, disease_dictionary)
    added.get_pipe("biosyn_linker").add_synonyms(path)
    assert first(added, "St Vitus' dance") == first(configured, "St Vitus' dance")
    assert first(added, "St Vitus' dance")[0] == "D006816"


def test_the_sieve_trusts_the_corpus_annotation_of_an_exact_match(
    tiny_encoder, disease_dictionary, training_mentions
):
    merged = make_nlp(tiny_encoder, disease_dictionary, synonyms=[training_mentions])
    sieved = make_nlp(tiny_encoder, disease_dictionary, synonyms=[training_mentions], sieve=SIEVE)
    assert first(merged, "Parkinson disease")[0] == "D010300"  # the dictionary's CUI comes first
    cui, kb_ents = first(sieved, "Parkinson disease")
    assert cui == "D020734" and len(kb_ents) == 5
    # Not an exact match, and no threshold: the whole dictionary decides.
    assert first(sieved, "paralysis agitans") == first(merged, "paralysis agitans")


def test_the_sieve_threshold_accepts_near_synonyms_only_above_it(
    tiny_encoder, disease_dictionary, training_mentions
):
    def cui(threshold):
        sieve = {**SIEVE, "exact_match": False, "threshold": threshold}
        nlp = make_nlp(tiny_encoder, disease_dictionary, synonyms=[training_mentions], sieve=sieve)
        return first(nlp, "Parkinsons disease")[0]

    assert cui(threshold=-100.0) == "D020734"  # every nearest synonym is accepted
    assert cui(threshold=100.0) == "D010300"  # none is


def test_alias_count_reranking_favours_concepts_with_many_good_names():
    pool = [
        Candidate("gout", (("D006073",),), 1.0),
        Candidate("gouty arthritis", (("D015210",),), 0.99),
        Candidate("arthritis gouty", (("D015210",),), 0.985),
        Candidate("gout arthritis", (("D015210",),), 0.98),
        Candidate("urate gout", (("D006073",), ("D015210",)), 0.5),  # a name of both concepts
    ]
    miniel_weights = AliasCountReranker(pool_size=5, mean_weight=0.02, count_weight=0.01)
    reranked = miniel_weights(None, None, None, [pool])[0]
    # D015210: 5 * 0.99 + 0.1 * mean(0.99, 0.985, 0.98, 0.5) + 0.05 * 4 = 5.236375
    # D006073: 5 * 1.0 + 0.1 * mean(1.0, 0.5) + 0.05 * 2 = 5.175
    assert [(c.name, c.cuis) for c in reranked] == [
        ("gouty arthritis", ("D015210",)),
        ("gout", ("D006073",)),
    ]
    assert [c.score for c in reranked] == pytest.approx([1.047275, 1.035])
    names_only = AliasCountReranker(pool_size=5, mean_weight=0.0, count_weight=0.0)
    assert [c.name for c in names_only(None, None, None, [pool])[0]] == ["gout", "gouty arthritis"]


def test_a_name_with_several_ids_stays_one_concept():
    pool = [
        Candidate("breast cancer", (("D001943", "114480"),), 1.0),
        Candidate("breast carcinoma", (("D001943",),), 0.9),
    ]
    reranked = AliasCountReranker(pool_size=2)(None, None, None, [pool])[0]
    assert [(c.name, c.concepts) for c in reranked] == [("breast cancer", (("D001943", "114480"),))]


def test_concept_centroids_score_every_name_of_a_concept(tiny_encoder, disease_dictionary):
    # The scorer at the kb layer, on the linker the pipe would build.
    linker = NameRanker(TransformerEncoder(tiny_encoder).load(), ExactIndex(), lambda: FixedSettings(10.0))
    linker.build(Dictionary.from_file(disease_dictionary))
    text = "breast cancer"
    dense_q, sparse_q = linker.encoder.encode([text]), linker.sparse.transform([text])
    pool = linker.rank([text], 3)
    ranked = ConceptCentroids(pool_size=3)(linker.names_by_concept, dense_q, sparse_q, pool)[0]
    rows = linker.dictionary.rows_by_cui["D001943"]  # three names, not all in the pool
    centroid = linker.index.vectors[rows].mean(axis=0)
    tfidf = np.asarray(linker.index.sparse_vectors[rows].mean(axis=0)).ravel()
    expected = dense_q[0] @ centroid / np.linalg.norm(centroid) + linker.sparse_weight * (
        sparse_q @ tfidf / np.linalg.norm(tfidf)
    )[0]
    best = next(c for c in ranked if c.cuis == ("D001943",))
    assert best.score == pytest.approx(float(expected), rel=1e-5)
    assert len({c.cuis for c in ranked}) == len(ranked)  # one candidate per concept


@pytest.mark.parametrize(
    "scorer",
    [
        {"@misc": "spacy_biosyn.AliasCountReranker.v1", "pool_size": 8},
        {"@misc": "spacy_biosyn.ConceptCentroids.v1", "pool_size": 8},
    ],
)
def test_concept_scorers_link_through_the_pipe(tiny_encoder, disease_dictionary, scorer):
    nlp = make_nlp(tiny_encoder, disease_dictionary, concept_scorer=scorer)
    assert first(nlp, "Type 2 Diabetes")[0] == "D003924"
    assert first(nlp, "Huntington's chorea")[0] == "D006816"


def test_nil_threshold_takes_concepts_under_it_out_of_kb_ents_as_scispacy_does(tiny_encoder, disease_dictionary):
    """kb_ents is [] exactly when cui is None, so the common
    span._.kb_ents[0][0] idiom follows the NIL decision; names stay in candidates."""
    linked = make_nlp(tiny_encoder, disease_dictionary)
    cui, kb_ents = first(linked, "Ovarian Cancer")
    assert cui == "D010051" and len(kb_ents) > 2
    cautious = make_nlp(tiny_encoder, disease_dictionary, nil_threshold=1.0)  # names written as the mention only
    doc = cautious(doc_with_ents(cautious, "Ovarian Cancers.", "Ovarian Cancers"))
    assert (doc.ents[0]._.cui, doc.ents[0]._.kb_ents) == (None, []) and doc.ents[0]._.candidates
    between = (kb_ents[1][1] + kb_ents[2][1]) / 2  # the second concept passes, the third does not
    assert first(make_nlp(tiny_encoder, disease_dictionary, nil_threshold=between), "Ovarian Cancer") == (cui, kb_ents[:2])
    assert first(make_nlp(tiny_encoder, disease_dictionary, nil_threshold=kb_ents[0][1]), "Ovarian Cancer") == (cui, kb_ents[:1])


def test_drop_nil_removes_the_entities_left_without_an_id_and_round_trips(tiny_encoder, disease_dictionary, tmp_path):
    exact = first(make_nlp(tiny_encoder, disease_dictionary), "Ovarian Cancer")[1][0][1]
    nlp = make_nlp(tiny_encoder, disease_dictionary, nil_threshold=exact, drop_nil=True, dictionary_labels=["Disease"])
    text = "Ovarian Cancer impairs hematopoiesis in BRCA1 carriers."
    doc = doc_with_ents(nlp, text, "Ovarian Cancer", "hematopoiesis")
    doc.ents = [*doc.ents, doc.char_span(text.index("BRCA1"), text.index("BRCA1") + 5, label="Gene")]
    linked = nlp.get_pipe("biosyn_linker")(doc)
    # the name is linked; the span no name fits leaves doc.ents; a label the linker does not serve stays
    assert [(e.text, e.label_, e._.cui) for e in linked.ents] == [("Ovarian Cancer", "Disease", "D010051"), ("BRCA1", "Gene", None)]
    assert [t.ent_iob_ for t in linked[3:5]] == ["O", "O"]  # "impairs hematopoiesis"
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("biosyn_linker").drop_nil is True
    again = loaded.get_pipe("biosyn_linker")(doc_with_ents(loaded, text, "Ovarian Cancer", "hematopoiesis"))
    assert [(e.text, e._.cui) for e in again.ents] == [("Ovarian Cancer", "D010051")]
    kept = make_nlp(tiny_encoder, disease_dictionary, nil_threshold=exact)
    assert [e._.cui for e in kept.get_pipe("biosyn_linker")(doc_with_ents(kept, text, "Ovarian Cancer", "hematopoiesis")).ents] == ["D010051", None]
    with pytest.raises(ValueError, match="drop_nil"):
        make_nlp(tiny_encoder, disease_dictionary, drop_nil="yes")


def test_every_strategy_round_trips_with_the_pipeline(
    tiny_encoder, disease_dictionary, training_mentions, tmp_path
):
    nlp = make_nlp(
        tiny_encoder, disease_dictionary, synonyms=[training_mentions], sieve={**SIEVE, "threshold": 11.0},
        # nil_threshold on [0, 1]: 8 of the 11 that a name written as the mention scores on S
        concept_scorer={"@misc": "spacy_biosyn.AliasCountReranker.v1"}, nil_threshold=0.72,
    )
    nlp.get_pipe("biosyn_linker").add_synonyms(Dictionary.from_pairs([("D003922", "juvenile diabetes")]))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    mentions = ["Parkinson disease", "St. Vitus dance", "Juvenile Diabetes", "ovarian cancer"]
    for mention in mentions:
        assert first(loaded, mention) == first(nlp, mention)
    assert first(loaded, "Juvenile Diabetes")[0] == "D003922"
    assert len(loaded.get_pipe("biosyn_linker").engine.vocabulary().synonyms) == 4


def test_synonyms_not_in_the_saved_dictionary_are_refused(
    tiny_encoder, disease_dictionary, training_mentions, tmp_path
):
    make_nlp(tiny_encoder, disease_dictionary, synonyms=[training_mentions]).to_disk(tmp_path / "p")
    synonyms = tmp_path / "p" / "biosyn_linker" / "synonyms.txt"
    synonyms.write_text(synonyms.read_text() + "D1||a name nobody indexed\n")
    resealed(tmp_path / "p" / "biosyn_linker")  # as a save that wrote it: the manifest would name it first
    with pytest.raises(MismatchError, match="synonyms.txt.*a name nobody indexed"):
        spacy.load(tmp_path / "p")


def test_bad_synonym_sources_name_what_is_wrong(tiny_encoder, disease_dictionary, tmp_path):
    linker = make_nlp(tiny_encoder, disease_dictionary).get_pipe("biosyn_linker")
    bad = tmp_path / "bad.txt"
    bad.write_text("D1||fine\nno separator here\n")
    with pytest.raises(DictionaryError, match=f"{bad}, line 2"):
        linker.add_synonyms(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match="no .concept files"):
        linker.add_synonyms(tmp_path / "empty")
    with pytest.raises(ValueError, match="no names to add"):
        linker.add_synonyms(Dictionary([], []))


def test_adding_names_to_an_index_equals_building_it_with_them(tiny_encoder, disease_dictionary):
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    linker = nlp.get_pipe("biosyn_linker").engine.vocabulary()
    vectors, tfidf = linker.index.vectors.copy(), linker.index.sparse_vectors
    grown = ExactIndex().build(vectors[:10], tfidf[:10])
    grown.add(vectors[10:], tfidf[10:])
    whole = ExactIndex().build(vectors, tfidf)
    queries = linker.encoder.encode(["gout", "breast tumour"]), linker.sparse.transform(["gout", "breast tumour"])
    for got, expected in zip(grown.search(*queries, 10.0, 5), whole.search(*queries, 10.0, 5)):
        np.testing.assert_array_equal(got, expected)


CHEMICALS = """\
D007980||levodopa
D007980||l dopa
D002945||cisplatin
D004317||doxorubicin
D004317||adriamycin
D008727||methotrexate
"""
DISEASE_CUIS = {"D001943", "D010051", "D003924", "D003922", "D006816", "D020754", "D009136",
                "C567518", "C567755", "D010300"}
ROUTED_TEXT = "L-dopa for Parkinson disease; cisplatin and ovarian cancer."


def routed_doc(nlp):
    doc = nlp.make_doc(ROUTED_TEXT)
    spans = []
    for mention, label in [("L-dopa", "Chemical"), ("Parkinson disease", "Disease"),
                           ("cisplatin", "Chemical"), ("ovarian cancer", "Disease")]:
        start = ROUTED_TEXT.index(mention)
        spans.append(doc.char_span(start, start + len(mention), label=label))
    doc.ents = spans
    return nlp.get_pipe("biosyn_linker")(doc)


@pytest.fixture
def chemical_dictionary(tmp_path):
    path = tmp_path / "chemicals.txt"
    path.write_text(CHEMICALS)
    return str(path)


def test_spans_are_linked_against_the_dictionary_of_their_label(
    tiny_encoder, disease_dictionary, chemical_dictionary
):
    routed = make_nlp(tiny_encoder, disease_dictionary, routes={"Chemical": chemical_dictionary})
    assert [e._.cui for e in routed_doc(routed).ents] == ["D007980", "D010300", "D002945", "D010051"]
    everything_as_disease = make_nlp(tiny_encoder, disease_dictionary)
    chemicals = [e for e in routed_doc(everything_as_disease).ents if e.label_ == "Chemical"]
    assert all(e._.cui in DISEASE_CUIS for e in chemicals)



def test_routes_alone_leave_other_labels_unlinked_and_round_trip(
    tiny_encoder, chemical_dictionary, tmp_path
):
    nlp = make_nlp(tiny_encoder, None, routes={"Chemical": chemical_dictionary})
    linked = [(e.label_, e._.cui, e._.kb_ents) for e in routed_doc(nlp).ents]
    assert [(label, cui) for label, cui, _ in linked] == [
        ("Chemical", "D007980"), ("Disease", None), ("Chemical", "D002945"), ("Disease", None)
    ]
    # Nothing written (another linker may own that label); kb_ents reads [] as in scispaCy.
    assert linked[1][2] == [] and routed_doc(nlp).ents[1]._.biosyn_stored_kb_ents is None
    nlp.to_disk(tmp_path / "pipeline")
    assert not (tmp_path / "pipeline" / "biosyn_linker" / "routes" / "0" / "encoder").exists()
    loaded = spacy.load(tmp_path / "pipeline")
    assert [(e.label_, e._.cui, e._.kb_ents) for e in routed_doc(loaded).ents] == linked


def test_every_route_shares_the_encoder_and_the_saved_lambda(
    tiny_encoder, disease_dictionary, chemical_dictionary, tmp_path
):
    nlp = make_nlp(tiny_encoder, disease_dictionary, routes={"Chemical": chemical_dictionary}, sparse_weight=2.5)
    nlp.to_disk(tmp_path / "pipeline")
    engine = spacy.load(tmp_path / "pipeline").get_pipe("biosyn_linker").engine
    dictionary, chemical = engine.vocabulary(), engine.vocabulary("Chemical")
    assert chemical.dictionary.names != dictionary.dictionary.names
    assert [dictionary.sparse_weight, chemical.sparse_weight, engine.settings.sparse_weight] == [2.5, 2.5, 2.5]
    assert chemical.encoder is dictionary.encoder is engine.encoder


def test_saved_routes_must_match_the_config(tiny_encoder, disease_dictionary, chemical_dictionary, tmp_path):
    nlp = make_nlp(tiny_encoder, disease_dictionary, routes={"Chemical": chemical_dictionary})
    nlp.to_disk(tmp_path / "pipeline")
    drug = {"components": {"biosyn_linker": {"routes": {"Drug": chemical_dictionary}}}}
    with pytest.raises(ValueError, match="no route for \\['drug'\\], which the config names \\(it holds \\['chemical'\\]"):
        spacy.load(tmp_path / "pipeline", config=drug)
    with pytest.raises(ValueError, match="no route for the label 'Gene'"):
        nlp.get_pipe("biosyn_linker").add_synonyms(chemical_dictionary, label="Gene")


def test_a_route_added_from_training_mentions_links_and_survives_a_reload(
    tiny_encoder, disease_dictionary, tmp_path
):
    # BC5CDR's chemicals have no vocabulary offline: their training mentions are one.
    mentions = tmp_path / "chemical_train"
    mentions.mkdir()
    (mentions / "1.concept").write_text(
        "1||0|6||Chemical||L-dopa||D007980\n"
        "1||10|19||Chemical||cisplatin||D002945\n"
        "1||30|36||Chemical||unnamed||-1\n"
    )
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    linker = nlp.get_pipe("biosyn_linker")
    linker.add_route("Chemical", mentions)
    linked = [(e.label_, e._.cui) for e in routed_doc(nlp).ents]
    assert linked == [("Chemical", "D007980"), ("Disease", "D010300"), ("Chemical", "D002945"), ("Disease", "D010051")]
    assert list(linker.engine.vocabulary("Chemical").dictionary.names) == ["l dopa", "cisplatin"]  # the CUI-less one is not a name
    nlp.to_disk(tmp_path / "pipeline")
    assert [(e.label_, e._.cui) for e in routed_doc(spacy.load(tmp_path / "pipeline")).ents] == linked
    (mentions / "1.concept").write_text("1||30|36||Chemical||unnamed||-1\n")
    with pytest.raises(ValueError, match="route 'Drug' has no names"):
        linker.add_route("Drug", mentions)


def test_route_labels_match_in_any_case(tiny_encoder, disease_dictionary, chemical_dictionary):
    # scispaCy's NER models emit CHEMICAL and DISEASE; the corpora say Chemical.
    nlp = make_nlp(tiny_encoder, disease_dictionary, routes={"Chemical": chemical_dictionary})
    doc = nlp.make_doc("cisplatin")
    doc.ents = [Span(doc, 0, 1, label="CHEMICAL")]
    assert nlp.get_pipe("biosyn_linker")(doc).ents[0]._.cui == "D002945"
    with pytest.raises(ValueError, match="twice in different cases"):
        make_nlp(tiny_encoder, None, routes={"Chemical": chemical_dictionary, "CHEMICAL": chemical_dictionary})
