"""One NER for two annotation guidelines: a head per corpus over one shared
transformer (configs/ner-guidelines.cfg). Each head learns from its own
corpus's documents only, writes its own span group, and doc.ents comes from
the guideline asked for, or the union."""
from pathlib import Path

import pytest
import spacy
from spacy.cli.train import train
from spacy.tokens import DocBin
from spacy.training import Example
from typer.testing import CliRunner

from helpers import NER_ABSTRACTS, TINY_TRANSFORMER

from spacy_biosyn.cli import app
from spacy_biosyn.ner.guidelines import GUIDELINE_KEY, GuidelineEntities, spans_key

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "ner-guidelines.cfg"
# NCBI Disease's guideline: the modifier inside the span, no chemicals.
NCBI_STYLE = """\
7|t|Hereditary breast cancer and cisplatin
7|a|Gout was rare.
7\t0\t24\tHereditary breast cancer\tSpecificDisease\tD061325
7\t39\t43\tGout\tSpecificDisease\tD006073
"""


@pytest.fixture(scope="module")
def guideline_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("guidelines")
    (folder / "ncbi.txt").write_text(NCBI_STYLE)
    (folder / "pool").mkdir()
    (folder / "pool" / "bc5cdr-disease.PubTator.txt").write_text(NER_ABSTRACTS)  # as the data step names it
    args = ["convert", str(folder / "ncbi.txt"), str(folder / "both.spacy"), "--pool", str(folder / "pool"),
            "--guideline", "ncbi-disease"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return folder / "both.spacy"


def test_convert_keeps_each_documents_guideline_a_pooled_files_from_its_name_or_as_given(guideline_corpus, tmp_path):
    docs = list(DocBin().from_disk(guideline_corpus).get_docs(spacy.blank("en").vocab))
    assert [doc.user_data[GUIDELINE_KEY] for doc in docs] == ["ncbi-disease", "bc5cdr-disease", "bc5cdr-disease"]
    (tmp_path / "a.txt").write_text(NCBI_STYLE)
    (tmp_path / "b.txt").write_text(NER_ABSTRACTS)
    result = CliRunner().invoke(app, ["convert", str(tmp_path / "a.txt"), str(tmp_path / "ab.spacy"), "--pool",
                                      str(tmp_path / "b.txt"), "--guideline", "ncbi", "--guideline", "cdr"])
    assert result.exit_code == 0, result.output
    docs = list(DocBin().from_disk(tmp_path / "ab.spacy").get_docs(spacy.blank("en").vocab))
    assert [doc.user_data[GUIDELINE_KEY] for doc in docs] == ["ncbi", "cdr", "cdr"]
    result = CliRunner().invoke(app, ["convert", str(tmp_path / "a.txt"), str(tmp_path / "a.spacy"),
                                      "--guideline", "ncbi-disease", "--guideline", "bc5cdr-disease"])
    assert result.exit_code != 0
    said = " ".join(result.output.replace("│", " ").split())
    assert "--guideline" in said and "2 given for 1 files (a.txt and 0 pooled): name one per file" in said


@pytest.fixture(scope="module")
def trained(guideline_corpus, tiny_encoder, tmp_path_factory):
    out = tmp_path_factory.mktemp("guideline-ner")
    train(CONFIG, out, overrides={"paths.train": str(guideline_corpus), "paths.dev": str(guideline_corpus),
                                  "paths.encoder": tiny_encoder, "training.max_steps": 3,
                                  "training.eval_frequency": 2, **TINY_TRANSFORMER})
    return spacy.load(out / "model-last")


def test_each_head_learns_the_labels_of_its_own_corpus_only(trained):
    assert trained.pipe_names == ["transformer", "ner_ncbi_disease", "ner_bc5cdr", "entities"]
    assert set(trained.get_pipe("ner_ncbi_disease").labels) == {"Disease"}  # NCBI marks no chemicals
    assert set(trained.get_pipe("ner_bc5cdr").labels) == {"Chemical", "Disease"}
    assert trained.get_pipe("ner_bc5cdr").guideline == "bc5cdr-disease"


def test_a_head_reads_the_other_corpus_as_unannotated_and_its_own_as_given(trained, guideline_corpus):
    head = trained.get_pipe("ner_ncbi_disease")
    references = list(DocBin().from_disk(guideline_corpus).get_docs(trained.vocab))
    examples = [Example(trained.make_doc(ref.text), ref) for ref in references]
    own, other, _ = head._own(examples)
    assert own is examples[0]
    assert {token.ent_iob for token in other.reference} == {0}  # missing: no loss either way
    assert [e.text for e in examples[1].reference.ents][:2] == ["Doxorubicin", "DOX"]  # the original untouched


def test_heads_write_their_span_groups_and_leave_doc_ents_to_the_entities_component(trained):
    with trained.select_pipes(disable=["entities"]):
        doc = trained("Hereditary breast cancer and cisplatin-induced gout.")
    assert doc.ents == ()
    assert set(doc.spans) >= {spans_key("ncbi-disease"), spans_key("bc5cdr-disease")}
    union = trained("Hereditary breast cancer and cisplatin-induced gout.")
    found = {(s.start, s.end) for key in (spans_key("ncbi-disease"), spans_key("bc5cdr-disease")) for s in union.spans[key]}
    assert {(e.start, e.end) for e in union.ents} <= found


def test_the_entities_are_one_guidelines_or_the_union_with_the_longest_where_they_overlap():
    nlp = spacy.blank("en")
    doc = nlp("Hereditary breast cancer and cisplatin.")
    doc.spans[spans_key("ncbi-disease")] = [doc.char_span(0, 24, label="Disease")]
    doc.spans[spans_key("bc5cdr-disease")] = [doc.char_span(11, 24, label="Disease"), doc.char_span(29, 38, label="Chemical")]
    guidelines = ["ncbi-disease", "bc5cdr-disease"]

    def ents(decode):
        return [(e.text, e.label_) for e in GuidelineEntities("entities", decode, guidelines)(doc.copy()).ents]

    assert ents("union") == [("Hereditary breast cancer", "Disease"), ("cisplatin", "Chemical")]
    assert ents("ncbi-disease") == [("Hereditary breast cancer", "Disease")]
    assert ents("bc5cdr-disease") == [("breast cancer", "Disease"), ("cisplatin", "Chemical")]


@pytest.mark.parametrize("decode, guidelines, message", [
    ("cdr", ["ncbi-disease", "bc5cdr-disease"], "decode must be 'union' or one of the guidelines"),
    ("union", [], "guidelines must list the heads' guidelines, each once"),
    ("union", ["bc5cdr-disease", "bc5cdr-disease"], "guidelines must list the heads' guidelines, each once"),
])
def test_a_decode_naming_no_head_is_refused_naming_the_setting(decode, guidelines, message):
    with pytest.raises(ValueError, match=message):
        GuidelineEntities("entities", decode, guidelines)


def test_a_head_without_a_guideline_is_refused():
    with pytest.raises(ValueError, match="guideline must name the corpus whose annotations the head learns"):
        spacy.blank("en").add_pipe("biosyn_guideline_ner", config={"guideline": "union"})


def test_the_heads_run_on_the_bert_exported_to_onnx_with_the_same_span_groups(trained, tmp_path):
    from spacy_biosyn.ner.onnx_export import with_onnx_ner

    text = "Hereditary breast cancer and cisplatin-induced gout in BRCA1 carriers."
    trained.to_disk(tmp_path / "p")
    exported = spacy.load(tmp_path / "p", config={"components": {"transformer": {"model": {"precision": "fp32"}}}})
    before = exported(text)
    assert with_onnx_ner(exported) == ["transformer"]
    after = exported(text)
    for guideline in ("ncbi-disease", "bc5cdr-disease"):
        key = spans_key(guideline)
        assert [(s.start, s.end, s.label_) for s in after.spans[key]] == [(s.start, s.end, s.label_) for s in before.spans[key]]


def test_a_load_chooses_the_guideline_to_decode(trained, tmp_path):
    trained.to_disk(tmp_path / "p")
    nlp = spacy.load(tmp_path / "p", config={"components.entities.decode": "bc5cdr-disease"})
    assert nlp.get_pipe("entities").decode == "bc5cdr-disease"
    with pytest.raises(ValueError, match="decode must be 'union' or one of the guidelines"):
        spacy.load(tmp_path / "p", config={"components.entities.decode": "cdr"})
