"""Encoders in the layouts users bring, each built here with random weights:
a BERT folder as SapBERT's and BioBERT's are published (config.json,
vocab.txt, weights, no sentence-transformers files), and a checkpoint saved
by BioSyn's own code (that folder beside sparse_weight.pt and a pickled
sparse_encoder.pk)."""
import pickle
import re
from pathlib import Path

import pytest
import spacy
import torch
from spacy.util import load_config
from typer.testing import CliRunner

from spacy_biosyn.cli import app
from spacy_biosyn.encoders.tiny import make_tiny_encoder
from spacy_biosyn.errors import BiosynError
from spacy_biosyn.kb.dictionary import Dictionary

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "biosyn.cfg"
# Six training mentions: three steps of two.
TRAIN = """\
1||0|16||SpecificDisease||breast carcinoma||D001943
1||20|33||SpecificDisease||ovarian tumour||D010051
1||40|60||SpecificDisease||huntingtons disease||D006816
2||0|15||SpecificDisease||type ii diabetes||D003924
2||20|31||SpecificDisease||parkinsons||D010300
2||40|60||SpecificDisease||breast neoplasm||D001943
"""
DEV = "9||0|14||SpecificDisease||breast tumour||D001943\n"


def link(nlp, text="Breast cancer and ovarian cancer."):
    doc = nlp.make_doc(text)
    doc.ents = [doc.char_span(0, 13, label="Disease"), doc.char_span(18, 32, label="Disease")]
    return [(e._.cui, [c for c, _ in e._.kb_ents]) for e in nlp(doc).ents]


def test_a_bert_folder_as_sapbert_publishes_it_builds_trains_exports_and_loads(tmp_path, disease_dictionary):
    sapbert = make_tiny_encoder(tmp_path / "SapBERT-from-PubMedBERT-fulltext")
    assert not (Path(sapbert) / "modules.json").exists()  # no sentence-transformers files
    runner = CliRunner()
    result = runner.invoke(app, ["build", str(tmp_path / "built"), "--encoder", sapbert, "--dictionary", disease_dictionary,
                                 "--device", "cpu", "--batch-size", "4"])
    assert result.exit_code == 0, result.output
    encoder = load_config(tmp_path / "built" / "config.cfg")["components"]["biosyn_linker"]["encoder"]
    assert (encoder["pooling"], encoder["similarity"], encoder["device"], encoder["batch_size"]) == ("cls", "cosine", "auto", 4)

    for split, lines in (("train", TRAIN), ("dev", DEV)):
        (tmp_path / split).mkdir()
        (tmp_path / split / "1.concept").write_text(lines)
    overrides = {"paths.dictionary": disease_dictionary, "paths.train": str(tmp_path / "train"),
                 "paths.dev": str(tmp_path / "dev"), "encoder.name": sapbert, "training.k": 4, "training.epochs": 1,
                 "training.batch_size": 2, "training.add_train_mentions": False, "training.mixed_precision": False}
    result = runner.invoke(app, ["train", str(CONFIG), "--output", str(tmp_path / "run"),
                                 *(f"--{key}={value}" for key, value in overrides.items())])
    assert result.exit_code == 0, result.output
    steps = [line for line in (tmp_path / "run" / "log.jsonl").read_text().splitlines()]
    assert steps and '"step": 3' in steps[-1]

    result = runner.invoke(app, ["onnx", str(tmp_path / "run" / "model-best"), str(tmp_path / "served")])
    assert result.exit_code == 0, result.output
    trained, served = spacy.load(tmp_path / "run" / "model-best"), spacy.load(tmp_path / "served")
    assert served.config["components"]["biosyn_linker"]["encoder"]["@misc"] == "spacy_biosyn.OnnxEncoder.v3"
    assert link(served) == link(trained) and all(cui for cui, _ in link(served))


