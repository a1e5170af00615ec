"""The open-world NIL model: what it reads of a ranked list, how it is
learned from an annotated corpus, saved, checked on load and applied."""
import numpy as np
import pytest
import spacy
import srsly
from helpers import make_nlp, resealed

from spacy_biosyn.errors import SavedStateError
from spacy_biosyn.linking.links import (ABSENT_CONCEPT, BELOW_THRESHOLD, EVERYDAY_ENGLISH, NilRule, span_links)
from spacy_biosyn.search import nil_model
from spacy_biosyn.search.nil_model import FEATURES, NilModel, SparseView, TrainingCases, features, fit_nil_model
from spacy_biosyn.search.tfidf import SparseEncoder
from spacy_biosyn.ty import Candidate, LinkedPart

ORGANS = ("breast", "ovarian", "lung", "liver", "kidney", "bladder", "colon", "gastric", "thyroid", "prostate",
          "skin", "bone", "brain", "heart", "spleen", "eye")


def tfidf_view(names, weight: float = 0.5) -> SparseView:
    """The tf-idf side of a vocabulary of `names`, as a NameRanker gives it."""
    tfidf = SparseEncoder()
    tfidf.fit_transform(list(names))
    return SparseView(tfidf.transform, weight)


NAMES = ["xyy syndrome", "xxy syndrome", "hypoxia brain", "anoxia", *(f"{o} {k}" for o in ORGANS for k in ("cancer", "cyst"))]
VIEW = tfidf_view(NAMES)


def feature(name: str, text: str, candidates) -> float:
    return features(text, candidates, VIEW)[FEATURES.index(name)]


def test_a_word_no_name_holds_and_a_name_that_adds_words_are_what_the_ranked_list_shows():
    xyy = [Candidate("xyy syndrome", (("C535317",),), 0.825), Candidate("xxy syndrome", (("D007713",),), 0.81)]
    assert feature("unmatched_words", "xyzzy syndrome", xyy) == 0.5
    assert feature("head_word_matched", "xyzzy syndrome", xyy) == 1.0
    assert feature("margin", "xyzzy syndrome", xyy) == pytest.approx(0.015)
    hypoxia = [Candidate("hypoxia brain", (("D002534",),), 0.935), Candidate("anoxia", (("D000860",),), 0.9)]
    assert feature("name_adds_words", "hypoxia", hypoxia) == 1.0 and feature("exact", "hypoxia", hypoxia) == 0.0
    assert feature("exact", "hypoxia brain", hypoxia) == 1.0 and feature("extra_name_words", "hypoxia brain", hypoxia) == 0
    assert features("hypoxia", [], VIEW) is None


def test_the_two_views_of_the_score_are_read_apart():
    # the tf-idf view is the names' cosine with the mention; the dense view is what the unit score keeps without it
    xyy = [Candidate("xyy syndrome", (("C535317",),), 0.825), Candidate("xxy syndrome", (("D007713",),), 0.81)]
    sparse = VIEW.similarities("xyzzy syndrome", ["xyy syndrome", "xxy syndrome"])
    rows = VIEW.rows(["xyzzy syndrome", "xyy syndrome"])
    assert sparse[0] == pytest.approx((rows[0] @ rows[1].T).toarray()[0, 0])
    # a batch's pairs found ahead give the same scores
    assert VIEW.with_pairs([("xyzzy syndrome", "xxy syndrome")]).similarities("xyzzy syndrome", ["xxy syndrome"]) == \
        pytest.approx(sparse[1:])
    assert feature("sparse_top", "xyzzy syndrome", xyy) == pytest.approx(sparse[0])
    assert feature("dense_top", "xyzzy syndrome", xyy) == pytest.approx(0.825 * 1.5 - 0.5 * sparse[0])
    assert feature("sparse_lead", "xyzzy syndrome", xyy) == pytest.approx(sparse[0] - sparse[1])
    assert feature("sparse_best_is_top", "xyzzy syndrome", xyy) == float(sparse[0] >= sparse[1])
    # a name written as the mention is the best of both views
    exact = [Candidate("breast cancer", (("D1",),), 1.0), Candidate("breast cyst", (("D2",),), 0.8)]
    assert feature("sparse_top", "breast cancer", exact) == pytest.approx(1.0)
    assert feature("dense_best_is_top", "breast cancer", exact) == feature("sparse_best_is_top", "breast cancer", exact) == 1


def separable_cases() -> TrainingCases:
    """Right links score high and share the mention's words; wrong ones neither."""
    cases = TrainingCases([], [])
    for i, organ in enumerate(ORGANS * 3):
        mention = f"{organ} cancer"
        right = [Candidate(mention, ((f"D{i}",),), 1.0), Candidate(f"{organ} cyst", ((f"E{i}",),), 0.8)]
        cases.add(mention, right, {f"D{i}"}, VIEW)
    return cases


