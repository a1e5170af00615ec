"""Every NER recipe of configs/ trains a few steps on a tiny corpus, and the
pipeline it saves splits text with the biomedical tokenizer rules."""
from pathlib import Path

import pytest
import spacy
from spacy.cli.train import train
from typer.testing import CliRunner

from spacy_biosyn.cli import app

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECIPES = sorted(CONFIGS.glob("ner*.cfg"))
ABSTRACTS = """\
1|t|Doxorubicin (DOX)-induced cardiomyopathy in breast cancer
1|a|Cardiomyopathy was seen in 3 of 20 patients.
1\t0\t11\tDoxorubicin\tChemical\tD004317
1\t13\t16\tDOX\tChemical\tD004317
1\t26\t40\tcardiomyopathy\tDisease\tD009202
1\t44\t57\tbreast cancer\tDisease\tD001943
1\t58\t72\tCardiomyopathy\tDisease\tD009202

2|t|Gout and ovarian cancer
2|a|Cisplatin-induced nephrotoxicity.
2\t0\t4\tGout\tDisease\tD006073
2\t9\t23\tovarian cancer\tDisease\tD010051
2\t24\t33\tCisplatin\tChemical\tD002945
2\t42\t56\tnephrotoxicity\tDisease\tD007674
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ner-corpus")
    (folder / "abstracts.txt").write_text(ABSTRACTS)
    result = CliRunner().invoke(app, ["convert", str(folder / "abstracts.txt"), str(folder / "train.spacy")])
    assert result.exit_code == 0, result.output
    return folder / "train.spacy"


def test_there_is_a_cnn_and_a_transformer_recipe():
    assert {path.name for path in RECIPES} >= {"ner-cnn.cfg", "ner-transformer.cfg"}


@pytest.mark.parametrize("config", RECIPES, ids=[path.stem for path in RECIPES])
def test_each_ner_recipe_trains_and_saves_the_biomedical_tokenizer(config, corpus, tiny_encoder, tmp_path):
    overrides = {"paths.train": str(corpus), "paths.dev": str(corpus), "training.max_steps": 3,
                 "training.eval_frequency": 2}
    if "transformer" in config.stem:
        # the tiny random BERT of conftest stands in for all-MiniLM-L6-v2
        overrides.update({
            "paths.encoder": tiny_encoder, "components.transformer.model.vocab_size": 77,
            "components.transformer.model.hidden_width": 32, "components.transformer.model.intermediate_width": 64,
            "components.transformer.model.num_attention_heads": 2, "components.transformer.model.num_hidden_layers": 2,
            "components.transformer.model.max_position_embeddings": 64,
            "components.transformer.model.with_spans.window": 32, "components.transformer.model.with_spans.stride": 24,
        })
    train(config, tmp_path / "out", overrides=overrides)
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert "ner" in nlp.pipe_names and set(nlp.get_pipe("ner").labels) == {"Chemical", "Disease"}
    assert [t.text for t in nlp.make_doc("(DOX)-induced")] == ["(", "DOX", ")", "-", "induced"]
    # A run of 1,000+ characters without whitespace is one token: spaCy's
    # prefix stripping took minutes on 25,000 nested parentheses.
    nested = "(" * 25_000 + "x" + ")" * 25_000
    assert [len(t) for t in nlp.make_doc(f"in {nested} cases")] == [2, 50_001, 5]
    doc = nlp("Doxorubicin (DOX)-induced cardiomyopathy.")  # a few steps teach nothing: it must only run
    assert all(ent.label_ in {"Chemical", "Disease"} for ent in doc.ents)
