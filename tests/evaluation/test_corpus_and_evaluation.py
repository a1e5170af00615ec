import pytest
import spacy

import spacy_biosyn.evaluation  # noqa: F401 (registers the Span extensions)
from helpers import make_nlp
from spacy_biosyn import MEDIC_NAMESPACES, BiosynError
from spacy_biosyn.corpora.docs import pubtator_to_doc, pubtator_to_examples
from spacy_biosyn.corpora.readers import (
    Annotation,
    CorpusError,
    PubTatorDocument,
    Query,
    read_concept_queries,
    read_pubtator,
)
from spacy_biosyn.errors import MismatchError
from spacy_biosyn.evaluation.end_to_end import end_to_end_scores
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.pipeline.accuracy import link_scores
from spacy_biosyn.ty import Candidate, LinkedPart


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


def ranker(table):
    """A fake linker: mention -> list of CUI tuples, best first."""
    return lambda texts: [[Candidate(t, (cuis,), 1.0) for cuis in table[t]] for t in texts]


def test_acc_at_k_follows_biosyn_rules():
    table = {
        "a": [("X",), ("A",)],             # right at rank 2
        "b": [("B", "Z"), ("Y",)],         # a name with several IDs: any one counts
        "c": [("C",)],
        "d": [("Q",), ("R",), ("D",)],     # composite c|d: right only once d is
        "e": [],                           # nothing to link
    }
    queries = [
        Query("1", 0, 1, "Disease", "a", "A"),
        Query("1", 0, 1, "Disease", "b", "B"),
        Query("1", 0, 1, "Disease", "c|d", "C|D"),
        Query("1", 0, 1, "Disease", "e", "E"),
    ]
    metrics = evaluate(ranker(table), queries, max_k=3)
    assert metrics == {"link_acc_1": 0.25, "link_acc_2": 0.5, "link_acc_3": 0.75, "n": 4, "unscored": 0}


def test_plus_joined_gold_ids_and_mentions_are_split():
    queries = [Query("1", 0, 1, "Disease", "hprt aprt deficient", "300322+102600")]
    assert evaluate(ranker({"hprt aprt deficient": [("102600",)]}), queries, max_k=1)["link_acc_1"] == 1.0


def test_no_queries_is_an_error():
    with pytest.raises(ValueError, match="no mentions"):
        evaluate(ranker({}), [])


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


def test_linked_examples_are_scored_on_the_parts_chosen_and_on_the_ids_users_read():
    document = PubTatorDocument("1", "breast and ovarian cancer; CIPS; (-); gout", [
        Annotation(0, 25, "breast and ovarian cancer", "Disease", "D001943|D010051"),
        Annotation(27, 31, "CIPS", "Disease", "-1"),
        Annotation(33, 36, "(-)", "Disease", "D000001"),
        Annotation(38, 42, "gout", "Disease", "D006073"),
    ])
    (example,) = pubtator_to_examples(spacy.blank("en"), [document])
    assert [e.kb_id_ for e in example.reference.ents] == ["D001943|D010051", "-1", "D000001", "D006073"]
    assert [e.kb_id_ for e in example.predicted.ents] == ["", "", "", ""]  # for the linker to fill
    composite, cuiless, punctuation, gout = example.predicted.ents
    composite._.parts = [
        LinkedPart("breast cancer", [Candidate("breast cancer", (("114480", "D001943"),), 1.0)]),
        LinkedPart("ovarian cancer", [Candidate("ovarian cancer", (("D010051",),), 0.8)]),
    ]
    composite._.cui = "114480|D010051"  # the ranking is right, the ID read is not gold
    punctuation._.parts = []  # nothing to link: a miss, not a vacuous hit
    example.predicted.ents = [composite, cuiless, punctuation]  # "gout" was not found: a miss
    metrics = link_scores([example], max_k=2)
    assert (metrics["n"], metrics["unscored"]) == (3, 1)
    assert metrics["link_acc_1"] == metrics["link_acc_2"] == pytest.approx(1 / 3)
    assert metrics["link_cui_acc"] == 0.0
    composite._.cui = "D001943|D010051"
    assert link_scores([example], max_k=2)["link_cui_acc"] == pytest.approx(1 / 3)


