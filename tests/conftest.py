"""The fixtures every test file may ask for; what they build from is in helpers.py."""
import os
from pathlib import Path

import pytest
from helpers import DISEASES, NER_ABSTRACTS, TINY_TRANSFORMER, make_nlp

from spacy_biosyn.encoders.tiny import make_tiny_encoder


@pytest.fixture(scope="session", autouse=True)
def own_cache(tmp_path_factory):
    """The suite's caches (name vectors, ONNX exports, named linkers) in a
    folder of its own, never the user's."""
    os.environ["SPACY_BIOSYN_CACHE"] = str(tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def tiny_encoder(tmp_path_factory) -> str:
    return make_tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"))


@pytest.fixture(scope="session")
def other_tiny_encoder(tmp_path_factory) -> str:
    return make_tiny_encoder(tmp_path_factory.mktemp("other-tiny-encoder"), seed=1)


@pytest.fixture
def disease_dictionary(tmp_path) -> str:
    path = tmp_path / "diseases.txt"
    path.write_text(DISEASES, encoding="utf-8")
    return str(path)


# Names with several IDs: MeSH and OMIM, in either order.
MULTI_ID = """\
114480|D001943||breast cancer
D001943||breast neoplasms
D010051|167000||ovarian cancer
C567755|613097||tooth agenesis selective 6
"""


@pytest.fixture
def multi_id_dictionary(tmp_path) -> str:
    path = tmp_path / "multi-id.txt"
    path.write_text(MULTI_ID)
    return str(path)


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
        "encoder": {"@misc": "spacy_biosyn.OnnxEncoder.v2", "name": tiny_encoder},
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


@pytest.fixture
def nlp(tiny_encoder, disease_dictionary):
    """A blank pipeline whose linker indexes DISEASES with the tiny encoder."""
    return make_nlp(tiny_encoder, disease_dictionary)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The BioSyn datasets' folder: $SPACY_BIOSYN_DATA, by default the shared
    data beside the checkout. Tests that read real data skip without it."""
    import os

    folder = Path(os.environ.get("SPACY_BIOSYN_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
    if not folder.is_dir():
        pytest.skip(f"no data folder at {folder}: set SPACY_BIOSYN_DATA to the BioSyn datasets' folder")
    return folder
