from spacy.util import registry

from spacy_biosyn.abbreviations import Ab3PDetector, Abbreviation


def test_ab3p_offsets_are_characters_even_after_non_ascii_text():
    text = (
        "Die Schwartz–Jampel-Krankheit ist selten. Patients with spinal muscular atrophy (SMA) "
        "and café au lait spots (CALS) were seen; SMA is common."
    )
    found = Ab3PDetector()(text)
    assert [(a.short_form, a.long_form) for a in found] == [
        ("SMA", "spinal muscular atrophy"),
        ("CALS", "café au lait spots"),
    ]
    for abbreviation in found:
        assert text[abbreviation.short_start : abbreviation.short_end] == abbreviation.short_form
        assert text[abbreviation.long_start : abbreviation.long_end] == abbreviation.long_form
    # Bytes and characters differ here: "–" is 3 bytes, "é" 2.
    assert found[1].short_start == text.index("(CALS") + 1


def test_texts_without_definitions_give_no_abbreviations():
    detector = registry.misc.get("spacy_biosyn.Ab3P.v1")()
    assert detector("") == []
    assert detector("   ") == []
    assert detector("SMA is common in this cohort.") == []


def test_abbreviation_ends_follow_from_the_forms():
    abbreviation = Abbreviation("SMA", "spinal muscular atrophy", 30, 5)
    assert (abbreviation.short_end, abbreviation.long_end) == (33, 28)