# right: whether the predicted ID is the gold one; "stops": never, and the
# two are written in forms that never meet, so scoring stops naming both.
@pytest.mark.parametrize("gold, predicted, namespaces, right", [
    ("OMIM:217000", "217000", MEDIC_NAMESPACES, True),     # the raw NCBI corpus against BioSyn's dictionary
    ("OMIM:217000", "217000", None, "stops"),              # a bare ID meets a prefixed one only through namespaces
    ("D010051", "MESH:D010051", MEDIC_NAMESPACES, True),   # BC5CDR's bare MeSH against CTD's prefixed one
    ("D010051", "D010051", None, True),
    ("D010052", "D010051", None, False),                   # a wrong ID of the same form: a true 0
    ("HP:0001250", "MONDO:0001250", MEDIC_NAMESPACES, "stops"),  # same local ID, another vocabulary
    ("HP:0001250", "MONDO:0001250", None, "stops"),
    ("OMIM:D010051", "D010051", MEDIC_NAMESPACES, "stops"),  # D010051 is a MeSH ID, never an OMIM one
    ("OMIM:D010051", "D010051", None, "stops"),
    ("MeSH:D010051", "MESH:D010051", None, True),          # namespaces are case-insensitive
])
def test_ids_compare_with_their_namespaces(gold, predicted, namespaces, right):
    queries = [Query("1", 0, 1, "Disease", "dystonia", gold)]
    document = PubTatorDocument("1", "dystonia", [Annotation(0, 8, "dystonia", "Disease", gold)])
    (example,) = pubtator_to_examples(spacy.blank("en"), [document])
    (span,) = example.predicted.ents
    span._.parts = [LinkedPart("dystonia", [Candidate("dystonia", ((predicted,),), 1.0)])]
    span._.cui = predicted
    example.predicted.ents = [span]
    scores = {
        "acc@1 of queries": lambda: evaluate(ranker({"dystonia": [(predicted,)]}), queries, max_k=1,
                                             id_namespaces=namespaces)["link_acc_1"],
        "acc@1 and cui_acc of spans": lambda: tuple(
            link_scores([example], max_k=1, id_namespaces=namespaces)[k] for k in ("link_acc_1", "link_cui_acc")),
        "link and doc F": lambda: tuple(
            end_to_end_scores([example], id_namespaces=namespaces)[k] for k in ("link_f", "doc_f")),
    }
    for name, score in scores.items():
        if right == "stops":
            with pytest.raises(MismatchError, match="no predicted ID is a gold ID"):
                score()
        else:
            assert score() in (right, (right, right)), name


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


def test_cuiless_queries_are_skipped_and_counted_as_in_pubtator():
    queries = [Query("1", 0, 4, "Disease", "gout", "D006073"), Query("1", 9, 13, "Disease", "cips", "-1")]
    metrics = evaluate(ranker({"gout": [("D006073",)]}), queries, max_k=1)
    assert (metrics["link_acc_1"], metrics["n"], metrics["unscored"]) == (1.0, 1, 1)


def test_pubtator_becomes_ner_training_docs(tmp_path):
    from spacy_biosyn.corpora.docs import pubtator_to_docbin
    from spacy_biosyn.corpora.readers import NCBI_LABELS

    title = "Schwartz–Jampel syndrome and café-au-lait spots"
    abstract = "Ocular and auditory toxicity of cisplatin; breast cancer."
    text = f"{title} {abstract}"

    def line(mention, label, cui, *more):
        start = text.index(mention)
        return "\t".join(["9", str(start), str(start + len(mention)), mention, label, cui, *more])

    path = tmp_path / "corpus.txt"
    path.write_text("\n".join([
        f"9|t|{title}", f"9|a|{abstract}",
        line("Schwartz–Jampel syndrome", "SpecificDisease", "D010009"),  # non-ASCII before later offsets
        line("café-au-lait spots", "Modifier", "-1"),
        # a composite: its seventh column lists the parts, the span is the whole mention
        line("Ocular and auditory toxicity", "Disease", "D014786|D006311", "Ocular toxicity|auditory toxicity"),
        line("cisplatin", "Chemical", "D002945"),
        line("breast cancer", "Disease", "D001943"),
        line("breast", "Disease", "D001940"),  # overlaps a longer one: the longer is kept
    ]) + "\n")
    docbin = pubtator_to_docbin(spacy.blank("en"), read_pubtator(path), NCBI_LABELS)
    (doc,) = docbin.get_docs(spacy.blank("en").vocab)
    assert doc.text == text
    assert [(e.text, e.label_, e.kb_id_) for e in doc.ents] == [
        ("Schwartz–Jampel syndrome", "Disease", "D010009"),
        ("café-au-lait spots", "Disease", "-1"),
        ("Ocular and auditory toxicity", "Disease", "D014786|D006311"),
        ("cisplatin", "Chemical", "D002945"),
        ("breast cancer", "Disease", "D001943"),
    ]


