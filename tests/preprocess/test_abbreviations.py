import logging
import os
import re
import subprocess
import sys

import pytest
from spacy.util import registry

from spacy_biosyn.preprocess.abbreviations import Ab3PDetector, SchwartzHearstDetector
from spacy_biosyn.ty import Abbreviation

TEXT = (
    "Die Schwartz–Jampel-Krankheit ist selten. Patients with spinal muscular atrophy (SMA) "
    "and café au lait spots (CALS) were seen; SMA is common."
)


@pytest.mark.parametrize("detector", [Ab3PDetector(), SchwartzHearstDetector()])
def test_offsets_are_characters_even_after_non_ascii_text(detector):
    found = detector(TEXT)
    assert [(a.short_form, a.long_form) for a in found] == [
        ("SMA", "spinal muscular atrophy"),
        ("CALS", "café au lait spots"),
    ]
    for abbreviation in found:
        assert TEXT[abbreviation.short_start : abbreviation.short_end] == abbreviation.short_form
        assert TEXT[abbreviation.long_start : abbreviation.long_end] == abbreviation.long_form
    # Bytes and characters differ here: "–" is 3 bytes, "é" 2.
    assert found[1].short_start == TEXT.index("(CALS") + 1


@pytest.mark.parametrize("before", ["", "Seen in 3\x00 cases. ", "A \x01\x1f\x7f code. ", "A lone \ud800 surrogate. "])
def test_characters_ab3ps_c_code_cannot_read_change_no_definition(before):
    """Ab3P's C strings end at a NUL: everything after one was read as text
    without abbreviations, and "BC" linked to another concept."""
    text = before + "Germline breast cancer (BC) in women. BC is common."
    found = Ab3PDetector()(text)
    assert [(a.short_form, a.long_form) for a in found] == [("BC", "breast cancer")]
    assert text[found[0].short_start : found[0].short_end] == "BC" and text[found[0].long_start :].startswith("breast")


def test_ab3p_finds_definitions_in_sentences_with_whitespace_runs(capfd):
    text = "Three sisters had fish-eye disease (FED),  a defect of lecithin  cholesterol\nacyltransferase (LCAT)."
    found = Ab3PDetector()(text)
    assert [a.short_form for a in found] == ["FED", "LCAT"]
    # Forms are the text as written, whitespace included, at their offsets.
    assert found[1].long_form == "lecithin  cholesterol\nacyltransferase"
    assert all(text[a.long_start : a.long_end] == a.long_form for a in found)
    assert "Failed to find sentence" not in capfd.readouterr().err


@pytest.mark.parametrize("text", ["a b", "a\tb  c", "a\u00a0\u2003b é\n\nü", " lead and trail \r\n", "\U0001F600 x\t"])
def test_each_byte_ab3p_reads_maps_back_to_the_character_it_came_from(text):
    from spacy_biosyn.preprocess.abbreviations import _collapse_whitespace

    # Every whitespace run becomes one space, which maps to the run's first
    # character; every other character's UTF-8 bytes map to it.
    origin = []
    for i, char in enumerate(text):
        if not (char.isspace() and i > 0 and text[i - 1].isspace()):
            origin += [i] * (1 if char.isspace() else len(char.encode("utf-8")))
    collapsed, found = _collapse_whitespace(text)
    assert collapsed == re.sub(r"\s+", " ", text)
    assert found.tolist() == origin


def test_what_ab3ps_native_code_prints_reaches_neither_stdout_nor_stderr(capfd):
    import random

    dna = "".join(random.Random(0).choice("ACGT") for _ in range(2000))  # Ab3P prints "tokens differ: ACGT..."
    found = Ab3PDetector()(f"The sequence ({dna}) of breast cancer (BC).")
    assert [(a.short_form, a.long_form) for a in found] == [("BC", "breast cancer")]
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("name", ["spacy_biosyn.Ab3P.v1", "spacy_biosyn.SchwartzHearst.v1"])
def test_texts_without_definitions_give_no_abbreviations(name):
    detector = registry.misc.get(name)()
    assert detector("") == []
    assert detector("   ") == []
    assert detector("SMA is common in this cohort.") == []
    # Parentheses that hold no short form, or one whose letters the
    # preceding words do not contain.
    assert detector("Ten patients (n = 10) were seen in 1995 (1995); all were well (XQZ).") == []
    # A one-letter short form, and letters found only in an earlier sentence.
    assert detector("Its susceptibility gene (s) is known. Lidocaine is given. Then (LN) rose.") == []


