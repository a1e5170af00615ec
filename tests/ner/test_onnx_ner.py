"""A transformer NER converted to ONNX Runtime (`python -m spacy_biosyn
onnx`) finds what it found in PyTorch in fp32, from the same token vectors,
loads and links without PyTorch, and names what it cannot run."""
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import spacy
from helpers import TORCH_MODULES, hiding, round_as_compact
from typer.testing import CliRunner

from spacy_biosyn.cli import app
from spacy_biosyn.errors import SavedStateError
from spacy_biosyn.files.manifest import write_manifest
from spacy_biosyn.ner.onnx_export import with_onnx_ner
from spacy_biosyn.ner.wordpieces import bert_words, doc_pieces

TESTS = Path(__file__).resolve().parents[1]
# Longer than the tiny BERT's window of 32 pieces (one a character), so windows overlap; whitespace tokens too.
TEXTS = [
    "Breast cancer and ovarian cancer.",
    "Risk of breast cancer in  carriers;\n" + " ".join(["ovarian cancer and breast cancer"] * 4) + " (BRCA1).",
    "",
    " \n ",
]


def in_fp32(path: Path) -> spacy.Language:
    return spacy.load(path, config={"components": {"transformer": {"model": {"precision": "fp32"}}}})


def entities(docs) -> list:
    return [[(e.start_char, e.end_char, e.label_, e._.cui) for e in doc.ents] for doc in docs]


