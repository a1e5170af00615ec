"""Settings that cannot silently do nothing: scispaCy's names saved as
ours, type filters that match the vocabulary, the text API's shape."""
import pytest
import spacy
from helpers import make_nlp

from spacy_biosyn.kb.dictionary import ConceptDetails


def test_scispacys_names_are_saved_as_ours_and_an_edit_of_ours_takes_effect(tiny_encoder, disease_dictionary, tmp_path):
    nlp = make_nlp(tiny_encoder, disease_dictionary, k=20, max_entities_per_mention=3, resolve_abbreviations=False)
    block = nlp.config["components"]["biosyn_linker"]
    assert (block["names_searched"], block["top_k"], block["abbreviations"]) == (20, 3, None)
    assert (block["k"], block["max_entities_per_mention"], block["resolve_abbreviations"]) == (None, None, None)
    nlp.to_disk(tmp_path / "p")
    config = tmp_path / "p" / "config.cfg"
    config.write_text(config.read_text().replace("top_k = 3", "top_k = 4"))
    assert spacy.load(tmp_path / "p").get_pipe("biosyn_linker").top_k == 4
    # scispaCy's k, edited in: a ranking setting, never bound to the index
    config.write_text(config.read_text().replace("\nk = null", "\nk = 25"))
    assert spacy.load(tmp_path / "p").get_pipe("biosyn_linker").names_searched == 25


def test_the_text_api_refuses_a_bare_string(nlp):
    linker = nlp.get_pipe("biosyn_linker")
    for method in (linker.engine.link, linker.engine.rank, linker.rank):
        with pytest.raises(TypeError, match=r"takes a list of mention strings, got the str 'breast cancer'"):
            method("breast cancer")


def test_an_exact_name_scores_one(nlp):
    assert nlp.get_pipe("biosyn_linker").engine.link(["Breast cancer"])[0].kb_ents[0] == ("D001943", 1.0)


def typed(nlp):
    dictionary = nlp.get_pipe("biosyn_linker").engine.vocabulary().dictionary
    return dictionary.with_details({"D001943": ConceptDetails("Breast Neoplasms", ("C04.588.180",)),
                                    "D010051": ConceptDetails("Ovarian Neoplasms", ("C04.588.322",))})


def test_a_type_filter_on_a_typeless_vocabulary_is_refused_when_set(nlp):
    linker = nlp.get_pipe("biosyn_linker")
    with pytest.raises(ValueError, match="none of the vocabulary's concepts has a type"):
        linker.types = ["C"]
    assert linker.types is None


@pytest.mark.parametrize("setting, value", [("types", ["c04"]), ("types", ["C04 "]), ("exclude_types", ["T047"])])
def test_a_pattern_no_type_starts_is_refused_naming_the_vocabularys_types(nlp, setting, value):
    typed(nlp)
    linker = nlp.get_pipe("biosyn_linker")
    with pytest.raises(ValueError, match=r"matches no type of the vocabulary.*C04\.588\.180"):
        setattr(linker, setting, value)
    linker.types = ["C04"]
    assert linker.engine.link(["breast cancer"])[0].cui == "D001943"


def test_an_empty_types_list_is_refused(nlp):
    with pytest.raises(ValueError, match="types"):
        nlp.get_pipe("biosyn_linker").types = []
