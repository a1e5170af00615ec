"""The cross-encoder re-ranker: its loss, a training step, its place in the
pipeline (context, save and load) and the configurations it refuses."""
import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from helpers import as_saved_before_manifests
from spacy.tokens import Span
from spacy.util import load_config

from spacy_biosyn import configure_linker
from spacy_biosyn.errors import MismatchError
from spacy_biosyn.strategies.reranker import CrossEncoderReranker, combined_scores
from spacy_biosyn.ty import MentionInContext
from spacy_biosyn.training import marginal_nll
from spacy_biosyn.training.reranking import train_reranker
from spacy_biosyn.ty import Candidate

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "reranker.cfg"
TEXT = "Women with breast tumour and men with parkinsons were seen."


def candidate(name, cui, score):
    return Candidate(name, ((cui,),), score)


def test_the_loss_matches_a_hand_computed_example():
    first_stage = torch.tensor([[0.9, 0.8, 0.5]])
    logits = torch.tensor([[0.0, 1.0, -1.0]])
    positives = torch.tensor([[False, True, True]])
    z = [2 * 0.9 + 0.0, 2 * 0.8 + 1.0, 2 * 0.5 - 1.0]  # first_stage_weight 2
    expected = -math.log((math.exp(z[1]) + math.exp(z[2])) / sum(math.exp(v) for v in z))
    loss = marginal_nll(combined_scores(first_stage, logits, 2.0), positives)
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_a_context_is_cut_at_whole_words():
    context = MentionInContext.in_text(TEXT, 11, 24, "breast tumour", window=12)
    assert context == MentionInContext("breast tumour", "Women with", "breast tumour", "and men")
    assert context.first_segment() == "breast tumour ; Women with [ breast tumour ] and men"
    assert MentionInContext("breast tumour").first_segment() == "breast tumour"


@pytest.fixture
def reranker(tiny_encoder):
    return CrossEncoderReranker(tiny_encoder, candidates=3, max_length=48, device="cpu").load()


def test_a_training_step_lowers_the_loss_on_a_toy_problem(reranker):
    torch.manual_seed(0)
    mentions = [MentionInContext("breast tumour", "women with", "breast tumour", "and")] * 3
    names = ["ovarian cancer", "breast cancer", "parkinson disease"]
    first_stage = torch.tensor([[0.8, 0.7, 0.1]])
    positives = torch.tensor([[False, True, False]])
    optimizer = torch.optim.AdamW(reranker.model.parameters(), lr=1e-3)

    def loss():
        return marginal_nll(combined_scores(first_stage, reranker.logits(mentions, names).view(1, 3), 5.0), positives)

    before = loss()  # in eval mode: no dropout, so before and after compare
    optimizer.zero_grad()
    before.backward()
    optimizer.step()
    with torch.no_grad():
        assert loss().item() < before.item()


def test_a_large_first_stage_weight_keeps_the_first_stage_order(reranker):
    reranker.first_stage_weight = 1e6
    cands = [candidate("breast cancer", "D001943", 0.9), candidate("ovarian cancer", "D010051", 0.8),
             candidate("parkinson disease", "D010300", 0.1)]
    reranked = reranker.rerank([MentionInContext("breast tumour")], [cands])[0]
    assert [c.name for c in reranked] == ["breast cancer", "ovarian cancer", "parkinson disease"]
    scores = [c.score for c in reranked]
    assert scores == sorted(scores, reverse=True)


def test_a_mention_whose_best_name_is_its_own_text_keeps_the_first_stage_order(reranker):
    reranker.first_stage_weight = 0.0  # the cross-encoder alone decides the others
    cands = [candidate("breast cancer", "D001943", 1.1), candidate("ovarian cancer", "D010051", 0.8),
             candidate("parkinson disease", "D010300", 0.1)]
    kept = reranker.rerank([MentionInContext("breast cancer")], [cands])[0]
    assert [c.name for c in kept] == ["breast cancer", "ovarian cancer", "parkinson disease"]
    assert [c.score for c in kept] == [0.0, 0.0, 0.0]  # first_stage_weight * S
    rescored = reranker.rerank([MentionInContext("breast cancer")], [cands], keep_exact_matches=False)[0]
    expected = reranker.scores([MentionInContext("breast cancer")], [cands])[0]
    assert sorted(c.score for c in rescored) == pytest.approx(sorted(expected.tolist()))


