import pytest

from spacy_biosyn import BiosynError, Dictionary, DictionaryError, normalize
from spacy_biosyn.kb.details import ConceptDetails, ConceptTable, read_details, write_details
from spacy_biosyn.preprocess.text import text_lines


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Parkinson's disease", "parkinson s disease"),
        ("  Type-2   Diabetes\t", "type 2 diabetes"),
        ("(SCA1)", "sca1"),
        ("...;--", ""),
    ],
)
def test_normalize_matches_biosyn(raw, expected):
    assert normalize(raw) == expected


@pytest.mark.parametrize(
    "variant, plain",
    [
        ("Crohn’s disease", "Crohn's disease"),  # BioSyn removed ASCII punctuation only: "crohn’s disease"
        ("Schwartz–Jampel syndrome", "Schwartz-Jampel syndrome"),
        ("Schwartz\u2010Jampel syndrome", "Schwartz-Jampel syndrome"),
        ("“gout”", '"gout"'),
        ("breast\u00a0cancer", "breast cancer"),
        ("\ufb01brosis", "fibrosis"),
        ("ＣＭＴ disease", "CMT disease"),
        ("hyper\u00adtension", "hypertension"),
        ("gout\u200b", "gout"),
    ],
)
def test_unicode_spellings_normalize_as_their_plain_forms(variant, plain):
    assert normalize(variant) == normalize(plain)


def test_reads_biosyn_dictionary_keeping_every_cui(tmp_path):
    path = tmp_path / "d.txt"
    path.write_bytes(
        "\ufeffC565588||Epidermolysis Bullosa\r\n\r\nC567755|613097||tooth agenesis selective 6\r\n".encode()
    )
    d = Dictionary.from_file(path)
    assert list(d.names) == ["epidermolysis bullosa", "tooth agenesis selective 6"]
    assert list(d.cuis) == [("C565588",), ("C567755", "613097")]


