"""scispaCy's lookups take every form of an ID or name a user holds."""
import pytest

from spacy_biosyn.kb.details import ConceptDetails
from spacy_biosyn.kb.dictionary import Dictionary
from spacy_biosyn.kb.knowledge_base import KnowledgeBase

CTD_PAIRS = [
    ("MESH:D001943|OMIM:114480", "Breast Cancer"), ("MESH:D001943", "breast neoplasms"),
    ("MESH:D010051|OMIM:167000", "Ovarian Cancer"),
]
BIOSYN_PAIRS = [("D001943|114480", "breast cancer"), ("D010051|167000", "ovarian cancer")]


@pytest.mark.parametrize("pairs, preferred", [(CTD_PAIRS, "MESH:D001943"), (BIOSYN_PAIRS, "D001943")])
@pytest.mark.parametrize("form", ["D001943", "d001943", "MESH:D001943", "mesh:d001943", "114480", "OMIM:114480",
                                  " D001943", "D001943|114480", "MESH:D001943|OMIM:114480"])
def test_any_id_form_finds_the_concept(pairs, preferred, form):
    kb = KnowledgeBase(Dictionary.from_pairs(pairs))
    assert kb.cui_to_entity[form].concept_id == preferred


def test_a_composites_cui_names_each_concept_and_is_no_one_entity():
    kb = KnowledgeBase(Dictionary.from_pairs(CTD_PAIRS))
    with pytest.raises(KeyError, match="joins the IDs of 2 concepts"):
        kb.cui_to_entity["OMIM:114480|OMIM:167000"]
    assert [e.concept_id for e in kb.entities("OMIM:114480|OMIM:167000")] == ["MESH:D001943", "MESH:D010051"]
    with pytest.raises(KeyError):
        kb.entities("D001943|D999999")
    assert "D999999" not in kb.cui_to_entity


def test_another_vocabularys_id_with_the_same_local_part_finds_nothing():
    kb = KnowledgeBase(Dictionary.from_pairs([("MONDO:0001250", "seizure disorder"), ("HP:0001251", "ataxia")]))
    assert kb.cui_to_entity["mondo:0001250"].concept_id == kb.cui_to_entity["0001250"].concept_id == "MONDO:0001250"
    assert "HP:0001250" not in kb.cui_to_entity


def test_names_as_written_find_their_concepts():
    kb = KnowledgeBase(Dictionary.from_pairs(CTD_PAIRS))
    assert kb.alias_to_cuis["Breast Cancer"] == kb.alias_to_cuis["breast-cancer"] == {"MESH:D001943"}
    with pytest.raises(KeyError):
        kb.alias_to_cuis["lung cancer"]


def test_a_concept_without_a_definition_has_none_as_in_scispacy():
    dictionary = Dictionary.from_pairs(BIOSYN_PAIRS)
    assert KnowledgeBase(dictionary).cui_to_entity["D001943"].definition is None
    dictionary.with_details({"D001943": ConceptDetails("Breast Neoplasms", ("C04",), "Tumors of the BREAST.")})
    assert KnowledgeBase(dictionary).cui_to_entity["D001943"].definition == "Tumors of the BREAST."


def test_a_namespaces_override_that_runs_into_the_next_entry_is_refused_on_load(tiny_encoder, disease_dictionary,
                                                                                tmp_path):
    import spacy
    from helpers import make_nlp

    from spacy_biosyn import MEDIC_NAMESPACES

    make_nlp(tiny_encoder, disease_dictionary, id_namespaces=MEDIC_NAMESPACES).to_disk(tmp_path / "p")
    override = "components.biosyn_linker.id_namespaces"
    with pytest.raises(ValueError, match=r"id_namespaces maps 'OMIM' to .*one line without quotes"):
        spacy.load(tmp_path / "p", config={override: {"": "D.*"}})
    # a dict merges into the saved one, as spaCy's config merges every block
    merged = spacy.load(tmp_path / "p", config={override: {"MESH": "D\\d{6}"}}).get_pipe("biosyn_linker")
    assert merged.settings.id_namespaces == {"MESH": "D\\d{6}", "OMIM": "\\d{6}"}