@pytest.mark.parametrize("settings, message", [
    ({"candidates": 1}, "candidates must be a whole number from 2 to 65,536"),
    ({"batch_size": 10**9}, "batch_size must be a whole number from 1 to 65,536, got 1000000000"),
    ({"first_stage_weight": -1.0}, "first_stage_weight must be a finite number >= 0"),
    ({"first_stage_weight": float("nan")}, "first_stage_weight"),
    ({"context_chars": "100"}, "context_chars"),
    ({"keep_exact_matches": "yes"}, "keep_exact_matches must be true or false"),
])
def test_bad_reranker_settings_are_refused(tiny_encoder, settings, message):
    with pytest.raises(ValueError, match=message):
        CrossEncoderReranker(tiny_encoder, **settings)


def _pipeline(tiny_encoder, disease_dictionary, **reranker_settings):
    nlp = spacy.blank("en")
    config = {"dictionary": disease_dictionary, "encoder": tiny_encoder, "abbreviations": None, "top_k": 3}
    if reranker_settings is not None:
        config["reranker"] = {"@misc": "spacy_biosyn.CrossEncoderReranker.v1", "name": tiny_encoder,
                              "candidates": 4, "device": "cpu", **reranker_settings}
    nlp.add_pipe("biosyn_linker", config=config)
    return nlp


def _doc(nlp):
    doc = nlp.make_doc(TEXT)
    doc.ents = [Span(doc, 2, 4, label="Disease"), Span(doc, 7, 8, label="Disease")]
    return doc


def _links(doc):
    return [(e._.cui, [(c.name, round(c.score, 5)) for c in e._.candidates]) for e in doc.ents]


def test_the_linker_rescores_with_context_and_keeps_top_k(tiny_encoder, disease_dictionary):
    nlp = _pipeline(tiny_encoder, disease_dictionary)
    nlp.initialize()
    pipe = nlp.get_pipe("biosyn_linker")
    assert pipe.engine.pool_size == 4
    doc = nlp.get_pipe("biosyn_linker")(_doc(nlp))
    for span in doc.ents:
        # top_k names, or down to the best name of the third concept
        assert 3 <= len(span._.candidates) <= 4 and len(span._.kb_ents) <= 3
        scores = [c.score for c in span._.candidates]
        assert scores == sorted(scores, reverse=True)
    # Scores are first_stage_weight * S + logit: not the first stage's.
    first = pipe.engine.first_stage(["breast tumour"], 4)[1][0]
    expected = pipe.reranker.rerank([MentionInContext.in_text(TEXT, 11, 24, "breast tumour", 100)], [first])[0]
    expected = expected[: len(doc.ents[0]._.candidates)]
    assert [c.name for c in doc.ents[0]._.candidates] == [c.name for c in expected]
    # Padding to another batch's length moves float32 results in the last bits.
    assert [c.score for c in doc.ents[0]._.candidates] == pytest.approx([c.score for c in expected], abs=1e-4)


def test_save_and_load_with_the_reranker_give_identical_links(tiny_encoder, disease_dictionary, tmp_path):
    nlp = _pipeline(tiny_encoder, disease_dictionary)
    nlp.initialize()
    # A sentence encoder has no head: training gives it its own learning rate.
    assert nlp.get_pipe("biosyn_linker").reranker.new_parameters == {"classifier.weight", "classifier.bias"}
    with torch.no_grad():  # a head that is not the fresh one from_pretrained adds
        nlp.get_pipe("biosyn_linker").reranker.model.classifier.bias.fill_(0.25)
    before = _links(nlp.get_pipe("biosyn_linker")(_doc(nlp)))
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("biosyn_linker").reranker.model.classifier.bias.item() == pytest.approx(0.25)
    assert loaded.get_pipe("biosyn_linker").reranker.new_parameters == set()
    assert _links(loaded.get_pipe("biosyn_linker")(_doc(loaded))) == before


