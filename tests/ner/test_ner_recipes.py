"""Every NER recipe of configs/ trains a few steps on a tiny corpus, and the
pipeline it saves splits text with the biomedical tokenizer rules."""
import pickle
from pathlib import Path

import pytest
import spacy
from spacy.cli.train import train

from helpers import TINY_TRANSFORMER

from spacy_biosyn.encoders.tiny import CHARS, SPECIALS, make_tiny_encoder

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# One NER component each; configs/ner-guidelines.cfg (a head per corpus) is tested in test_guidelines.py.
RECIPES = sorted(path for path in CONFIGS.glob("ner*.cfg") if path.stem != "ner-guidelines")

def test_there_is_a_cnn_and_a_transformer_recipe():
    assert {path.name for path in RECIPES} >= {"ner-cnn.cfg", "ner-transformer.cfg"}


@pytest.mark.parametrize("config", RECIPES, ids=[path.stem for path in RECIPES])
def test_each_ner_recipe_trains_and_saves_the_biomedical_tokenizer(config, ner_corpus, tiny_encoder, tmp_path):
    overrides = {"paths.train": str(ner_corpus), "paths.dev": str(ner_corpus), "training.max_steps": 3,
                 "training.eval_frequency": 2}
    if "transformer" in config.stem:
        # the tiny random BERT of helpers.py stands in for all-MiniLM-L6-v2
        overrides.update({"paths.encoder": tiny_encoder, **TINY_TRANSFORMER})
    train(config, tmp_path / "out", overrides=overrides)
    nlp = spacy.load(tmp_path / "out" / "model-last")
    assert "ner" in nlp.pipe_names and set(nlp.get_pipe("ner").labels) == {"Chemical", "Disease"}
    # the tokenizer saved is the biomedical one (test_tokenizer.py checks its rules)
    assert [t.text for t in nlp.make_doc("(DOX)-induced")] == ["(", "DOX", ")", "-", "induced"]
    doc = nlp("Doxorubicin (DOX)-induced cardiomyopathy.")  # a few steps teach nothing: it must only run
    assert all(ent.label_ in {"Chemical", "Disease"} for ent in doc.ents)


@pytest.fixture(scope="module")
def text_nlp(text_pipeline):
    return spacy.load(text_pipeline)


def test_the_transformer_recipe_reads_word_pieces_in_linear_time(text_nlp):
    assert text_nlp.config["components"]["transformer"]["model"]["piece_encoder"]["@architectures"] == (
        "spacy_biosyn.BertWordpieceEncoder.v1"
    )
    encoder = text_nlp.get_pipe("transformer").model.get_ref("piece_encoder")
    unknown = encoder.attrs["wordpiece_processor"].get_initial("[UNK]")
    blob = "ACGT" * 50_000  # a DNA sequence: 200k characters, one token
    doc = text_nlp.make_doc(f"Breast cancer {blob} gout-like (x)")
    (pieces,) = encoder.predict([doc])
    lengths = pieces.lengths.tolist()
    # [CLS], then per token; a word over BERT's 100 characters is one [UNK], as in Hugging Face's BertTokenizer
    assert lengths[3] == 1 and int(pieces.dataXd[1 + sum(lengths[1:3])]) == unknown
    # Ordinary text is read as by the encoder it wraps, piece for piece
    from spacy_curated_transformers.tokenization.wordpiece_encoder import build_bert_wordpiece_encoder_v1

    curated = build_bert_wordpiece_encoder_v1()
    curated.attrs.update(encoder.attrs)
    docs = [text_nlp.make_doc("Doxorubicin (DOX)-induced cardiomyopathy;\n café α-synuclein 患者 🙂 " + "x" * 99)]
    assert [p.dataXd.tolist() for p in curated.predict(docs)] == [p.dataXd.tolist() for p in encoder.predict(docs)]


def test_the_same_entities_around_a_long_token(text_nlp):
    text = "Breast cancer and ovarian cancer."
    found = [(e.text, e._.cui) for e in text_nlp(text).ents]
    assert found and [(e.text, e._.cui) for e in text_nlp(text + " " + "ACGT" * 50_000).ents] == found


@pytest.mark.parametrize("text", ["", " ", "\n", "\u3000", " \t\n "])
def test_a_document_of_whitespace_alone_is_linked_as_text(text_nlp, text):
    assert list(text_nlp(text).ents) == []
    assert [list(doc.ents) for doc in text_nlp.pipe([text, text])] == [[], []]


def test_a_pickle_planted_in_the_saved_ner_is_refused_unrun(text_pipeline, tmp_path):
    """The transformer's weights are torch.load-ed inside thinc; torch >= 2.6
    (setup.cfg's floor) loads weights only, so a planted pickle runs nothing."""
    import shutil

    import srsly

    planted = tmp_path / "pipeline"
    shutil.copytree(text_pipeline, planted)
    marker = tmp_path / "ran"
    model = srsly.msgpack_loads((planted / "transformer" / "model").read_bytes())
    shims = [shim for node in model["shims"] for shim in node]
    assert shims, "the saved transformer holds PyTorch state"
    evil = pickle.dumps(_Planted(str(marker)))
    model["shims"] = [[srsly.msgpack_dumps({**srsly.msgpack_loads(shim), "state": evil}) for shim in node]
                      for node in model["shims"]]
    (planted / "transformer" / "model").write_bytes(srsly.msgpack_dumps(model))
    with pytest.raises(Exception, match="(?i)weights_only|unpickl"):
        spacy.load(planted)
    assert not marker.exists()


