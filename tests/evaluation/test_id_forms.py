"""Scores compare IDs through the pipe's namespaces, which the vocabulary
supplies when the pipe declares none; forms that never meet stop scoring."""
import pytest
import spacy
from helpers import doc_with_ents
from spacy.training import Example

from spacy_biosyn.accuracy import link_scores
from spacy_biosyn.errors import MismatchError
from spacy_biosyn.evaluation.end_to_end import end_to_end_scores
from spacy_biosyn.kb.namespaces import recognized_namespaces

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
    reference = doc_with_ents(nlp, text, "Breast cancer", "ovarian cancer")
    for span, cui in zip(reference.ents, gold):
        span.kb_id_ = cui
    return [Example(predicted, reference)]


def test_the_vocabulary_supplies_the_namespaces_scores_compare_through(ctd_nlp):
    assert recognized_namespaces(["MESH:D001943", "OMIM:114480"]) == {"MESH": r"[CD]\d{6}(\d{3})?", "OMIM": r"\d{6}"}
    assert recognized_namespaces(["C0006142"]) == {"UMLS": r"C\d{7}"}
    assert recognized_namespaces(["GO:0008150", "x1"]) is None
    linker = ctd_nlp.get_pipe("biosyn_linker")
    assert set(linker.engine.score_namespaces()) == {"MESH", "OMIM"}
    # the pipe reports MESH:D001943; bare gold IDs and the raw NCBI corpus's OMIM: ones score as the same
    scores = ctd_nlp.evaluate(examples(ctd_nlp, ["D001943", "OMIM:167000"]))
    assert scores["link_cui_acc"] == scores["link_acc_1"] == 1.0


def test_forms_that_never_meet_stop_scoring_naming_both():
    nlp = spacy.blank("en")
    doc = doc_with_ents(nlp, "Breast cancer.", "Breast cancer")
    gold = doc_with_ents(nlp, "Breast cancer.", "Breast cancer")
    gold.ents[0].kb_id_ = "GO:0001"
    doc.ents[0]._.cui = "HP:0001"
    with pytest.raises(MismatchError, match=r"gold IDs are written GO: \(GO:0001\), the predicted ones HP:"):
        end_to_end_scores([Example(doc, gold)])
    with pytest.raises(MismatchError, match="--id-namespaces"):
        link_scores([Example(doc, gold)])
    doc.ents[0]._.cui = "GO:0002"  # the same form: a true 0
    assert end_to_end_scores([Example(doc, gold)])["link_f"] == 0.0
