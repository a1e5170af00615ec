"""The README's main command (examples/link_abstract.py) serves NCBI's own
names: its linker indexes the training mentions as synonyms by default, and
runs its encoder in ONNX Runtime."""
import importlib.util
from pathlib import Path

import pytest
import spacy

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "link_abstract.py"


@pytest.fixture(scope="module")
def example():
    spec = importlib.util.spec_from_file_location("link_abstract", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not (module.DATA / "processed_train").is_dir():
        pytest.skip(f"the shared data is not beside the checkout ({module.DATA})")
    return module


def test_the_example_pipeline_saves_the_training_mentions_as_names(example, tiny_encoder, tmp_path):
    mention = "abnormal retinal vascular development"  # a training mention, not a MEDIC name
    for training_names in (True, False):
        nlp = spacy.blank("en")
        nlp.add_pipe("biosyn_linker", config=example.linker_config(example.served_encoder(tiny_encoder), training_names))
        nlp.initialize()
        nlp.to_disk(tmp_path / str(training_names))
        saved = spacy.load(tmp_path / str(training_names))
        assert saved.config["components"]["biosyn_linker"]["encoder"]["@misc"] == "spacy_biosyn.OnnxEncoder.v1"
        assert (mention in saved.get_pipe("biosyn_linker").linker.dictionary) == training_names
