"""Tiny randomly initialised BERT encoders, built here: tests never touch a hub."""
import string

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
