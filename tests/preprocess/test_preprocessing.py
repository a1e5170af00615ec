"""Composite splitting, abbreviation expansion and spelling corrections, alone
and inside the biosyn_linker."""
import pytest
import spacy
from helpers import doc_with_ents, make_nlp

from spacy.lang.en.stop_words import STOP_WORDS

from spacy_biosyn.preprocess.composites import MAX_PARTS, split_composite
from spacy_biosyn.preprocess.readings import MentionPreprocessor, long_forms_by_short_form
from spacy_biosyn.preprocess.text import correct, read_corrections
from spacy_biosyn.ty import Abbreviation


def never_a_name(text):
    return False


@pytest.mark.parametrize(
    "mention,parts",
    [
        ("breast and ovarian cancer", ["breast cancer", "ovarian cancer"]),
        ("breast, ovarian and prostate cancers", ["breast cancers", "ovarian cancers", "prostate cancers"]),
        ("prostatic, pancreas, skin, and lung cancer", ["prostatic cancer", "pancreas cancer", "skin cancer", "lung cancer"]),
        ("c6 or c7 deficiency", ["c6 deficiency", "c7 deficiency"]),
        ("type 1 and 2 diabetes", ["type 1 diabetes", "type 2 diabetes"]),
        ("inherited breast and ovarian cancer", ["inherited breast cancer", "inherited ovarian cancer"]),
        ("breast and/or ovarian cancer", ["breast cancer", "ovarian cancer"]),
        ("cleft lip/palate", ["cleft lip", "cleft palate"]),
        ("ventricular tachycardia and fibrillation", ["ventricular tachycardia", "ventricular fibrillation"]),
        ("impairments of learning and memory", ["impairments of learning", "impairments of memory"]),
        ("stage II and stage III carcinomas", ["stage II carcinomas", "stage III carcinomas"]),
        (
            "myoclonic, atypical absence and/or atonic (minor motor) seizures",
            ["myoclonic seizures", "atypical absence seizures", "atonic (minor motor) seizures"],
        ),
    ],
)
def test_coordinations_are_split_into_parts(mention, parts):
    assert split_composite(mention) == parts


@pytest.mark.parametrize(
    "mention",
    [
        "breast cancer",
        "emerin, deficiency",  # a comma alone does not coordinate
        "hyper- or dyskinetic",  # the shared part is inside a word
        "deficits of 4,000 to 8,000 hz",
        "1/2 of cases",
    ],
)
def test_what_is_not_a_coordination_is_left_whole(mention):
    assert split_composite(mention) == [mention]


def test_a_dictionary_name_with_a_coordination_is_read_whole_first_then_as_its_parts():
    preprocessor = MentionPreprocessor(STOP_WORDS)
    whole = preprocessor.clean("hand, foot and mouth disease")
    readings = preprocessor.readings
    assert readings("Hand, foot and mouth disease", {}, {whole}.__contains__) == [
        (whole,), ("hand disease", "foot disease", "mouth disease")
    ]
    assert readings("hand and foot disease", {}, {whole}.__contains__) == [("hand disease", "foot disease")]


SCA = [Abbreviation("SCA1", "spinocerebellar ataxia type 1", 31, 0)]


def test_a_short_form_is_read_through_its_long_form_wherever_it_is_used():
    long_forms = long_forms_by_short_form(SCA)
    readings = MentionPreprocessor(STOP_WORDS).readings
    assert readings("SCA1", long_forms, never_a_name) == [("spinocerebellar ataxia type 1",)]
    assert readings("SCA1-like disease", long_forms, never_a_name) == [
        ("spinocerebellar ataxia type 1 like disease",)
    ]
    # Only whole words are short forms, and a spelled-out long form is kept as is.
    assert readings("SCA12", long_forms, never_a_name) == [("sca12",)]
    assert readings("spinocerebellar ataxia type 1 (SCA1)", long_forms, never_a_name) == [
        ("spinocerebellar ataxia type 1 sca1",)
    ]


def test_ambiguous_short_forms_give_one_reading_per_meaning():
    long_forms = long_forms_by_short_form(
        [Abbreviation("PD", "Parkinson's disease", 10, 0), Abbreviation("PD", "peritoneal dialysis", 90, 70)]
    )
    readings = MentionPreprocessor(STOP_WORDS).readings
    assert readings("PD", long_forms, never_a_name) == [("parkinson s disease",), ("peritoneal dialysis",)]
    # A short form that is itself a dictionary name is also ranked as written.
    assert readings("PD", long_forms, {"pd"}.__contains__)[-1] == ("pd",)


def test_a_composite_that_is_a_name_is_read_whole_first_and_as_its_parts_second():
    readings = MentionPreprocessor(STOP_WORDS).readings
    names = {"breast and ovarian cancer"}.__contains__
    assert readings("Breast and ovarian cancer", {}, names) == [
        ("breast and ovarian cancer",), ("breast cancer", "ovarian cancer")
    ]
    assert readings("Breast and ovarian cancer", {}, never_a_name) == [("breast cancer", "ovarian cancer")]
    assert MentionPreprocessor(STOP_WORDS).readings("Breast and ovarian cancer", {}, names, split_composites=False) == [
        ("breast and ovarian cancer",)
    ]


def test_abbreviations_then_composites_then_normalization():
    long_forms = long_forms_by_short_form([Abbreviation("OC", "ovarian cancer", 20, 0)])
    preprocessor = MentionPreprocessor(STOP_WORDS, corrections={"cancer": "neoplasm"})
    assert preprocessor.readings("Breast or OC", long_forms, never_a_name) == [
        ("breast neoplasm", "ovarian neoplasm")
    ]
    assert MentionPreprocessor(STOP_WORDS).readings("breast or OC", long_forms, never_a_name, split_composites=False) == [
        ("breast or ovarian cancer",)
    ]
    assert MentionPreprocessor(STOP_WORDS).readings("(-)", {}, never_a_name) == [()]