def test_a_model_is_learned_from_mentions_ranked_with_and_without_their_concept_and_cut_to_keep_their_right_links():
    cases = separable_cases()
    # each mention is a right link as ranked, and a wrong one with its concept's names taken away
    assert cases.right == [True, False] * (len(ORGANS) * 3)
    model = fit_nil_model(cases)
    p = model.probability(cases.rows)
    right = np.array(cases.right)
    assert np.mean(p[right] >= model.cut) >= nil_model.KEPT_RIGHT_LINKS
    assert (p[~right] < model.cut).all()
    assert "48 annotated mentions" in model.source


def test_too_few_cases_of_either_kind_teach_no_model():
    cases = separable_cases()
    few = TrainingCases(cases.rows[: 2 * (nil_model.MIN_CASES - 1)], cases.right[: 2 * (nil_model.MIN_CASES - 1)])
    assert fit_nil_model(few) is None


def test_the_model_saved_as_json_gives_the_same_probabilities_and_another_version_is_not_used():
    model = fit_nil_model(separable_cases())
    saved = srsly.json_loads(srsly.json_dumps(model.to_json()))
    again = NilModel.from_json(saved, "nil_model.json")
    rows = np.random.default_rng(0).random((20, len(FEATURES)))
    assert np.array_equal(again.probability(rows), model.probability(rows)) and again.cut == model.cut
    assert NilModel.from_json({**saved, "version": nil_model.VERSION + 1}, "nil_model.json") is None
    # this version's model reads these features, and nothing else passes for a version
    for edited in ({"features": list(FEATURES[:-1])}, {"version": True}, {"version": float(nil_model.VERSION)}):
        with pytest.raises(SavedStateError, match="nil_model.json: not a NIL model"):
            NilModel.from_json({**saved, **edited}, "nil_model.json")


def _corrupted(saved: dict, change: str) -> dict:
    bad = dict(saved, **{key: list(value) if isinstance(value, list) else value for key, value in saved.items()})
    split = bad["feature"].index(next(f for f in bad["feature"] if f >= 0))
    if change == "child out of range":
        bad["left"][split] = len(bad["feature"]) + 5
    elif change == "child before its parent":
        bad["right"][split] = split
    elif change == "NaN threshold":
        bad["threshold"][split] = float("nan").hex()
    elif change == "unknown feature":
        bad["feature"][split] = len(FEATURES)
    elif change == "too shallow":
        bad["depth"] = 1
    elif change == "arrays of two lengths":
        bad["value"] = bad["value"][:-1]
    elif change == "cut outside [0, 1]":
        bad["cut"] = (1.5).hex()
    elif change == "a million trees":  # each a leaf, so every walk is short: the count alone would slow each mention
        bad["roots"] = [0] * 10**6
    return bad


@pytest.mark.parametrize("change", ["child out of range", "child before its parent", "NaN threshold",
                                    "unknown feature", "too shallow", "arrays of two lengths", "cut outside [0, 1]",
                                    "a million trees"])
def test_a_malformed_model_is_refused_naming_the_file_before_any_node_is_read(change):
    saved = fit_nil_model(separable_cases()).to_json()
    with pytest.raises(SavedStateError, match="nil_model.json: not a NIL model"):
        NilModel.from_json(_corrupted(saved, change), "nil_model.json")


def always(p: float) -> NilModel:
    """A one-leaf model that gives every mention P(right) = p, cut at 0.5."""
    raw = float(np.log(p / (1 - p)))
    return NilModel(np.array([0]), np.array([-1]), np.array([0.0]), np.array([0]), np.array([0]), np.array([raw]),
                    0.0, 1, 0.5, "test")


def test_a_span_says_why_it_is_nil_everyday_english_then_threshold_then_the_model():
    part = LinkedPart("xyzzy syndrome", [Candidate("xyy syndrome", (("C535317",),), 0.825)])
    assert NilRule(0.8, always(0.9), view=VIEW).reason([part]) is None
    assert NilRule(0.9, always(0.9), view=VIEW).reason([part]) == BELOW_THRESHOLD
    assert NilRule(0.8, always(0.1), view=VIEW).reason([part]) == ABSENT_CONCEPT
    assert NilRule(None, always(0.1), view=VIEW).reason([]) == EVERYDAY_ENGLISH
    links = span_links([part], 5, NilRule(0.8, always(0.1), view=VIEW))
    assert links.cui is None and links.kb_ents == [] and links.nil_reason == ABSENT_CONCEPT
    # what it would have linked to stays visible, with the score that was turned down
    assert links.nil_best == ("C535317", 0.825)
    assert span_links([part], 5, NilRule(0.8, always(0.9), view=VIEW)).nil_best is None  # linked: nothing to say


