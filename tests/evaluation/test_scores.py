"""Scores: BioSyn's Acc@k, the strict cui_acc users read, IDs compared
with their namespaces, end-to-end scores, and PubTator as NER training docs."""
import pytest
import spacy

from spacy_biosyn import MEDIC_NAMESPACES
from spacy_biosyn.corpora.docs import pubtator_to_examples
from spacy_biosyn.corpora.readers import Annotation, PubTatorDocument, Query, read_pubtator
from spacy_biosyn.errors import MismatchError
from spacy_biosyn.evaluation.end_to_end import end_to_end_scores
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.pipeline.accuracy import link_scores
from spacy_biosyn.ty import Candidate, LinkedPart


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
