"""Training: candidate mixing, the objectives, and whole runs on a toy problem."""
import json
import math
from pathlib import Path

import numpy as np
import pytest
import spacy
import torch
from pydantic import ValidationError
from spacy.util import load_config, registry
from typer.testing import CliRunner

from spacy_biosyn.cli import app
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.kb.dictionary import Dictionary
from spacy_biosyn.search.tfidf import SparseEncoder
from spacy_biosyn.training import hard_em, marginal_nll, pairwise_bce, train
from spacy_biosyn.training import trainer as trainer_module
from spacy_biosyn.training.candidates import (
    dense_top_k,
    mix_candidates,
    own_rows,
    positive_mask,
    sparse_top_k,
    training_pairs,
)
from spacy_biosyn.training.trainer import Trainer, TrainingSettings

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "biosyn.cfg"

TRAIN = [
    "1||0|16||SpecificDisease||breast carcinoma||D001943",
    "1||20|33||SpecificDisease||ovarian tumour||D010051",
    "1||40|60||SpecificDisease||huntingtons disease||D006816",
    "2||0|15||SpecificDisease||type ii diabetes||D003924",
    "2||20|31||SpecificDisease||parkinsons||D010300",
    "2||40|60||SpecificDisease||breast carcinoma||D001943",
    "3||0|20||CompositeMention||breast and ovarian cancer||D001943|D010051",
    "3||30|40||SpecificDisease||hmmm||-1",
]
DEV = [
    "9||0|14||SpecificDisease||breast tumour||D001943",
    "9||20|35||SpecificDisease||huntington s||D006816",
    "9||40|55||SpecificDisease||type i diabetes||D003922",
]


def test_training_pairs_drop_composites_cuiless_and_duplicates(tmp_path):
    (tmp_path / "1.concept").write_text("\n".join(TRAIN) + "\n")
    pairs = training_pairs(read_concept_queries(tmp_path))
    assert pairs == [
        ("breast carcinoma", "D001943"),
        ("ovarian tumour", "D010051"),
        ("huntingtons disease", "D006816"),
        ("type ii diabetes", "D003924"),
        ("parkinsons", "D010300"),
    ]


def test_a_mention_never_gets_its_own_text_as_candidate():
    base = Dictionary.from_pairs([("D1", "breast cancer"), ("D2", "ovarian cancer"), ("D3", "colon cancer")])
    pairs = [("breast carcinoma", "D1"), ("breast cancer", "D1"), ("colon cancer", "D9")]
    merged = base.with_synonyms((c, t) for t, c in pairs)
    assert merged.names[:3] == list(base.names)  # existing rows keep their place
    assert merged.cuis[2] == ("D3", "D9")
    # New text: its own row is hidden. Known name with that CUI: kept, as at
    # test time. Known name that the mention gave a new CUI: hidden.
    exclude = own_rows(base, merged, pairs)
    assert exclude.tolist() == [3, -1, 2]
    # Without merged mentions nothing is the mention's own doing.
    assert own_rows(base, base, pairs).tolist() == [-1, -1, -1]

    sparse = SparseEncoder().fit(merged.names)
    ids = sparse_top_k(sparse.transform([t for t, _ in pairs]), sparse.transform(merged.names), 3, exclude)
    assert 3 not in ids[0] and ids[1][0] == 0 and 2 not in ids[2]
    # "breast cancer" finds itself, then the synonym another mention added.
    assert ids[1][:2].tolist() == [0, 3]
    assert positive_mask(ids[1:2], ["D1"], merged).tolist() == [[True, True, False]]


def test_candidates_are_sparse_first_then_dense_topped_up_to_k_distinct():
    sparse_ids = np.array([[1, 2, 3, 4]])
    dense_ids = np.array([[2, 5, 1, 6]])
    assert mix_candidates(sparse_ids, dense_ids, 4, 0.5).tolist() == [[1, 2, 5, 6]]
    assert mix_candidates(sparse_ids, dense_ids, 4, 0.0).tolist() == [[1, 2, 3, 4]]
    assert mix_candidates(sparse_ids, dense_ids, 4, 1.0).tolist() == [[2, 5, 1, 6]]
    # floor(0.5 * 3) = 1 dense share: two sparse, then dense until three.
    assert mix_candidates(sparse_ids, dense_ids, 3, 0.5).tolist() == [[1, 2, 5]]
    with pytest.raises(ValueError):
        mix_candidates(sparse_ids, dense_ids[:, :2], 4, 0.5)


