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


def test_the_example_pipeline_leaves_spans_no_concept_fits_unlinked_with_a_threshold_chosen_on_dev(
    example, tiny_encoder, disease_dictionary, tmp_path, monkeypatch
):
    def train_ner(output, recipe):  # an entity ruler stands in for the trained NER
        nlp = spacy.blank("en")
        nlp.add_pipe("entity_ruler").add_patterns(
            [{"label": "Disease", "pattern": p} for p in ("breast cancer", "type 2 diabetes", "hematopoiesis")]
        )
        output.parent.mkdir(parents=True, exist_ok=True)
        nlp.to_disk(output)

    def index_medic(training_names):
        nlp = spacy.blank("en")
        nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
        nlp.initialize()
        return nlp

    dev = tmp_path / "dev.txt"
    dev.write_text(
        "1|t|breast cancer and type 2 diabetes impair hematopoiesis\n1|a|\n"
        "1\t0\t13\tbreast cancer\tSpecificDisease\tD001943\n"
        "1\t18\t33\ttype 2 diabetes\tSpecificDisease\tD003924\n"
    )
    monkeypatch.setattr(example, "train_ner", train_ner)
    monkeypatch.setattr(example, "index_medic", index_medic)
    monkeypatch.setattr(example, "DEV", dev)
    example.load_or_build(tmp_path / "pipelines" / "text", "transformer", training_names=True)
    saved = spacy.load(tmp_path / "pipelines" / "text")
    assert saved.get_pipe("biosyn_linker").nil_threshold is not None
    # "hematopoiesis", the NER's false positive, scores under the threshold;
    # dropping it raises dev NER F, so it leaves doc.ents
    doc = saved("hematopoiesis is impaired in breast cancer")
    assert [(e.text, e._.cui) for e in doc.ents] == [("breast cancer", "D001943")]
