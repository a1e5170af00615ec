"""Tiny randomly initialised BERT encoders, built here: tests never touch a hub."""
import string
from pathlib import Path

import pytest
import torch
from transformers import BertConfig, BertModel, BertTokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = string.ascii_lowercase + string.digits


def make_tiny_encoder(folder, seed: int = 0) -> str:
    """A 2-layer, 32-wide BERT with a character vocabulary, saved to `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + list(CHARS) + ["##" + c for c in CHARS]) + "\n")
    tokenizer = BertTokenizer(str(vocab))  # positional: the keyword differs across versions
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(SPECIALS) + 2 * len(CHARS),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
    )
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    return make_tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"))


@pytest.fixture(scope="session")
def other_tiny_encoder(tmp_path_factory) -> str:
    return make_tiny_encoder(tmp_path_factory.mktemp("other-tiny-encoder"), seed=1)


DISEASES = """\
D001943||breast cancer
D001943||breast neoplasms
D001943||mammary carcinoma
D010051||ovarian cancer
D010051||ovarian neoplasms
D003924||diabetes mellitus type 2
D003924||type 2 diabetes
D003922||diabetes mellitus type 1
D003922||type 1 diabetes
D006816||huntington disease
D006816||huntington chorea
D020754||spinocerebellar ataxias
D009136||dystrophinopathy
C567518||bestrophinopathy
C567755|613097||tooth agenesis selective 6
D010300||parkinson disease
D010300||paralysis agitans
"""


@pytest.fixture
def disease_dictionary(tmp_path) -> str:
    path = tmp_path / "diseases.txt"
    path.write_text(DISEASES, encoding="utf-8")
    return str(path)


NER_ABSTRACTS = """\
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
# configs/ner-transformer.cfg shrunk to the tiny BERT above
TINY_TRANSFORMER = {
    "components.transformer.model.vocab_size": len(SPECIALS) + 2 * len(CHARS),
    "components.transformer.model.hidden_width": 32, "components.transformer.model.intermediate_width": 64,
    "components.transformer.model.num_attention_heads": 2, "components.transformer.model.num_hidden_layers": 2,
    "components.transformer.model.max_position_embeddings": 64,
    "components.transformer.model.with_spans.window": 32, "components.transformer.model.with_spans.stride": 24,
}


@pytest.fixture(scope="session")
def ner_corpus(tmp_path_factory):
    """NER_ABSTRACTS converted to spaCy's training format by the project's `convert`."""
    from typer.testing import CliRunner

    from spacy_biosyn.cli import app

    folder = tmp_path_factory.mktemp("ner-corpus")
    (folder / "abstracts.txt").write_text(NER_ABSTRACTS)
    result = CliRunner().invoke(app, ["convert", str(folder / "abstracts.txt"), str(folder / "train.spacy")])
    assert result.exit_code == 0, result.output
    return folder / "train.spacy"


@pytest.fixture(scope="session")
def text_pipeline(tmp_path_factory, tiny_encoder, ner_corpus):
    """Raw text to IDs as the README example's pipeline is built, small: the
    transformer NER recipe on the tiny BERT (3 steps), then the linker served
    from ONNX. An entity_ruler after the NER makes sure there is something
    to link, since three steps teach the NER nothing."""
    import spacy
    from spacy.cli.train import train

    folder = tmp_path_factory.mktemp("text-pipeline")
    recipe = Path(__file__).resolve().parents[1] / "configs" / "ner-transformer.cfg"
    overrides = {"paths.train": str(ner_corpus), "paths.dev": str(ner_corpus), "training.max_steps": 3,
                 "training.eval_frequency": 2, "paths.encoder": tiny_encoder, **TINY_TRANSFORMER}
    train(recipe, folder / "ner", overrides=overrides)
    (folder / "diseases.txt").write_text(DISEASES)
    linker = spacy.blank("en")
    linker.add_pipe("biosyn_linker", config={
        "dictionary": str(folder / "diseases.txt"), "sparse_weight": 10.0,
        "encoder": {"@misc": "spacy_biosyn.OnnxEncoder.v1", "name": tiny_encoder},
    })
    linker.initialize()
    nlp = spacy.load(folder / "ner" / "model-last")
    nlp.add_pipe("entity_ruler").add_patterns([
        {"label": "Disease", "pattern": [{"LOWER": "breast"}, {"LOWER": "cancer"}]},
        {"label": "Disease", "pattern": [{"LOWER": "ovarian"}, {"LOWER": "cancer"}]},
    ])
    nlp.add_pipe("biosyn_linker", source=linker)
    nlp.to_disk(folder / "pipeline")
    return folder / "pipeline"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The BioSyn datasets' folder: $SPACY_BIOSYN_DATA, by default the shared
    data beside the checkout. Tests that read real data skip without it."""
    import os

    folder = Path(os.environ.get("SPACY_BIOSYN_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if not folder.is_dir():
        pytest.skip(f"no data folder at {folder}: set SPACY_BIOSYN_DATA to the BioSyn datasets' folder")
    return folder