def test_corrections_replace_whole_words_only(tmp_path):
    path = tmp_path / "spell.txt"
    path.write_text("cirrohsis||cirrhosis\natrialfibrillation||atrial fibrillation\n")
    corrections = read_corrections(path)
    assert correct("cirrohsis and atrialfibrillation", corrections) == "cirrhosis and atrial fibrillation"
    assert correct("cirrohsiss", corrections) == "cirrohsiss"


def test_a_malformed_corrections_line_is_named(tmp_path):
    path = tmp_path / "spell.txt"
    path.write_text("cirrohsis||cirrhosis\ntwo words||one\n")
    with pytest.raises(ValueError, match=r"spell.txt, line 2"):
        read_corrections(path)


ABSTRACT = (
    "Spinocerebellar ataxia type 1 (SCA1) in a café–bar family: SCA1 carriers, "
    "breast and ovarian cancer, and cirrohsis."
)


@pytest.fixture
def preprocessing_nlp(tiny_encoder, disease_dictionary, tmp_path):
    spell = tmp_path / "spell.txt"
    spell.write_text("cirrohsis||cirrhosis\n")
    with open(disease_dictionary, "a") as f:
        f.write("D008103||liver cirrhosis\nD008103||cirrhosis\n")
    return make_nlp(tiny_encoder, disease_dictionary, corrections=str(spell))


def test_the_pipe_expands_splits_and_corrects(preprocessing_nlp):
    doc = doc_with_ents(preprocessing_nlp, ABSTRACT, "SCA1 carriers", "breast and ovarian cancer", "cirrohsis")
    doc = preprocessing_nlp.get_pipe("biosyn_linker")(doc)
    assert [(a.short_form, a.long_form) for a in doc._.biosyn_abbreviations] == [
        ("SCA1", "Spinocerebellar ataxia type 1")
    ]
    sca, composite, cirrhosis = doc.ents
    assert [p.text for p in sca._.parts] == ["spinocerebellar ataxia type 1 carriers"]
    assert sca._.cui == "D020754"
    assert composite._.cui == "D001943|D010051"
    assert [p.text for p in composite._.parts] == ["breast cancer", "ovarian cancer"]
    # kb_ents lists real concepts: each part's best first, then each part's next.
    assert [cui for cui, _ in composite._.kb_ents][:2] == ["D001943", "D010051"]
    assert all("|" not in cui for cui, _ in composite._.kb_ents)
    assert [c.name for c in composite._.parts[1].candidates][:1] == ["ovarian cancer"]
    assert cirrhosis._.cui == "D008103"


def test_preprocessing_can_be_switched_off(tiny_encoder, disease_dictionary):
    nlp = make_nlp(tiny_encoder, disease_dictionary, abbreviations=None, split_composites=False)
    doc = doc_with_ents(nlp, ABSTRACT, "SCA1 carriers", "breast and ovarian cancer")
    doc = nlp.get_pipe("biosyn_linker")(doc)
    assert doc._.biosyn_abbreviations == []
    assert [len(e._.parts) for e in doc.ents] == [1, 1]
    assert [p.text for p in doc.ents[0]._.parts] == ["sca1 carriers"]
    assert doc.ents[0]._.cui != "D020754"  # what the long form found, the short form misses


def test_schwartz_hearst_can_replace_ab3p_in_the_config(tiny_encoder, disease_dictionary):
    nlp = make_nlp(
        tiny_encoder, disease_dictionary, abbreviations={"@misc": "spacy_biosyn.SchwartzHearst.v1"}
    )
    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, ABSTRACT, "SCA1 carriers"))
    assert doc.ents[0]._.cui == "D020754"


def test_docs_without_abbreviations_or_entities(preprocessing_nlp):
    linker = preprocessing_nlp.get_pipe("biosyn_linker")
    plain = linker(doc_with_ents(preprocessing_nlp, "Patients with breast cancer.", "breast cancer"))
    assert plain._.biosyn_abbreviations == [] and plain.ents[0]._.cui == "D001943"
    no_entities = linker(preprocessing_nlp.make_doc(ABSTRACT))
    assert no_entities._.biosyn_abbreviations == [] and no_entities.ents == ()


def test_corrections_are_saved_with_the_pipeline(preprocessing_nlp, tmp_path):
    preprocessing_nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    mentions = ("SCA1 carriers", "breast and ovarian cancer", "cirrohsis")
    before = preprocessing_nlp.get_pipe("biosyn_linker")(doc_with_ents(preprocessing_nlp, ABSTRACT, *mentions))
    after = loaded.get_pipe("biosyn_linker")(doc_with_ents(loaded, ABSTRACT, *mentions))
    assert [(e._.cui, e._.kb_ents) for e in after.ents] == [(e._.cui, e._.kb_ents) for e in before.ents]
    assert after.ents[2]._.cui == "D008103"


def test_a_mention_of_only_coordinators_links_to_nothing(preprocessing_nlp):
    nlp = preprocessing_nlp
    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, "x and and or , / / y", "and and or , / /"))
    span = doc.ents[0]
    assert (span._.cui, span._.kb_ents, span._.parts) == (None, [], [])


def test_a_coordination_of_very_many_conjuncts_is_left_whole():
    text = ", ".join(f"type {i}" for i in range(2000)) + " and type 2001 diabetes"
    assert split_composite(text) == [text]
    few = ", ".join(f"type {i}" for i in range(MAX_PARTS - 1)) + " and type 99 diabetes"
    assert len(split_composite(few)) == MAX_PARTS