@pytest.fixture(scope="module")
def converted(text_pipeline, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("onnx-ner") / "text"
    result = CliRunner().invoke(app, ["onnx", str(text_pipeline), str(output)])
    assert result.exit_code == 0, result.output
    # The linker already ran in ONNX Runtime: only the NER was converted, and said so.
    assert "the NER's BERT (transformer) in ONNX Runtime" in result.output and "encoder" not in result.output
    return output


def test_the_converted_ner_reads_the_token_vectors_the_transformer_gave_in_fp32(text_pipeline, converted):
    torch_nlp, onnx_nlp = in_fp32(text_pipeline), spacy.load(converted)
    # The graph is stored compact: the same weights, rounded as it rounds them, in fp32.
    round_as_compact(torch_nlp.get_pipe("transformer").model.get_ref("transformer").shims[0]._model)
    assert onnx_nlp.pipe_names == torch_nlp.pipe_names
    assert onnx_nlp.get_pipe_meta("transformer").factory == "biosyn_onnx_transformer"
    listener = torch_nlp.get_pipe("ner").model.get_ref("tok2vec").layers[0]
    for text in TEXTS:
        expected = listener.predict([torch_nlp.get_pipe("transformer")(torch_nlp.make_doc(text))])[0]
        found = onnx_nlp.get_pipe("transformer")(onnx_nlp.make_doc(text)).tensor
        assert found.dtype == np.float32 and found.shape == (len(expected), 32)  # the tiny BERT's width
        if len(expected):  # curated-transformers gives an empty doc no width
            assert np.abs(found - expected).max() < 1e-4, text
    assert entities(onnx_nlp.pipe(TEXTS)) == entities(torch_nlp.pipe(TEXTS))


def test_the_converted_pipeline_loads_and_links_without_torch(converted, tmp_path):
    here = entities(spacy.load(converted).pipe(TEXTS))
    assert any(here), "the entity ruler finds something to link"
    child = hiding(*TORCH_MODULES) + textwrap.dedent(f"""
        import json, sys
        import spacy
        nlp = spacy.load(sys.argv[1])
        print(json.dumps([[[e.start_char, e.end_char, e.label_, e._.cui] for e in doc.ents]
                          for doc in nlp.pipe({TEXTS!r})]))
    """)
    result = subprocess.run([sys.executable, "-c", child, str(converted)], capture_output=True, text=True, timeout=300,
                            env={"SPACY_BIOSYN_CACHE": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout.splitlines()[-1]) == [[list(e) for e in doc] for doc in here]


def test_two_processes_find_what_one_finds(converted):
    nlp = spacy.load(converted)  # its sessions are being made as the fork comes: it waits for them
    assert entities(nlp.pipe(TEXTS * 2, n_process=2, batch_size=2)) == entities(nlp.pipe(TEXTS * 2))


def test_the_converted_pipeline_goes_through_bytes_whole(converted):
    from spacy.lang.en import English

    nlp = spacy.load(converted)
    copy = English.from_config(nlp.config).from_bytes(nlp.to_bytes())
    assert entities(copy.pipe(TEXTS)) == entities(nlp.pipe(TEXTS))
    with pytest.raises(SavedStateError, match="transformer: from_bytes was given no saved biosyn_onnx_transformer"):
        copy.get_pipe("transformer").from_bytes(b"\x80")


def test_link_corpus_threads_reach_the_ners_session_too(converted, tmp_path):
    from spacy_biosyn.corpus_linking.worker import RunSettings, ShardLinker

    settings = RunSettings(pipeline=str(converted), output=str(tmp_path), output_format="jsonl", gold_spans=False,
                           labels=None, batch_size=8, threads=1, gpu=False)
    transformer = ShardLinker(settings).nlp.get_pipe("transformer")
    assert transformer._require_session().get_session_options().intra_op_num_threads == 1


def test_the_ner_without_the_transformer_before_it_says_what_to_run(converted):
    nlp = spacy.load(converted, exclude=["transformer"])
    with pytest.raises(ValueError, match="run the pipeline's biosyn_onnx_transformer before it"):
        nlp("Breast cancer.")


def test_an_edited_setting_is_named_on_load(converted, tmp_path):
    import shutil

    shutil.copytree(converted, tmp_path / "text")
    settings = tmp_path / "text" / "transformer" / "settings.json"
    settings.write_text(settings.read_text().replace('"stride": 24', '"stride": 25'))
    with pytest.raises(SavedStateError, match="settings.json is not the file that was saved"):
        spacy.load(tmp_path / "text")
    # Saved so (the manifest written again), a window the graph was not made for is refused still
    settings.write_text(settings.read_text().replace('"stride": 25', '"stride": 3'))
    write_manifest(tmp_path / "text" / "transformer")
    with pytest.raises(SavedStateError, match="stride must lie in"):
        spacy.load(tmp_path / "text")


def test_a_graph_that_does_not_run_is_named_where_it_is_first_used(converted, tmp_path):
    import shutil

    shutil.copytree(converted, tmp_path / "text")
    (tmp_path / "text" / "transformer" / "model.onnx").write_bytes(b"not a graph")
    write_manifest(tmp_path / "text" / "transformer")
    nlp = spacy.load(tmp_path / "text")
    with pytest.raises(SavedStateError, match=r"transformer: the NER's graph cannot be run"):
        nlp("Breast cancer.")


def test_a_pipeline_with_no_linker_and_no_transformer_has_nothing_to_convert(tmp_path):
    spacy.blank("en").to_disk(tmp_path / "blank")
    result = CliRunner().invoke(app, ["onnx", str(tmp_path / "blank"), str(tmp_path / "out")])
    assert result.exit_code == 1 and "no biosyn_linker and no transformer NER: nothing to convert" in result.output
    assert not (tmp_path / "out").exists()


def test_a_listener_other_than_the_recipes_is_named_not_converted(text_pipeline):
    nlp = spacy.load(text_pipeline)
    nlp.config["components"]["ner"]["model"]["tok2vec"]["pooling"]["@layers"] = "reduce_max.v1"
    with pytest.raises(ValueError, match=r"'ner' \(ner\) listens to 'transformer', .* its tok2vec: .* reduce_max.v1"):
        with_onnx_ner(nlp)
    assert nlp.get_pipe_meta("transformer").factory == "curated_transformer"


@pytest.mark.parametrize("window,stride", [(8, 6), (8, 4), (7, 4), (8, 8), (128, 96)])
def test_windows_are_joined_as_curated_transformers_joins_them(window, stride):
    from spacy_curated_transformers.models.with_strided_spans import _apply_to_overlaps, _average_arrays
    from thinc.api import NumpyOps

    from spacy_biosyn.ner.onnx_transformer import stitched

    rng = np.random.default_rng(0)
    for length in [1, stride - 1, stride, window, window + 1, 2 * stride + 3, 300]:
        windows = [rng.standard_normal((min(window, length - start), 3)).astype("f") for start in range(0, length, stride)]
        theirs = [w.copy() for w in windows]
        _apply_to_overlaps(theirs, [length], stride=stride, window=window, func=_average_arrays)
        expected = NumpyOps().flatten([w[:min(stride, length - i * stride)] for i, w in enumerate(theirs)])
        assert np.array_equal(stitched(windows, length, window, stride), expected), (window, stride, length)


def test_word_pieces_without_curated_transformers_are_the_encoders(text_pipeline):
    from spacy_curated_transformers.tokenization.wordpiece_encoder import _bert_preprocess

    for text in ["Doxorubicin (DOX)-induced", "café α-synuclein's 患者 🙂", "a--b..c", "x" * 99, "", "¿qué?"]:
        assert bert_words(text) == _bert_preprocess(text), text
    nlp = spacy.load(text_pipeline)
    encoder = nlp.get_pipe("transformer").model.get_ref("piece_encoder")
    doc = nlp.make_doc("Doxorubicin (DOX)-induced cardiomyopathy;\n café α-synuclein 患者 🙂 " + "x" * 120)
    (expected,) = encoder.predict([doc])
    attrs = encoder.attrs
    flat, lengths = doc_pieces(doc, attrs["wordpiece_processor"], lowercase=attrs["lowercase"],
                               strip_accents=attrs["strip_accents"])
    assert (flat, lengths) == (expected.dataXd.tolist(), expected.lengths.tolist())
