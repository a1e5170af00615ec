"""Settings that cannot silently do nothing: scispaCy's names saved as
ours, type filters that match the vocabulary, the text API's shape."""
import dataclasses
import inspect
import re
from pathlib import Path

import pytest
import spacy
from helpers import make_nlp
from spacy.language import Language

from spacy_biosyn.linking.data_sources import DataSources
from spacy_biosyn.linking.linker_settings import PART_CONTRACTS, SCISPACY_ALIASES, SCISPACY_REFUSALS, LinkerSettings
from spacy_biosyn.pipeline.component import BiosynLinker
from spacy_biosyn.pipeline.configure import BoundSetting, RefusedName, Setting
from spacy_biosyn.pipeline.factory import make_biosyn_linker

CONFIGURATION_DOCS = Path(__file__).parents[2] / "docs" / "configuration.md"


def documented_settings() -> set:
    """The names in the first column of docs/configuration.md's table of settings."""
    rows = [line.split("|")[1] for line in CONFIGURATION_DOCS.read_text(encoding="utf-8").splitlines()
            if line.startswith("| `")]
    return {name for cell in rows for name in re.findall(r"`(\w+)`", cell)}


def test_each_setting_is_declared_once_by_the_settings_model_and_every_list_agrees():
    settings = set(LinkerSettings.model_fields)
    scispacy = set(SCISPACY_ALIASES) | set(SCISPACY_REFUSALS)
    factory = set(inspect.signature(make_biosyn_linker).parameters) - {"nlp", "name"}
    # the factory declares the sources and parts; the model the settings
    assert factory - settings - scispacy == {f.name for f in dataclasses.fields(DataSources)} | set(PART_CONTRACTS) | {
        "abbreviations"}
    assert settings | scispacy <= factory
    assert set(Language.get_factory_meta("biosyn_linker").default_config) == factory - scispacy
    attributes = {name for name, value in vars(BiosynLinker).items() if isinstance(value, (Setting, RefusedName))}
    assert attributes | {"nil_threshold"} == settings | scispacy
    bound = {name for name, value in vars(BiosynLinker).items() if isinstance(value, BoundSetting)}
    assert bound == {"sparse_weight", "split_composites", "dictionary_labels"}
    assert documented_settings() == factory


def test_a_misspelt_setting_is_refused_by_a_direct_call_of_the_factory_too():
    with pytest.raises(TypeError, match="topk"):
        make_biosyn_linker(spacy.blank("en"), "linker", None, None, {}, [], [], None, "x", None, None, None, None, None,
                           topk=3)


def test_a_misspelt_setting_is_refused_by_name(tiny_encoder, disease_dictionary):
    with pytest.raises(Exception, match="topk"):
        make_nlp(tiny_encoder, disease_dictionary, topk=3)

from spacy_biosyn.kb.details import ConceptDetails


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