@pytest.fixture
def annotated(tmp_path):
    """An annotated corpus of the test vocabulary's concepts, as BioSyn's
    processed .concept files: names and their plurals."""
    from helpers import DISEASES

    folder = tmp_path / "train"
    folder.mkdir()
    pairs = [line.split("||") for line in DISEASES.splitlines()]
    lines = [f"1||0|1||Disease||{name}{suffix}||{cui.split('|')[0]}"
             for cui, name in pairs for suffix in ("", "s", " disorder")]
    (folder / "1.concept").write_text("\n".join(lines) + "\n")
    return folder


def test_auto_learns_the_model_from_the_corpus_it_is_given_saves_it_and_a_load_uses_the_same(
    tiny_encoder, disease_dictionary, annotated, tmp_path
):
    nlp = make_nlp(tiny_encoder, disease_dictionary, preferred_ids_from=[str(annotated)])
    linker = nlp.get_pipe("biosyn_linker")
    model = linker.engine.nil_rule().model
    assert model is not None and "annotated mentions" in model.source
    nlp.to_disk(tmp_path / "pipeline")
    saved = tmp_path / "pipeline" / "biosyn_linker" / "nil_model.json"
    loaded = spacy.load(tmp_path / "pipeline").get_pipe("biosyn_linker").engine.nil_rule().model
    rows = np.random.default_rng(0).random((10, len(FEATURES)))
    assert np.array_equal(loaded.probability(rows), model.probability(rows))
    # a number for nil_threshold, as tune-nil sets, is the rule alone
    linker.nil_threshold = 0.5
    assert linker.engine.nil_rule() == NilRule(0.5, None, "nil_threshold as set")
    # a resealed file whose trees point outside their arrays is refused, naming it
    srsly.write_json(saved, _corrupted(srsly.read_json(saved), "child out of range"))
    resealed(saved.parent)
    with pytest.raises(SavedStateError, match=f"{saved}: not a NIL model"):
        spacy.load(tmp_path / "pipeline")


def test_leaves_too_large_to_add_give_a_probability_not_nan():
    model = always(0.9)._replace(roots=np.zeros(8, dtype=np.int64), value=np.array([1e308]))
    assert model.probability(np.zeros((1, len(FEATURES))))[0] == 1.0


def test_a_namespaced_vocabulary_and_a_corpus_taught_as_synonyms_too_still_teach_a_model_of_other_spellings(
    tiny_encoder, annotated, tmp_path
):
    from helpers import DISEASES

    namespaced = tmp_path / "namespaced.txt"
    namespaced.write_text("".join(f"MESH:{line}\n" for line in DISEASES.splitlines()))
    nlp = make_nlp(tiny_encoder, str(namespaced), preferred_ids_from=[str(annotated)], synonyms=[str(annotated)])
    model = nlp.get_pipe("biosyn_linker").engine.nil_rule().model
    assert model is not None
    # its own name held out, a taught mention is no exact match: the right links are not all exact ones
    cases = nil_model.training_cases(nlp.get_pipe("biosyn_linker").engine.routes.default,
                                     nlp.get_pipe("biosyn_linker").engine.routes.annotated_mentions)
    exact = [row[FEATURES.index("exact")] for row, right in zip(cases.rows, cases.right) if right]
    assert exact and sum(exact) < len(exact)


def test_a_loaded_linker_learns_its_model_again_from_the_saved_mentions_after_new_synonyms(
    tiny_encoder, disease_dictionary, annotated, tmp_path
):
    nlp = make_nlp(tiny_encoder, disease_dictionary, preferred_ids_from=[str(annotated)])
    nlp.to_disk(tmp_path / "pipeline")
    linker = spacy.load(tmp_path / "pipeline").get_pipe("biosyn_linker")
    synonyms = tmp_path / "more.txt"
    synonyms.write_text("D001943||mammary cancer\n")
    linker.engine.add_synonyms(synonyms)
    assert linker.engine.nil_rule().model is not None


def test_without_a_corpus_auto_is_the_score_threshold_alone(tiny_encoder, disease_dictionary, tmp_path):
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    assert nlp.get_pipe("biosyn_linker").engine.nil_rule().model is None
    nlp.to_disk(tmp_path / "pipeline")
    assert not (tmp_path / "pipeline" / "biosyn_linker" / "nil_model.json").exists()


def test_a_vocabulary_too_small_for_a_threshold_says_at_initialize_that_every_span_will_link(tiny_encoder, tmp_path):
    tiny = tmp_path / "two.txt"
    tiny.write_text("D1||breast cancer\nD2||ovarian cancer\n")
    with pytest.warns(UserWarning, match="found no threshold .* every span it serves gets an ID.*tune-nil"):
        nlp = make_nlp(tiny_encoder, str(tiny))
    rule = nlp.get_pipe("biosyn_linker").engine.nil_rules()["dictionary"]
    assert rule.threshold is None and rule.source.startswith("auto: none: the vocabulary has 0 concepts")