def test_names_that_normalize_alike_merge_their_cuis(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text("D1||Huntington's disease\nD2||huntington s disease\nD1||huntington disease\n")
    d = Dictionary.from_file(path)
    assert list(d.names) == ["huntington s disease", "huntington disease"]
    assert list(d.cuis) == [("D1", "D2"), ("D1",)]


@pytest.mark.parametrize(
    "content, line, what",
    [
        ("D1||ok name\nD2 missing separator\n", 2, "expected 'CUI||name'"),
        ("D1||ok\n||no cui\n", 2, "empty concept ID"),
        ("D1||ok\nD2| ||bad\n", 2, "empty concept ID"),
        ("D1||ok\n+||no id at all\n", 2, "empty concept ID"),
        ("\nD1||---\n", 2, "empty once punctuation is removed"),
    ],
)
def test_malformed_line_names_file_and_line(tmp_path, content, line, what):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    with pytest.raises(DictionaryError) as err:
        Dictionary.from_file(path)
    assert f"{path}, line {line}" in str(err.value)
    assert what in str(err.value)


def test_a_nul_byte_anywhere_in_a_file_names_its_line(tmp_path):
    """Not only in the first 4,096 bytes, where the UTF-16 check looks."""
    path = tmp_path / "corpus.txt"
    path.write_bytes(b"D1||breast cancer\n" * 400 + b"D2||ovarian\x00 cancer\n")
    with pytest.raises(BiosynError, match=f"{path}, line 401: holds a NUL byte"):
        list(text_lines(path))


def test_empty_dictionary_is_an_error(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n")
    with pytest.raises(DictionaryError, match="no 'CUI\\|\\|name' entries"):
        Dictionary.from_file(path)


def test_file_round_trip_is_exact(tmp_path, disease_dictionary):
    d = Dictionary.from_file(disease_dictionary)
    d.to_file(tmp_path / "copy.txt")
    copy = Dictionary.from_file(tmp_path / "copy.txt")
    assert (list(copy.names), list(copy.cuis)) == (list(d.names), list(d.cuis))
    assert copy.fingerprint() == d.fingerprint()


def test_a_saved_dictionary_reads_back_whole_and_a_changed_one_is_refused(tmp_path):
    # Names with several concepts, a concept with several IDs, non-ASCII names.
    d = Dictionary.from_pairs([("D1|114480", "Breast cancer"), ("D2", "hpp"), ("D3", "HPP"), ("D4", "Sjögren syndrome")])
    d.to_file(tmp_path / "saved.txt")
    back = Dictionary.from_saved(tmp_path / "saved.txt", d.fingerprint())
    assert (list(back.names), list(back.concepts)) == (list(d.names), list(d.concepts))
    assert list(back.concepts)[1] == (("D2",), ("D3",))
    (tmp_path / "saved.txt").write_text("D9||breast cancer\n", encoding="utf-8")
    with pytest.raises(DictionaryError, match="saved.txt: not the dictionary that was saved"):
        Dictionary.from_saved(tmp_path / "saved.txt", d.fingerprint())


def test_packed_names_behave_like_a_list():
    pairs = [("D1", "Ménière disease"), ("D2", "Sjögren syndrome"), ("D3", "gout")]
    d = Dictionary.from_pairs(pairs)
    expected = ["ménière disease", "sjögren syndrome", "gout"]
    assert [d.names[i] for i in range(3)] == expected  # multi-byte characters keep their offsets
    assert (d.names[-1], d.names[1:], d.cuis[-1]) == ("gout", expected[1:], ("D3",))
    assert all(name in d for name in expected)
    assert "sjögren" not in d and "gout " not in d
    with pytest.raises(IndexError):
        d.names[3]
    assert d.names.take([2, 0, 2]) == ["gout", "ménière disease", "gout"]  # as a search returns rows
    assert d.concepts.take([1]) == [d.concepts[1]] and d.names.take([]) == []
    with pytest.raises(IndexError):
        d.names.take([0, 3])


def test_names_shared_by_entries_keep_one_concept_per_entry():
    d = Dictionary.from_pairs([("D1|613097", "hpp"), ("C2", "hpp"), ("D1", "hpp"), ("613097|D1", "hpp")])
    # the third and fourth entries name the first entry's concept again
    assert d.concepts[0] == (("D1", "613097"), ("C2",))
    assert d.cuis[0] == ("D1", "613097", "C2")


def test_preferred_ids_follow_what_a_corpus_uses():
    d = Dictionary.from_pairs([("D001943|114480", "breast cancer"), ("C566443|610102", "c7 deficiency")])
    usage = {"610102": 12, "C566443": 1}
    assert list(d.with_preferred_ids(usage).concepts) == [
        (("D001943", "114480"),),  # no usage: the order stands
        (("610102", "C566443"),),
    ]


def test_a_name_that_concepts_share_lists_first_the_one_a_corpus_uses_most():
    # raw MEDIC gives "dm" to diabetes mellitus first and to myotonic dystrophy after
    d = Dictionary.from_pairs([("D003920", "dm"), ("D009223|160900", "dm"), ("D003920", "diabetes")])
    usage = {"160900": 30, "D009223": 2, "D003920": 5}
    assert list(d.with_preferred_ids(usage).concepts) == [
        (("160900", "D009223"), ("D003920",)),  # 30 uses against 5
        (("D003920",),),
    ]
    assert list(d.with_preferred_ids({"D003920": 1}).concepts)[0] == (("D003920",), ("D009223", "160900"))


def test_a_lone_surrogate_is_normalized_away_not_passed_to_the_tokenizer():
    assert normalize("a\ud800b") == "a b"


def test_each_ids_rows_are_its_names_in_order_and_an_unknown_id_has_none(tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(
        "D001943|114480||breast cancer\n"
        "D001943||breast neoplasms\n"
        "D010051||ovarian cancer\n"
        "D001943|114480||breast carcinoma\n"
        "D003920||hpp\n"
        "D006940||hpp\n",
        encoding="utf-8",
    )
    dictionary = Dictionary.from_file(path)
    by_id = dictionary.rows_by_cui
    expected = {}
    for row, ids in enumerate(dictionary.cuis):
        for cui in ids:
            expected.setdefault(cui, []).append(row)
    assert {cui: by_id[cui].tolist() for cui in by_id} == expected
    assert len(by_id["D001943"]) == 3 and by_id["114480"].tolist() == expected["114480"]
    assert by_id.get("D999999") is None and "MESH:D001943" not in by_id
    with pytest.raises(KeyError):
        by_id["d001943"]


def test_lookups_still_answer_in_a_process_with_other_string_hashes(tmp_path):
    import os
    import pickle
    import subprocess
    import sys

    path = tmp_path / "d.txt"
    path.write_text("D001943|114480||breast cancer\nD010051||ovarian cancer\n", encoding="utf-8")
    dictionary = Dictionary.from_file(path).with_details({"D010051": ConceptDetails("Ovarian Neoplasms")})
    assert dictionary.row("ovarian cancer") == 1 and dictionary.rows_by_cui["D010051"].tolist() == [1]
    assert dictionary.details["D010051"].name == "Ovarian Neoplasms"
    (tmp_path / "d.pickle").write_bytes(pickle.dumps(dictionary))  # as a spawned nlp.pipe worker gets it
    script = ("import pickle, sys; d = pickle.loads(open(sys.argv[1], 'rb').read()); "
              "print(d.row('ovarian cancer'), d.rows_by_cui['D010051'].tolist(), 'D010051' in d.details)")
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "d.pickle")], capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.split() == ["1", "[1]", "True"]


def test_concept_details_are_packed_into_a_table_that_answers_as_the_dict_it_was_made_from(tmp_path):
    details = {
        "C0006142": ConceptDetails("Malignant neoplasm of breast", ("T191",), "A malignant tumor of the breast."),
        "C0011849": ConceptDetails("Diabetes Mellitus", ("T047", "T048")),
        "D000071380": ConceptDetails("Maladie de Crohn – forme précoce", (), "Définition: « rare »"),
        "": ConceptDetails(""),
    }
    table = ConceptTable.of(details)
    assert table == details and dict(table) == details
    assert list(table) == list(details) and list(table.items()) == list(details.items())
    assert list(table.values()) == list(details.values()) and len(table) == 4
    assert table["C0011849"].types == ("T047", "T048") and table.get("C9999999") is None
    assert "c0011849" not in table and 42 not in table and "" in table
    with pytest.raises(KeyError):
        table["C9999999"]
    assert ConceptTable.of(table) is table
    write_details(tmp_path / "concepts.jsonl", table)
    assert read_details(tmp_path / "concepts.jsonl") == details
    assert read_details(tmp_path / "none.jsonl") == {}


def test_a_concept_saved_twice_is_refused_naming_it(tmp_path):
    path = tmp_path / "concepts.jsonl"
    lines = [f'{{"id": "C{i}", "name": "n{i}", "types": [], "definition": ""}}' for i in (0, 1, 2, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DictionaryError, match=r"concepts.jsonl: the concept 'C1' is saved twice"):
        read_details(path)


@pytest.mark.parametrize("line", [
    '{"id": "C1", "name": "x", "types": "T047", "definition": ""}',
    '{"id": "C1", "name": 3, "types": [], "definition": ""}',
    '{"id": "C1", "name": "x", "types": [], "definition": null}',
    '{"id": "C1", "name": "x", "types": []}',
    '["C1", "x"]',
])
def test_a_saved_concept_that_is_not_one_is_refused_naming_its_line(tmp_path, line):
    path = tmp_path / "concepts.jsonl"
    path.write_text('{"id": "C0", "name": "y", "types": ["T047"], "definition": ""}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(DictionaryError, match=r"concepts.jsonl, line 2: not a saved concept"):
        read_details(path)