def test_marginal_nll_matches_a_hand_computed_example():
    # softmax([0, ln 2, ln 3]) = [1/6, 2/6, 3/6]; positives 1 and 3 -> -ln(4/6).
    logits = torch.tensor([[0.0, math.log(2), math.log(3)], [5.0, 1.0, 0.0]])
    positives = torch.tensor([[True, False, True], [False, False, False]])
    assert marginal_nll(logits, positives).item() == pytest.approx(-math.log(4 / 6), abs=1e-6)
    assert hard_em(logits, positives).item() == pytest.approx(-math.log(3 / 6), abs=1e-6)
    bce = -(math.log(1 / 2) + math.log(1 - 2 / 3) + math.log(3 / 4)) / 3
    assert pairwise_bce(logits[:1], positives[:1]).item() == pytest.approx(bce, abs=1e-6)


@pytest.mark.parametrize("objective", [marginal_nll, hard_em])
def test_no_positive_anywhere_gives_zero_loss_and_finite_gradients(objective):
    logits = torch.tensor([[1e4, -1e4, 3.0]], requires_grad=True)
    loss = objective(logits, torch.zeros(1, 3, dtype=torch.bool))
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(logits.grad).all()
    # A positive far below the rest: large but finite, no log(0).
    far = marginal_nll(torch.tensor([[1e4, -1e4]]), torch.tensor([[False, True]]))
    assert math.isfinite(far.item()) and far.item() > 1e3


@pytest.fixture
def toy(tmp_path, tiny_encoder, disease_dictionary):
    for split, lines in (("train", TRAIN), ("dev", DEV)):
        (tmp_path / split).mkdir()
        (tmp_path / split / "1.concept").write_text("\n".join(lines) + "\n")
    overrides = {
        "paths.dictionary": disease_dictionary,
        "paths.train": str(tmp_path / "train"),
        "paths.dev": str(tmp_path / "dev"),
        "encoder.name": tiny_encoder,
        "training.k": 4,
        "training.epochs": 2,
        "training.batch_size": 2,
        "training.learning_rate": 1e-3,
        "training.mixed_precision": False,
    }
    return tmp_path, overrides


def _config(overrides):
    return load_config(CONFIG, overrides=overrides, interpolate=False)


@pytest.mark.parametrize("mixed_precision", [False, True])
def test_one_step_lowers_the_loss_on_a_toy_problem(toy, mixed_precision):
    tmp_path, overrides = toy
    config = _config({**overrides, "training.mixed_precision": mixed_precision})
    resolved = registry.resolve(config)
    trainer = Trainer(config, resolved, TrainingSettings(**resolved["training"]), tmp_path / "out", -1)
    trainer.encoder.model.eval()  # no dropout: the two losses must be comparable
    rows = np.arange(len(trainer.pairs))
    snapshot = trainer.snapshot()
    dense = dense_top_k(trainer._encode(trainer.texts), snapshot.train_vectors, 4, trainer.exclude)
    candidates = mix_candidates(trainer.sparse_ids, dense, 4, 0.5)
    positives = positive_mask(candidates, trainer.gold, trainer.dictionary)
    assert positives.any(axis=1).all()
    before = trainer._loss(rows, candidates, positives)
    trainer.optimizer.zero_grad()
    before.backward()
    trainer.optimizer.step()
    after = trainer._loss(rows, candidates, positives)
    assert after.item() < before.item()


@pytest.mark.parametrize("native", [False, True])
def test_mixed_precision_is_bf16_only_where_the_hardware_has_it(toy, monkeypatch, native):
    # Emulated bf16 made a CPU epoch many times slower than fp32 (AVX2-only AMD EPYC).
    tmp_path, overrides = toy
    monkeypatch.setattr(trainer_module, "has_native_bf16", lambda device: native)
    config = _config({**overrides, "training.mixed_precision": True})
    resolved = registry.resolve(config)
    trainer = Trainer(config, resolved, TrainingSettings(**resolved["training"]), tmp_path / "out", -1)
    assert trainer._autocast_dtype() == (torch.bfloat16 if native else None)


def test_training_is_reproducible_and_gives_a_loadable_pipeline(toy):
    tmp_path, overrides = toy
    best_a = train(_config(overrides), tmp_path / "a")
    best_b = train(_config(overrides), tmp_path / "b")
    assert best_a == {**best_b, "seconds": best_a["seconds"]}
    log = (tmp_path / "a" / "log.jsonl").read_text().splitlines()
    assert len(log) == 3  # the untrained start, then one line per epoch

    texts = ["breast tumour", "huntington s", "type i diabetes"]
    ranked = []
    for run in ("a", "b"):
        nlp = spacy.load(tmp_path / run / "model-last")
        ranked.append(nlp.get_pipe("biosyn_linker").rank(texts))
    assert ranked[0] == ranked[1]
    assert all(len(candidates) == 5 for candidates in ranked[0])
    assert spacy.load(tmp_path / "a" / "model-best").meta["spacy_biosyn"]["epoch"] == best_a["epoch"]