def test_a_save_from_before_unit_scores_scores_as_it_did(tiny_encoder, disease_dictionary, tmp_path):
    import json

    nlp = _pipeline(tiny_encoder, disease_dictionary, first_stage_weight=2.0)
    nlp.initialize()
    nlp.to_disk(tmp_path / "old")
    cfg = as_saved_before_manifests(tmp_path / "old" / "biosyn_linker") / "cfg"
    saved = json.loads(cfg.read_text())
    del saved["score_scale"]  # first-stage scores were S then, up to 1 + lambda
    cfg.write_text(json.dumps(saved))
    with pytest.warns(UserWarning, match="first_stage_weight 2.0 is read as 2.25"):
        loaded = spacy.load(tmp_path / "old")  # lambda 0.125: 2 x S = 2.25 x S / (1 + 0.125)
    assert loaded.config["components"]["biosyn_linker"]["reranker"]["first_stage_weight"] == 2.25


def test_two_processes_rerank_as_one(tiny_encoder, disease_dictionary, tmp_path):
    nlp = _pipeline(tiny_encoder, disease_dictionary)
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "texts.json").write_text(json.dumps([TEXT] * 6))
    script = textwrap.dedent(f"""
        import json, spacy
        from spacy.tokens import Span
        nlp = spacy.load({str(tmp_path / "pipeline")!r})
        docs = []
        for text in json.load(open({str(tmp_path / "texts.json")!r})):
            doc = nlp.make_doc(text)
            doc.ents = [Span(doc, 2, 4, label="Disease"), Span(doc, 7, 8, label="Disease")]
            docs.append(doc)
        links = [[(e._.cui, [(c.name, c.score) for c in e._.candidates]) for e in doc.ents]
                 for doc in nlp.pipe(docs, n_process=2, batch_size=2)]
        json.dump(links, open({str(tmp_path / "links.json")!r}, "w"))
    """)
    result = subprocess.run([sys.executable, "-c", script], timeout=300, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    two = json.loads((tmp_path / "links.json").read_text())
    one = _links(nlp.get_pipe("biosyn_linker")(_doc(nlp)))
    for doc_links in two:
        assert [(cui, [n for n, _ in cands]) for cui, cands in doc_links] == [(cui, [n for n, _ in c]) for cui, c in one]
        assert [s for _, cands in doc_links for _, s in cands] == pytest.approx([s for _, c in one for _, s in c], abs=1e-3)


def test_a_reranker_pool_smaller_than_top_k_is_refused(tiny_encoder, disease_dictionary):
    with pytest.raises(ValueError, match="re-scores 2 candidates but top_k is 3"):
        _pipeline(tiny_encoder, disease_dictionary, candidates=2)
    pipe = _pipeline(tiny_encoder, disease_dictionary).get_pipe("biosyn_linker")
    with pytest.raises(ValueError, match="re-scores 2 candidates but top_k is 3"):
        pipe.reranker = CrossEncoderReranker(tiny_encoder, candidates=2, device="cpu")


def test_a_config_naming_a_reranker_the_save_lacks_is_refused(tiny_encoder, disease_dictionary, tmp_path):
    nlp = _pipeline(tiny_encoder, disease_dictionary)
    nlp.remove_pipe("biosyn_linker")
    plain = spacy.blank("en")
    plain.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "abbreviations": None, "top_k": 3})
    plain.initialize()
    plain.to_disk(tmp_path / "plain")
    reranker = {"@misc": "spacy_biosyn.CrossEncoderReranker.v1", "name": tiny_encoder, "candidates": 4}
    with pytest.raises(MismatchError, match="holds no re-ranker"):
        spacy.load(tmp_path / "plain", config={"components": {"biosyn_linker": {"reranker": reranker}}})


TRAIN = [
    ("1", "Breast carcinoma runs in families. Huntingtons disease does not.", [
        (0, 16, "breast carcinoma", "D001943"), (35, 54, "huntingtons disease", "D006816")]),
    ("2", "Type ii diabetes and parkinsons were compared.", [
        (0, 16, "type ii diabetes", "D003924"), (21, 31, "parkinsons", "D010300")]),
    ("3", "Breast carcinoma again.", [(0, 16, "breast carcinoma", "D001943")]),
]
DEV = [("9", "Breast tumour was seen.", [(0, 13, "breast tumour", "D001943")])]


