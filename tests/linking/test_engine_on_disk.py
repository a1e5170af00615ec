"""A linking engine saved on its own, and a pipeline's linker folder, opened
by `LinkingEngine.from_disk` from its engine.cfg: the same links, in a
process where spaCy cannot be imported."""
import gc
import json
import os
import subprocess
import sys

import pytest
import spacy

from spacy_biosyn import LinkingEngine, SavedStateError
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.linking.data_sources import DataSources
from spacy_biosyn.linking.linker_settings import LinkerSettings
from spacy_biosyn.parts import EXACT_INDEX
from spacy_biosyn.search.index import ExactIndex

from helpers import FUNCTION_WORDS, hiding

MENTIONS = ["breast cancer", "ovarian tumour", "the", "breast and ovarian cancer"]


def links_of(engine):
    return [None if links is None else (links.cui, [(c, round(s, 5)) for c, s in links.kb_ents])
            for links in engine.link(MENTIONS)]


def test_a_pipelines_linker_folder_opens_as_an_engine_without_spacy(tmp_path, tiny_encoder, disease_dictionary):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder,
                                          "sparse_weight": 10.0, "top_k": 3, "nil_threshold": 0.5})
    nlp.initialize()
    # sourced into another pipeline, as `assemble` builds a text pipeline: the saved config.cfg names its parts
    # and the pipeline that built it gone
    assembled = spacy.blank("en")
    assembled.add_pipe("biosyn_linker", source=nlp)
    del nlp
    gc.collect()
    assembled.to_disk(tmp_path / "pipeline")
    expected = links_of(assembled.get_pipe("biosyn_linker").engine)
    assert expected[2] == (None, []) and expected[3][0] == "D001943|D010051"  # "the" links to nothing; a composite
    script = hiding("spacy", "thinc") + f"""
import json
from spacy_biosyn.linking.engine import LinkingEngine
engine = LinkingEngine.from_disk({str(tmp_path / "pipeline" / "biosyn_linker")!r})
links = [None if l is None else (l.cui, [(c, round(s, 5)) for c, s in l.kb_ents]) for l in engine.link({MENTIONS!r})]
print(json.dumps([engine.settings.top_k, engine.settings.nil_threshold, links]))
"""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    top_k, threshold, links = json.loads(done.stdout.splitlines()[-1])
    assert (top_k, threshold) == (3, 0.5)
    assert links == json.loads(json.dumps(expected))


def make_engine(encoder, dictionary):
    engine = LinkingEngine("engine", LinkerSettings(sparse_weight=10.0), encoder=TransformerEncoder(encoder),
                           index=ExactIndex(), sources=DataSources(dictionary=dictionary), stop_words=FUNCTION_WORDS)
    engine.initialize()
    return engine


def test_an_engine_saved_on_its_own_opens_with_its_parts_and_links_alike(tmp_path, tiny_encoder, disease_dictionary):
    engine = make_engine(tiny_encoder, disease_dictionary)
    # an index names no config block of its own: the save needs one
    with pytest.raises(ValueError, match="no config block names its index"):
        engine.to_disk(tmp_path / "engine")
    engine.to_disk(tmp_path / "engine", parts={"index": {"@misc": EXACT_INDEX}})
    opened = LinkingEngine.from_disk(tmp_path / "engine")
    assert isinstance(opened.routes.default.index, ExactIndex) and opened.abbreviation_detector is None
    assert opened.preprocessor.stop_words == FUNCTION_WORDS
    assert links_of(opened) == links_of(engine)
    # opened, it knows its parts and saves again without being told
    opened.to_disk(tmp_path / "again")
    assert links_of(LinkingEngine.from_disk(tmp_path / "again")) == links_of(engine)


def test_a_save_without_engine_cfg_or_with_a_changed_one_is_refused_by_name(tmp_path, tiny_encoder, disease_dictionary):
    engine = make_engine(tiny_encoder, disease_dictionary)
    engine.to_disk(tmp_path / "engine", parts={"index": {"@misc": EXACT_INDEX}})
    cfg = tmp_path / "engine" / "engine.cfg"
    cfg.write_text(cfg.read_text().replace("spacy_biosyn.ExactIndex", "spacy_biosyn.NoSuchIndex"))
    with pytest.raises(SavedStateError, match="engine.cfg"):  # the manifest sees the change first
        LinkingEngine.from_disk(tmp_path / "engine")
    cfg.unlink()
    with pytest.raises(SavedStateError, match="engine.cfg is missing"):
        LinkingEngine.from_disk(tmp_path / "engine")