class _RunsCode:
    """What a pickle can do on loading: here, leave a file behind."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def biosyn_checkpoint(folder: Path, sparse_weight: float, marker: Path) -> Path:
    """A checkpoint as BioSyn's save_model writes it: the BERT weights as
    pytorch_model.bin, lambda as a saved Parameter, the vectorizer pickled."""
    make_tiny_encoder(folder)
    from transformers import BertModel

    torch.save(BertModel.from_pretrained(folder).state_dict(), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    torch.save(torch.nn.Parameter(torch.tensor([sparse_weight])), folder / "sparse_weight.pt")
    (folder / "sparse_encoder.pk").write_bytes(pickle.dumps(_RunsCode(marker)))
    return folder


def test_a_biosyn_checkpoint_builds_with_its_lambda_and_its_pickle_unread(tmp_path, disease_dictionary):
    marker = tmp_path / "the-pickle-ran"
    checkpoint = biosyn_checkpoint(tmp_path / "biosyn-biobert-ncbi-disease", 2.75, marker)
    result = CliRunner().invoke(app, ["build", str(tmp_path / "p"), "--from-biosyn", str(checkpoint),
                                      "--dictionary", disease_dictionary])
    assert result.exit_code == 0, result.output
    assert "lambda 2.7500" in result.output and "sparse_encoder.pk is not read" in " ".join(result.output.split())
    assert not marker.exists()
    config = load_config(tmp_path / "p" / "config.cfg")["components"]["biosyn_linker"]
    assert config["sparse_weight"] == 2.75
    assert (config["encoder"]["pooling"], config["encoder"]["similarity"]) == ("cls", "dot")
    nlp = spacy.load(tmp_path / "p")
    assert all(cui for cui, _ in link(nlp))
    # The tf-idf fitted on the dictionary is BioSyn's: TfidfVectorizer(analyzer="char",
    # ngram_range=(1, 2)) fitted on its (lower-cased, punctuation-free) names.
    from sklearn.feature_extraction.text import TfidfVectorizer

    names = list(Dictionary.from_file(disease_dictionary).names)
    biosyn = TfidfVectorizer(analyzer="char", ngram_range=(1, 2)).fit(names)
    assert nlp.get_pipe("biosyn_linker").engine.vocabulary().sparse.vocabulary == biosyn.vocabulary_


def test_a_folder_without_biosyns_lambda_is_named(tmp_path, tiny_encoder, disease_dictionary):
    result = CliRunner().invoke(app, ["build", str(tmp_path / "p"), "--from-biosyn", tiny_encoder,
                                      "--dictionary", disease_dictionary])
    assert result.exit_code != 0 and "no sparse_weight.pt" in " ".join(result.output.split()) + str(result.exception)


@pytest.mark.parametrize("weight, refusal", [
    (torch.tensor([-1.0]), r"one finite number >= 0; this holds 1 value\(s\) \(\[-1.0\]\)"),
    (torch.tensor([float("nan")]), r"one finite number >= 0; this holds 1 value\(s\) \(\[nan\]\)"),
    (torch.tensor([0.5, 1.0, 2.0]), r"one finite number >= 0; this holds 3 value\(s\) \(\[0.5, 1.0, 2.0\]\)"),
])
def test_a_biosyn_lambda_that_is_not_one_finite_number_is_refused_in_one_line(tmp_path, disease_dictionary, weight, refusal):
    checkpoint = biosyn_checkpoint(tmp_path / "checkpoint", 1.0, tmp_path / "marker")
    torch.save(weight, checkpoint / "sparse_weight.pt")
    result = CliRunner().invoke(app, ["build", str(tmp_path / "p"), "--from-biosyn", str(checkpoint),
                                      "--dictionary", disease_dictionary])
    assert result.exit_code != 0 and isinstance(result.exception, BiosynError)
    assert re.search(refusal, str(result.exception)) and not (tmp_path / "p").exists()


def test_a_biosyn_checkpoint_without_config_json_is_refused_in_one_line(tmp_path, disease_dictionary):
    checkpoint = biosyn_checkpoint(tmp_path / "checkpoint", 1.0, tmp_path / "marker")
    (checkpoint / "config.json").unlink()
    result = CliRunner().invoke(app, ["build", str(tmp_path / "p"), "--from-biosyn", str(checkpoint),
                                      "--dictionary", disease_dictionary])
    assert isinstance(result.exception, BiosynError) and "no config.json beside sparse_weight.pt" in str(result.exception)