def _corpus(folder: Path, documents) -> None:
    """.concept queries and the PubTator abstracts they point into."""
    folder.mkdir()
    lines = []
    for pmid, text, mentions in documents:
        (folder / f"{pmid}.concept").write_text(
            "".join(f"{pmid}||{s}|{e}||Disease||{m}||{c}\n" for s, e, m, c in mentions)
        )
        lines += [f"{pmid}|t|{text}", f"{pmid}|a|", ""]
    (folder.parent / f"{folder.name}.txt").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("distinct, steps_per_epoch", [(True, 2), (False, 3)])
def test_train_reranker_logs_its_checks_and_saves_a_loadable_pipeline(
    tiny_encoder, disease_dictionary, tmp_path, distinct, steps_per_epoch
):
    # 5 training mentions, 4 distinct (mention, concept) pairs, in batches of 2.
    first = spacy.blank("en")
    first.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "abbreviations": None, "top_k": 3})
    first.initialize()
    first.to_disk(tmp_path / "first")
    _corpus(tmp_path / "train", TRAIN)
    _corpus(tmp_path / "dev", DEV)
    config = load_config(CONFIG, overrides={
        "paths.pipeline": str(tmp_path / "first"), "paths.base_dictionary": disease_dictionary,
        "paths.train": str(tmp_path / "train"), "paths.train_text": str(tmp_path / "train.txt"),
        "paths.dev": str(tmp_path / "dev"), "paths.dev_text": str(tmp_path / "dev.txt"),
        "reranker.name": tiny_encoder, "reranker.candidates": 5, "reranker.device": "cpu",
        "training.epochs": 2, "training.batch_size": 2, "training.eval_every": 1, "training.learning_rate": 1e-3,
        "training.distinct_mentions": distinct,
    }, interpolate=False)
    best = train_reranker(config, tmp_path / "out")
    log = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == list(range(2 * steps_per_epoch + 1))  # the first stage alone first
    assert log[0]["stage"] == "first stage alone"
    assert best["dev_link_acc_1"] == max(r["dev_link_acc_1"] for r in log)
    loaded = spacy.load(tmp_path / "out" / "model-best")
    has_reranker = loaded.get_pipe("biosyn_linker").reranker is not None
    assert has_reranker == (best["step"] > 0)


def test_configure_linker_adds_a_reranker_named_in_the_saved_config(tiny_encoder, disease_dictionary, tmp_path, reranker):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "abbreviations": None, "top_k": 3})
    nlp.initialize()
    before = _links(nlp.get_pipe("biosyn_linker")(_doc(nlp)))
    same_pipe = nlp.get_pipe("biosyn_linker")
    assert configure_linker(nlp, reranker=reranker) is same_pipe  # the pipe is not rebuilt
    assert same_pipe.reranker is reranker
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    pipe = loaded.get_pipe("biosyn_linker")
    assert pipe.reranker is not None and pipe.reranker.candidates == 3
    linked = _links(pipe(_doc(loaded)))
    # The re-ranker re-scores 3 names, all that is left to show.
    assert [len(c) for _, c in linked] == [3] * len(before)
    np.testing.assert_array_equal(
        pipe.engine.vocabulary().index.vectors, nlp.get_pipe("biosyn_linker").engine.vocabulary().index.vectors
    )


def test_a_re_rankers_threshold_is_on_its_own_scale(tiny_encoder, disease_dictionary):
    """first_stage_weight x S + a logit reaches past 1: a threshold tune-nil
    chose on it is taken, where one without a re-ranker would be refused."""
    nlp = _pipeline(tiny_encoder, disease_dictionary)
    nlp.initialize()
    configure_linker(nlp, nil_threshold=20.0)
    assert nlp.get_pipe("biosyn_linker").nil_threshold == 20.0
    with pytest.raises(ValueError, match=r"nil_threshold 20.0 lies outside \[0, 1\]"):
        configure_linker(nlp, reranker=None)