class _Planted:
    def __init__(self, path: str):
        self.path = path

    def __reduce__(self):
        return (Path.touch, (Path(self.path),))


@pytest.mark.parametrize("precision, native, bf16", [
    ("auto", True, True), ("auto", False, False), ("fp32", True, False), ("bf16", False, True),
])
def test_the_transformer_runs_in_bf16_where_its_precision_says(text_pipeline, monkeypatch, precision, native, bf16):
    """AMX multiplies bf16 several times faster than fp32 and an AVX2-only CPU
    emulates it several times slower, so "auto" asks the machine that runs
    the model; the saved weights are fp32 either way."""
    import torch

    from spacy_biosyn.ner import precision as precision_module

    monkeypatch.setattr(precision_module, "has_native_bf16", lambda device: native)
    nlp = spacy.load(text_pipeline, config={"components": {"transformer": {"model": {"precision": precision}}}})
    module = nlp.get_pipe("transformer").model.get_ref("transformer").shims[0]._model
    dtypes = set()
    linear = next(m for m in module.modules() if isinstance(m, torch.nn.Linear))
    linear.register_forward_hook(lambda layer, inputs, output: dtypes.add(output.dtype))
    fp32 = spacy.load(text_pipeline, config={"components": {"transformer": {"model": {"precision": "fp32"}}}})
    fp32_entities = [(e.start_char, e.end_char) for e in fp32("Breast cancer and gout.").ents]
    doc = nlp("Breast cancer and gout.")
    assert dtypes == {torch.bfloat16 if bf16 else torch.float32}
    assert {p.dtype for p in module.parameters()} == {torch.float32}
    if not bf16:
        assert [(e.start_char, e.end_char) for e in doc.ents] == fp32_entities


def test_a_pipeline_saved_with_curated_transformers_bert_loads_under_either_name(text_pipeline, tmp_path):
    """The block spacy-curated-transformers.BertTransformer.v1 saves (with
    its torchscript = false) builds under spacy_biosyn.BertTransformer.v1,
    and the other way round, with the same entities in fp32."""
    import shutil

    curated = tmp_path / "curated"
    shutil.copytree(text_pipeline, curated)
    saved = (curated / "config.cfg").read_text()
    block = '@architectures = "spacy_biosyn.BertTransformer.v1"\nprecision = "auto"\n'
    assert block in saved
    assert "torchscript = false" in saved
    (curated / "config.cfg").write_text(saved.replace(
        block, '@architectures = "spacy-curated-transformers.BertTransformer.v1"\n'))
    text = "Breast cancer and gout are not ataxia-telangiectasia."
    as_saved = [(e.start_char, e.end_char) for e in spacy.load(curated)(text).ents]
    renamed = spacy.load(curated, config={"components.transformer.model.@architectures": "spacy_biosyn.BertTransformer.v1",
                                          "components.transformer.model.precision": "fp32"})
    assert [(e.start_char, e.end_char) for e in renamed(text).ents] == as_saved


def test_a_wrong_precision_is_named_when_the_config_is_read(text_pipeline):
    with pytest.raises(Exception, match="precision.*'fp16' is not"):
        spacy.load(text_pipeline, config={"components": {"transformer": {"model": {"precision": "fp16"}}}})


def test_train_ner_shapes_the_transformer_as_its_encoder_with_no_override(ner_corpus, tmp_path):
    """An encoder folder of another shape than the recipe's MiniLM on every
    dimension (random weights, a tiny vocabulary): paths.encoder alone
    switches the recipe to it, as it does to SapBERT's 768 x 12 layers."""
    from spacy.util import load_config
    from typer.testing import CliRunner

    from spacy_biosyn.cli import app

    encoder = make_tiny_encoder(tmp_path / "other-shape", hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                                intermediate_size=128, max_position_embeddings=512)
    result = CliRunner().invoke(app, [
        "train-ner", str(CONFIGS / "ner-transformer.cfg"), "--output", str(tmp_path / "ner"), "--gpu-id", "-1",
        "--paths.train", str(ner_corpus), "--paths.dev", str(ner_corpus), "--paths.encoder", encoder,
        "--training.max_steps", "2", "--training.eval_frequency", "1",
    ])
    assert result.exit_code == 0, result.output
    assert "hidden_width 64" in result.output
    model = load_config(tmp_path / "ner" / "model-last" / "config.cfg")["components"]["transformer"]["model"]
    shape = ("hidden_width", "intermediate_width", "num_attention_heads", "num_hidden_layers", "vocab_size")
    assert [model[key] for key in shape] == [64, 128, 4, 3, len(SPECIALS) + 2 * len(CHARS)]
    assert spacy.load(tmp_path / "ner" / "model-last")("Breast cancer in carriers.").text


def test_a_non_bert_encoder_is_named_for_the_transformer_recipe(tmp_path):
    from spacy_biosyn.errors import BiosynError
    from spacy_biosyn.ner.precision import encoder_shape

    (tmp_path / "config.json").write_text('{"model_type": "roberta", "hidden_size": 768}')
    with pytest.raises(BiosynError, match="the NER recipe's transformer is a BERT, and this model is a 'roberta'"):
        encoder_shape(tmp_path)