def test_convert_writes_a_docbin_for_spacy_train(tmp_path):
    from spacy.tokens import DocBin
    from typer.testing import CliRunner

    from spacy_biosyn.cli import app

    path = tmp_path / "corpus.txt"
    path.write_text("1|t|Gout and cisplatin.\n1|a|\n1\t0\t4\tGout\tDiseaseClass\tD006073\n1\t9\t18\tcisplatin\tChemical\tD002945\n")
    result = CliRunner().invoke(app, ["convert", str(path), str(tmp_path / "out" / "train.spacy")])
    assert result.exit_code == 0, result.output
    (doc,) = DocBin().from_disk(tmp_path / "out" / "train.spacy").get_docs(spacy.blank("en").vocab)
    assert [(e.text, e.label_) for e in doc.ents] == [("Gout", "Disease"), ("cisplatin", "Chemical")]


def test_end_to_end_scores_by_hand():
    from spacy.training import Example

    nlp = spacy.blank("en")

    def doc(text, ents, predicted):
        d = nlp.make_doc(text)
        spans = []
        for mention, label, cui in ents:
            start = text.index(mention)
            span = d.char_span(start, start + len(mention), label=label, kb_id="" if predicted else cui)
            spans.append(span)
        d.ents = spans
        if predicted:
            for span, (_, _, cui) in zip(d.ents, ents):
                span._.cui = cui
        return d

    text = "Breast cancer and ovarian cancer, cisplatin, CIPS."
    gold = [("Breast cancer", "Disease", "D001943"), ("ovarian cancer", "Disease", "D010051"),
            ("cisplatin", "Chemical", "D002945"), ("CIPS", "Disease", "-1")]
    predicted = [("Breast cancer", "DISEASE", "D001943"),  # right, in scispaCy's upper case
                 ("cancer,", "Disease", "D010051"),  # wrong span: ner and link miss, the doc-level ID counts
                 ("cisplatin", "Chemical", "D000001"),  # right span, wrong ID
                 ("CIPS", "Disease", "D000002")]  # a CUI-less gold entity: right for ner, not scored for linking
    examples = [
        Example(doc(text, predicted, True), doc(text, gold, False)),
        Example(doc("Gout.", [], True), doc("Gout.", [("Gout", "Disease", "D006073")], False)),
    ]
    scores = end_to_end_scores(examples)
    # ner: 3 of 4 predictions right, of 5 gold entities
    assert (scores["ents_p"], scores["ents_r"]) == pytest.approx((3 / 4, 3 / 5))
    # lenient: "cancer," overlaps "ovarian cancer", so 4 of 4 predictions and 4 of 5 gold entities match
    assert (scores["ents_lenient_p"], scores["ents_lenient_r"]) == pytest.approx((4 / 4, 4 / 5))
    # link: predictions with a cui, less the one at a CUI-less gold entity: 3; right: 1; gold with IDs: 4
    assert (scores["link_p"], scores["link_r"], scores["link_f"]) == pytest.approx((1 / 3, 1 / 4, 2 / 7))
    # doc: {D001943, D010051, D000001, D000002} against {D001943, D010051, D002945} and {} against {D006073}
    assert (scores["doc_p"], scores["doc_r"]) == pytest.approx((2 / 4, 2 / 4))
    assert scores["n_docs"] == 2 and "scale" not in scores
    disease = scores["per_type"]["disease"]
    assert (disease["ents_p"], disease["ents_r"]) == pytest.approx((2 / 3, 2 / 4))
    assert (disease["ents_lenient_p"], disease["ents_lenient_r"]) == pytest.approx((3 / 3, 3 / 4))
    assert end_to_end_scores(examples, labels=["Chemical"])["link_p"] == 0.0

    # as drop_nil leaves them: the entities linked under 0.8 ("cancer," and CIPS) are not predicted
    from spacy_biosyn.ty import Candidate, LinkedPart

    for span, score in zip(examples[0].predicted.ents, (1.1, 0.5, 0.9, 0.3)):
        span._.parts = [LinkedPart(span.text, [Candidate("name", (("D1",),), score)])]
    dropped = end_to_end_scores(examples, drop_below=0.8)
    assert (dropped["ents_p"], dropped["ents_r"]) == pytest.approx((2 / 2, 2 / 5))
    assert end_to_end_scores(examples, drop_below=0.2)["ents_p"] == pytest.approx(3 / 4)
    examples[0].predicted.ents[3]._.parts = [LinkedPart("CIPS", [Candidate("name", (("D1",),), 0.0)])]
    assert end_to_end_scores(examples, drop_below=-0.5)["ents_p"] == pytest.approx(3 / 4)  # a score of 0 is a score


def test_a_gzip_compressed_corpus_reads_as_its_text(tmp_path):
    import gzip

    text = "1|t|Gout\n1|a|and pain.\n1\t0\t4\tGout\tDisease\tD006073\n"
    (tmp_path / "plain.txt").write_text(text)
    (tmp_path / "packed.PubTator.gz").write_bytes(gzip.compress(text.encode("utf-8")))
    assert read_pubtator(tmp_path / "packed.PubTator.gz") == read_pubtator(tmp_path / "plain.txt")
