"""NER training data pooled from corpora that annotate different labels."""
import pytest
import spacy
from helpers import NER_ABSTRACTS
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_biosyn.cli import app

# NCBI Disease style: diseases only, so its cisplatin is unannotated.
NCBI_STYLE = """\
7|t|Cisplatin and BRCA1 in ovarian cancer
7|a|Gout was rare, dox no cure.
7\t23\t37\tovarian cancer\tSpecificDisease\tD010051
7\t38\t42\tGout\tSpecificDisease\tD006073
"""


def _tokens(doc):
    return {token.text: (token.ent_iob_, token.ent_type_) for token in doc}


def test_a_label_only_the_other_corpus_annotates_is_missing_not_outside(tmp_path):
    (tmp_path / "ncbi.txt").write_text(NCBI_STYLE)
    (tmp_path / "pool").mkdir()
    (tmp_path / "pool" / "bc5cdr-disease.PubTator.txt").write_text(NER_ABSTRACTS)
    args = ["convert", str(tmp_path / "ncbi.txt"), str(tmp_path / "pooled.spacy"), "--pool", str(tmp_path / "pool")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "3 documents" in said and "1 tokens missing" in said
    ncbi, *cdr = DocBin().from_disk(tmp_path / "pooled.spacy").get_docs(spacy.blank("en").vocab)
    tokens = _tokens(ncbi)
    # CDR annotates "Cisplatin" as Chemical: unknown here, neither entity nor outside.
    assert tokens["Cisplatin"] == ("", "")
    assert tokens["BRCA1"] == ("O", "") and tokens["and"] == ("O", "")
    # A short name counts as written: BC5CDR's "DOX" is not NCBI's "dox" (nor its "NO" the word "no").
    assert tokens["dox"] == ("O", "")
    assert [(e.text, e.label_) for e in ncbi.ents] == [("ovarian cancer", "Disease"), ("Gout", "Disease")]
    # The corpus that annotates both labels keeps every token decided.
    assert all(token.ent_iob_ for doc in cdr for token in doc)
    assert {e.label_ for doc in cdr for e in doc.ents} == {"Chemical", "Disease"}


def test_an_empty_pool_converts_the_corpus_alone(tmp_path):
    (tmp_path / "ncbi.txt").write_text(NCBI_STYLE)
    (tmp_path / "pool").mkdir()
    args = ["convert", str(tmp_path / "ncbi.txt"), str(tmp_path / "ncbi.spacy"), "--pool", str(tmp_path / "pool")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (doc,) = DocBin().from_disk(tmp_path / "ncbi.spacy").get_docs(spacy.blank("en").vocab)
    assert all(token.ent_iob_ for token in doc)


ENDS_WITH_A_DISEASE = """\
3|t|Cocaine abuse
3|a|Then seizures
3\t19\t27\tseizures\tDisease\tD012640
"""


def test_the_vocabulary_swaps_mentions_and_adds_names_as_documents(tmp_path, disease_dictionary):
    from spacy_biosyn.kb.dictionary import Dictionary

    (tmp_path / "cdr.txt").write_text(NER_ABSTRACTS + "\n" + ENDS_WITH_A_DISEASE)
    args = [
        "convert", str(tmp_path / "cdr.txt"), str(tmp_path / "out.spacy"), "--label-map", "",
        "--names", f"Disease={disease_dictionary}", "--replace-copies", "1", "--name-examples", "3",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    docs = list(DocBin().from_disk(tmp_path / "out.spacy").get_docs(spacy.blank("en").vocab))
    assert len(docs) == 3 + 3 + 3
    vocabulary = set(Dictionary.from_file(disease_dictionary).names)
    for original, swapped in zip(docs[:3], docs[3:6]):
        diseases = [e.text for e in swapped.ents if e.label_ == "Disease"]
        assert set(diseases) <= vocabulary
        # The text is the original with each disease swapped; chemicals and spacing stay.
        expected = original.text
        for span, name in reversed(list(zip([e for e in original.ents if e.label_ == "Disease"], diseases))):
            expected = expected[: span.start_char] + name + expected[span.end_char :]
        assert swapped.text == expected
        assert [(e.text, e.label_) for e in swapped.ents if e.label_ == "Chemical"] == [
            (e.text, e.label_) for e in original.ents if e.label_ == "Chemical"
        ]
    for doc in docs[6:]:
        assert [(e.text, e.label_) for e in doc.ents] == [(doc.text, "Disease")] and doc.text in vocabulary


def test_vocabulary_copies_are_the_same_for_the_same_seed(tmp_path, disease_dictionary):
    (tmp_path / "cdr.txt").write_text(NER_ABSTRACTS)
    texts = []
    for run in ("a", "b"):
        args = [
            "convert", str(tmp_path / "cdr.txt"), str(tmp_path / f"{run}.spacy"), "--label-map", "",
            "--names", f"Disease={disease_dictionary}", "--replace-copies", "2",
        ]
        assert CliRunner().invoke(app, args).exit_code == 0
        texts.append([doc.text for doc in DocBin().from_disk(tmp_path / f"{run}.spacy").get_docs(spacy.blank("en").vocab)])
    assert texts[0] == texts[1] and len(set(texts[0][2:])) > 1


@pytest.mark.parametrize(
    "names, said",
    [("Diseases={dictionary}", "no entity has it"), ("Disease=nowhere.txt", "no such file"), ("Disease", "LABEL=VOCABULARY")],
)
def test_a_bad_names_option_is_named(tmp_path, disease_dictionary, names, said):
    (tmp_path / "cdr.txt").write_text(NER_ABSTRACTS)
    args = [
        "convert", str(tmp_path / "cdr.txt"), str(tmp_path / "out.spacy"), "--label-map", "",
        "--names", names.format(dictionary=disease_dictionary), "--replace-copies", "1",
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code != 0 and said in " ".join(result.output.split())
    assert not (tmp_path / "out.spacy").exists()


def test_vocabulary_options_without_names_are_refused(tmp_path):
    (tmp_path / "cdr.txt").write_text(NER_ABSTRACTS)
    result = CliRunner().invoke(app, ["convert", str(tmp_path / "cdr.txt"), str(tmp_path / "o.spacy"), "--replace-copies", "1"])
    assert result.exit_code != 0 and "--names" in result.output