def test_dev_is_checked_every_eval_every_steps_and_model_best_is_the_best_check(toy):
    tmp_path, overrides = toy
    # 5 distinct training pairs in batches of 2: 3 steps an epoch.
    best = train(_config({**overrides, "training.eval_every": 2}), tmp_path / "out")
    log = [json.loads(line) for line in (tmp_path / "out" / "log.jsonl").read_text().splitlines()]
    assert [(r["epoch"], r["step"]) for r in log] == [(0, 0), (1, 2), (1, 3), (2, 4), (2, 6)]
    assert best == next(r for r in log if r["dev_link_acc_1"] == max(r["dev_link_acc_1"] for r in log))
    assert spacy.load(tmp_path / "out" / "model-best").meta["spacy_biosyn"]["step"] == best["step"]


def test_bad_training_settings_are_named():
    with pytest.raises(ValidationError, match="dense_ratio"):
        TrainingSettings(objective=marginal_nll, dense_ratio=1.5)
    with pytest.raises(ValidationError, match="epoch"):
        TrainingSettings(objective=marginal_nll, epoch=3)


def test_a_missing_path_is_named(toy):
    tmp_path, overrides = toy
    with pytest.raises(ValueError, match="paths.train"):
        train(_config({**overrides, "paths.train": None}), tmp_path / "out")


def test_train_and_index_from_the_command_line(toy, disease_dictionary):
    tmp_path, overrides = toy
    args = [f"--{key}={value}" for key, value in overrides.items()]
    result = CliRunner().invoke(
        app, ["train", str(CONFIG), "--output", str(tmp_path / "out"), *args, "--training.epochs=1"]
    )
    assert result.exit_code == 0, result.output
    run = tmp_path / "out"
    assert load_config(run / "config.cfg")["training"]["epochs"] == 1  # overrides are recorded
    assert len((run / "log.jsonl").read_text().splitlines()) == 2

    bigger = tmp_path / "bigger.txt"
    bigger.write_text(open(disease_dictionary).read() + "D006938||familial hypercholesterolemia\n")
    result = CliRunner().invoke(
        app, ["index", str(run / "model-best"), str(tmp_path / "served"), "--dictionary", str(bigger),
              "--device", "cpu", "--batch-size", "3"]
    )
    assert result.exit_code == 0, result.output
    linker = spacy.load(tmp_path / "served").get_pipe("biosyn_linker")
    assert linker.rank(["familial hypercholesterolemia"])[0][0].cuis == ("D006938",)
    # The trained lambda and tf-idf travel with the encoder.
    trained = spacy.load(run / "model-best").get_pipe("biosyn_linker")
    assert linker.sparse_weight == trained.sparse_weight == linker.engine.vocabulary().sparse_weight


def test_the_dev_check_ranks_with_the_saved_pipes_engine_in_a_process_without_spacy(tmp_path, tiny_encoder, disease_dictionary):
    import os
    import subprocess
    import sys

    from helpers import hiding

    (tmp_path / "dev").mkdir()
    (tmp_path / "dev" / "1.concept").write_text("\n".join(DEV) + "\n")
    check = f"""
import json
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.kb.dictionary import Dictionary
from spacy_biosyn.search.tfidf import SparseEncoder
from spacy_biosyn.training.dev_check import dev_engine, dev_scores
dictionary = Dictionary.from_file({disease_dictionary!r})
encoder = TransformerEncoder({tiny_encoder!r}).load()
engine = dev_engine(encoder, 10.0, dictionary, SparseEncoder().fit(dictionary.names), encoder.encode(dictionary.names))
print(json.dumps(dev_scores(engine, read_concept_queries({str(tmp_path / "dev")!r}), engine.rank, 3)))
"""
    done = subprocess.run([sys.executable, "-c", hiding("spacy", "thinc") + check], capture_output=True, text=True,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    alone = json.loads(done.stdout.splitlines()[-1])
    # the engine a pipe saved with these settings opens to (spaCy's load) ranks dev alike
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
    nlp.initialize()
    from spacy_biosyn.training.dev_check import dev_scores

    engine = nlp.get_pipe("biosyn_linker").engine
    assert alone == dev_scores(engine, read_concept_queries(tmp_path / "dev"), engine.rank, 3)
    assert alone["link_acc_5"] > 0  # tf-idf finds "breast tumour" and "type i diabetes" among 17 names
