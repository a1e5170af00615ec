"""The corpora as read: .concept queries and PubTator files, each fault named by file and line,
and PubTator documents as Docs holding exactly their gold spans."""
import pytest
import spacy
from helpers import make_nlp

from spacy_biosyn import BiosynError
from spacy_biosyn.corpora.docs import pubtator_to_doc
from spacy_biosyn.corpora.readers import (
    Annotation,
    CorpusError,
    PubTatorDocument,
    Query,
    read_concept_queries,
    read_pubtator,
)


def test_reads_concept_folders_in_name_order(tmp_path):
    (tmp_path / "2.concept").write_text("2||0|5||Disease||tumor||D009369\n")
    (tmp_path / "1.concept").write_text("1||3|8||Modifier||breast cancer|ovarian cancer||D001943|D010051\n\n")
    queries = read_concept_queries(tmp_path)
    assert [q.doc_id for q in queries] == ["1", "2"]
    assert queries[0] == Query("1", 3, 8, "Modifier", "breast cancer|ovarian cancer", "D001943|D010051")


def test_malformed_concept_line_names_file_and_line(tmp_path):
    path = tmp_path / "9.concept"
    path.write_text("9||0|5||Disease||tumor||D009369\n9||zero|5||Disease||tumor||D009369\n")
    with pytest.raises(CorpusError, match=f"{path}, line 2"):
        read_concept_queries(tmp_path)


def test_folder_without_concept_files_is_an_error(tmp_path):
    with pytest.raises(CorpusError, match="no .concept files"):
        read_concept_queries(tmp_path)


def test_reads_pubtator_skipping_an_exact_copy_and_refusing_a_reused_pmid(tmp_path):
    document = "1|t|Ocular toxicity\n1|a|Seen in rats.\n1\t0\t15\tOcular toxicity\tDisease\t D014786\n1\tCID\tD1\tD014786\n"
    path = tmp_path / "corpus.txt"
    path.write_text(f"\n{document}\n{document}")  # NCBI's train set holds such a copy
    (doc,) = read_pubtator(path)
    assert doc.text == "Ocular toxicity Seen in rats."
    assert [(a.start, a.end, a.text, a.cui) for a in doc.annotations] == [(0, 15, "Ocular toxicity", "D014786")]
    path.write_text(f"{document}\n1|t|Another document\n1|a|Same PMID.\n")
    with pytest.raises(CorpusError, match=f"{path}: document 2 reuses PMID 1 of document 1"):
        read_pubtator(path)


def test_pubtator_docs_hold_exactly_the_gold_spans_and_cuis():
    text = "BRCA1-associated breast cancer in T2DM-prone rats given cisplatin."
    document = PubTatorDocument(
        "1",
        text,
        [
            Annotation(17, 30, "breast cancer", "Disease", "D001943"),
            Annotation(34, 38, "T2DM", "Disease", "D003924"),  # inside the token "T2DM-prone"
            Annotation(56, 65, "cisplatin", "Chemical", "D002945"),
        ],
    )
    nlp = spacy.blank("en")
    doc = pubtator_to_doc(nlp, document)
    assert doc.text == text
    assert [(e.text, e.label_, e.kb_id_) for e in doc.ents] == [
        ("breast cancer", "Disease", "D001943"),
        ("T2DM", "Disease", "D003924"),
        ("cisplatin", "Chemical", "D002945"),
    ]
    assert [e.text for e in pubtator_to_doc(nlp, document, labels={"Chemical"}).ents] == ["cisplatin"]


def test_annotated_mentions_are_read_with_their_gold_fields_and_ids_counted_without_namespace(
    tmp_path, tiny_encoder, disease_dictionary
):
    from spacy_biosyn.corpora.readers import read_annotated_mentions

    pubtator = tmp_path / "train.txt"
    pubtator.write_text(
        "1|t|C7 deficiency and gout.\n1|a|\n"
        "1\t0\t13\tC7 deficiency\tSpecificDisease\tOMIM:610102\n"
        "1\t18\t22\tgout\tDisease\tD006073|-1\n\n"
    )
    assert read_annotated_mentions(pubtator) == [("C7 deficiency", "OMIM:610102"), ("gout", "D006073|-1")]
    engine = make_nlp(tiny_encoder, disease_dictionary).get_pipe("biosyn_linker").engine
    engine.learn_preferred_ids([pubtator])
    assert engine.routes.id_usage == {"610102": 1, "D006073": 1}
    # "gout" has one ID besides its CUI-less part: both mentions teach the NIL model
    assert engine.routes.annotated_mentions == [("c7 deficiency", "610102"), ("gout", "D006073")]


@pytest.mark.parametrize(
    "content, line, what",
    [
        (b"\x1f\x8b\x08\x00compressed", None, ": cannot be read (EOFError"),
        ("1|t|Caf\u00e9 au lait\n".encode("utf-16"), None, "is UTF-16"),
        ("1|t|Gout\n".encode("utf-16-be"), None, "holds NUL bytes (byte 1): it is UTF-16 without a byte-order mark"),
        ("1|t|Gout\n1|a|Caf\u00e9 au lait spots.\n".encode("latin-1"), 2, "not UTF-8 text"),
    ],
)
def test_a_file_that_is_not_utf8_is_named(tmp_path, content, line, what):
    path = tmp_path / "corpus.txt"
    path.write_bytes(content)
    with pytest.raises(BiosynError) as error:
        read_pubtator(path)
    assert str(error.value).startswith(f"{path}, line {line}:" if line else f"{path}")
    assert what in str(error.value)


@pytest.mark.parametrize(
    "annotation, what",
    [
        ("1\t0\t99\tGout\tDisease\tD006073", "outside the 9-character text"),
        ("1\t4\t0\tGout\tDisease\tD006073", "outside the 9-character text"),
        ("1\t0\t4\tgoat\tDisease\tD006073", "the text at 0-4 is 'Gout', not the annotation's 'goat'"),
        ("2\t0\t4\tGout\tDisease\tD006073", "an annotation of PMID 2 inside the document of PMID 1"),
    ],
)
def test_an_annotation_that_does_not_fit_its_text_is_named(tmp_path, annotation, what):
    path = tmp_path / "corpus.txt"
    path.write_text(f"1|t|Gout\n1|a|pain\n{annotation}\n")
    with pytest.raises(CorpusError, match=f"{path}, line 3: .*{what}"):
        read_pubtator(path)


def test_a_document_without_an_abstract_is_its_title():
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "titles.txt"
        path.write_text("1|t|Gout in men\n1\t0\t4\tGout\tDisease\tD006073\n\n2|t|Breast cancer\n2|a|In women.\n")
        first, second = read_pubtator(path)
    assert (first.text, second.text) == ("Gout in men", "Breast cancer In women.")
    assert first.annotations[0].text == "Gout"


def test_a_gzip_compressed_corpus_reads_as_its_text(tmp_path):
    import gzip

    text = "1|t|Gout\n1|a|and pain.\n1\t0\t4\tGout\tDisease\tD006073\n"
    (tmp_path / "plain.txt").write_text(text)
    (tmp_path / "packed.PubTator.gz").write_bytes(gzip.compress(text.encode("utf-8")))
    assert read_pubtator(tmp_path / "packed.PubTator.gz") == read_pubtator(tmp_path / "plain.txt")
