"""Scores compare IDs through the pipe's namespaces, which the vocabulary
supplies when the pipe declares none; forms that never meet stop scoring."""
import pytest
import spacy
from helpers import doc_with_ents
from spacy.tokens import Span
from spacy.training import Example

from spacy_biosyn.errors import MismatchError
from spacy_biosyn.evaluation.end_to_end import end_to_end_scores
from spacy_biosyn.kb.namespaces import recognized_namespaces
from spacy_biosyn.pipeline.accuracy import link_scores

CTD_STYLE = "MESH:D001943|OMIM:114480||breast cancer\nMESH:D010051|OMIM:167000||ovarian cancer\n"


@pytest.fixture
def ctd_nlp(tiny_encoder, tmp_path):
    (tmp_path / "medic.txt").write_text(CTD_STYLE)
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"dictionary": str(tmp_path / "medic.txt"), "encoder": tiny_encoder,
                                          "sparse_weight": 10.0})
    nlp.initialize()
    return nlp


def examples(nlp, gold):
    text = "Breast cancer and ovarian cancer."
    predicted = nlp(doc_with_ents(nlp, text, "Breast cancer", "ovarian cancer"))
    return [Example(predicted, with_ids(doc_with_ents(nlp, text, "Breast cancer", "ovarian cancer"), gold))]


def with_ids(doc, ids):
    """The doc with its entities' kb_id set (a Span from doc.ents is a copy)."""
    doc.ents = [Span(doc, e.start, e.end, label=e.label_, kb_id=cui) for e, cui in zip(doc.ents, ids)]
    return doc


def test_the_vocabulary_supplies_the_namespaces_scores_compare_through(ctd_nlp):
    assert recognized_namespaces(["MESH:D001943", "OMIM:114480"]) == {"MESH": r"[CD]\d{6}(\d{3})?", "OMIM": r"\d{6}"}
    assert recognized_namespaces(["C0006142"]) == {"UMLS": r"C\d{7}"}
    assert recognized_namespaces(["GO:0008150", "x1"]) is None
    linker = ctd_nlp.get_pipe("biosyn_linker")
    assert set(linker.engine.score_namespaces()) == {"MESH", "OMIM"}
    # the pipe reports MESH:D001943: bare gold IDs meet it, spaCy's nel_micro_f included
    scores = ctd_nlp.evaluate(examples(ctd_nlp, ["D001943", "MESH:D010051"]))
    assert scores["link_cui_acc"] == scores["link_acc_1"] == scores["nel_micro_f"] == 1.0
    # the raw NCBI corpus writes OMIM:114480: any ID of the best name is a hit at k (BioSyn's rule),
    # while cui_acc asks the ID the pipe reports (MESH:D001943) to be a gold one
    scores = ctd_nlp.evaluate(examples(ctd_nlp, ["OMIM:114480", "D010051"]))
    assert (scores["link_acc_1"], scores["link_cui_acc"]) == (1.0, 0.5)


def test_a_gold_id_of_the_linked_concept_in_another_namespace_is_a_score_not_a_stop(ctd_nlp):
    # gold OMIM:114480, reported MESH:D001943: the same concept, so the forms meet and cui_acc is a true 0
    (example,) = examples(ctd_nlp, ["OMIM:114480", "OMIM:167000"])
    assert end_to_end_scores([example])["link_f"] == 0.0
    assert link_scores([example], id_namespaces=None)["link_cui_acc"] == 0.0


def test_forms_that_never_meet_stop_scoring_naming_both():
    nlp = spacy.blank("en")
    doc = doc_with_ents(nlp, "Breast cancer.", "Breast cancer")
    gold = with_ids(doc_with_ents(nlp, "Breast cancer.", "Breast cancer"), ["GO:0001"])
    doc.ents[0]._.cui = "HP:0001"
    with pytest.raises(MismatchError, match=r"gold IDs are written GO: \(GO:0001\), the predicted ones HP:"):
        end_to_end_scores([Example(doc, gold)])
    with pytest.raises(MismatchError, match="different vocabularies"):
        link_scores([Example(doc, gold)])
    doc.ents[0]._.cui = "GO:0002"  # the same form: a true 0
    assert end_to_end_scores([Example(doc, gold)])["link_f"] == 0.0


def test_acc_at_k_takes_any_gold_part_and_cui_acc_and_spacys_score_every_one(ctd_nlp):
    """BioSyn's rule for Acc@k (a predicted part meets any gold part), so
    numbers compare with the paper; the ID a user reads is right only when
    it names the whole gold, as spaCy's nel_micro_f also requires."""
    gold = ["MESH:D001943|MESH:D010051", "MESH:D010051"]  # "Breast cancer" annotated as a composite
    scores = link_scores(examples(ctd_nlp, gold))
    assert scores["link_acc_1"] == 1.0  # D001943 is one of the gold parts
    assert scores["link_cui_acc"] == 0.5  # but span._.cui names one of two
    nel = ctd_nlp.get_pipe("biosyn_linker").score(examples(ctd_nlp, gold))
    assert (nel["link_acc_1"], nel["link_cui_acc"]) == (1.0, 0.5)
    assert nel["nel_micro_r"] == 0.5
    assert end_to_end_scores(examples(ctd_nlp, gold))["link_r"] == 0.5
