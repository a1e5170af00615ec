"""The README's main command (examples/link_abstract.py) serves NCBI's own
names: its linker indexes the training mentions as synonyms by default, and
runs its encoder in ONNX Runtime."""
import importlib.util
from pathlib import Path

import pytest
import spacy

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "link_abstract.py"


@pytest.fixture(scope="module")
def example(shared_data):
    spec = importlib.util.spec_from_file_location("link_abstract", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.use_data(shared_data)
    return module


def test_the_example_pipeline_saves_the_training_mentions_as_names(example, tiny_encoder, disease_dictionary, tmp_path):
    mention = "abnormal retinal vascular development"  # a training mention, not a MEDIC name
    for training_names in (True, False):
        nlp = spacy.blank("en")
        config = example.linker_config(example.served_encoder(tiny_encoder), training_names)
        assert config["dictionary"].endswith("train_dictionary.txt")  # MEDIC; a few names stand in for its 72k here
        nlp.add_pipe("biosyn_linker", config={**config, "dictionary": disease_dictionary})
        nlp.initialize()
        nlp.to_disk(tmp_path / str(training_names))
        saved = spacy.load(tmp_path / str(training_names))
        assert saved.config["components"]["biosyn_linker"]["encoder"]["@misc"] == "spacy_biosyn.OnnxEncoder.v3"
        assert (mention in saved.get_pipe("biosyn_linker").engine.vocabulary().dictionary) == training_names


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
    dev.write_text("\n".join(
        f"{pmid}|t|breast cancer and type 2 diabetes impair hematopoiesis\n{pmid}|a|\n"
        f"{pmid}\t0\t13\tbreast cancer\tSpecificDisease\tD001943\n"
        f"{pmid}\t18\t33\ttype 2 diabetes\tSpecificDisease\tD003924\n"
        for pmid in range(1, 6)  # tune-nil chooses on 2 documents and 10 gold spans at the least
    ))
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