def test_schwartz_hearst_keeps_digits_and_hyphens_of_the_short_form():
    text = "We used heat shock protein 70 (HSP70) and 5-fluorouracil (5-FU)."
    found = SchwartzHearstDetector()(text)
    assert [(a.short_form, a.long_form) for a in found] == [
        ("HSP70", "heat shock protein 70"),
        ("5-FU", "5-fluorouracil"),
    ]


def test_schwartz_hearst_finds_a_long_form_that_opens_the_text():
    text = "Spinal muscular atrophy (SMA) is rare. Later, heat shock protein 70 (HSP70) rose."
    found = SchwartzHearstDetector()(text)
    assert [(a.long_form, a.long_start) for a in found] == [
        ("Spinal muscular atrophy", 0),
        ("heat shock protein 70", text.index("heat")),
    ]


def test_abbreviation_ends_follow_from_the_forms():
    abbreviation = Abbreviation("SMA", "spinal muscular atrophy", 30, 5)
    assert (abbreviation.short_end, abbreviation.long_end) == (33, 28)


def test_pairs_after_a_sentence_ab3p_cannot_find_keep_their_forms():
    # Ab3P prints "Failed to find sentence" on "Hoehn _ Yahr" and reports later offsets wrongly.
    text = (
        "Patients (Hoehn _ Yahr stage 3-5) with Parkinson's disease (PD) were selected. "
        "Six were operated on in the globus pallidus interna (GPi) and four in the subthalamic nucleus (STN)."
    )
    found = Ab3PDetector()(text)
    assert [(a.short_form, a.long_form) for a in found] == [
        ("PD", "Parkinson's disease"), ("GPi", "globus pallidus interna"), ("STN", "subthalamic nucleus"),
    ]
    assert all(text[a.short_start : a.short_end] == a.short_form for a in found)


def test_inputs_that_kill_ab3p_in_one_call_are_survived():
    # Run apart: before the fix each of these ended the process with SIGSEGV or SIGABRT.
    code = """
from spacy_biosyn.preprocess.abbreviations import Ab3PDetector
detect = Ab3PDetector()
assert detect("cancer " + "x" * 100_001) == []
assert [a.short_form for a in detect("Breast cancer (BC) " + "word " * 50_000 + ".")] == ["BC"]
assert [a.short_form for a in detect("Breast cancer (BC) " + "(" * 25_000 + "x" + ")" * 25_000)] == ["BC"]
assert len(detect("breast cancer (BC) " * 20_000)) == 20_000
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]


def test_a_definition_cut_by_the_edge_of_a_piece_is_found_once():
    # No sentence end in the first 10,000 characters: the piece given to Ab3P
    # is cut at a space, between "atrophy" and "(SMA)".
    padding = ("patients were studied " * 454)[:9_984] + " "
    text = padding + "spinal muscular atrophy (SMA) is frequent. We saw SMA in 3 cases."
    found = Ab3PDetector()(text)
    assert [(a.short_form, a.long_form) for a in found] == [("SMA", "spinal muscular atrophy")]
    assert text[found[0].long_start : found[0].long_end] == "spinal muscular atrophy"


def test_what_ab3p_writes_to_stderr_is_caught_and_counted_in_a_debug_line(capfd, caplog):
    class Noisy:
        def get_abbrs(self, text):  # writes as Ab3P's C++ code does, below Python's sys.stderr
            os.write(2, b"Failed to find sentence: x\nin text: " + text.encode() + b"\n")
            return []

    detector = Ab3PDetector()
    detector._ab3p = Noisy()
    with caplog.at_level(logging.DEBUG, logger="spacy_biosyn"):
        assert detector("Breast cancer (BC) is common.") == []
        assert detector("Ovarian cancer (OC) is rarer.") == []
    assert capfd.readouterr().err == ""
    assert [r.getMessage() for r in caplog.records] == [
        "Ab3P could not find 1 sentence(s) of a 29-character text; offsets were checked",
        "Ab3P could not find 1 sentence(s) of a 29-character text; offsets were checked",
    ]
