"""Saving and loading as spaCy's own components do: bytes, exclude, pickle,
and saves that are all or nothing."""
import os
import pickle
import random
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import spacy
import srsly
from helpers import TEXT, as_saved_before_manifests, doc_with_ents, make_nlp, resealed
from scipy import sparse

from spacy_biosyn import BiosynError, MismatchError, SavedStateError, save_pipeline

MENTIONS = ("Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes")


def links(nlp):
    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, TEXT, *MENTIONS))
    return [(e._.cui, e._.kb_ents, e._.candidates) for e in doc.ents]


def test_bytes_round_trip_gives_identical_links(nlp):
    config = nlp.config["components"]["biosyn_linker"]
    fresh = spacy.blank("en")
    fresh.add_pipe("biosyn_linker", config={k: v for k, v in config.items() if k != "factory"})
    fresh.from_bytes(nlp.to_bytes())
    assert links(fresh) == links(nlp)


def test_exclude_leaves_fields_out_of_a_save_and_a_load(nlp, tmp_path, tiny_encoder, disease_dictionary):
    component = nlp.get_pipe("biosyn_linker")
    component.to_disk(tmp_path / "no-encoder", exclude=["encoder"])
    assert not (tmp_path / "no-encoder" / "encoder").exists()
    assert (tmp_path / "no-encoder" / "dictionary.txt").exists()
    other = make_nlp(tiny_encoder, disease_dictionary, sparse_weight=3.0)
    other.get_pipe("biosyn_linker").from_disk(tmp_path / "no-encoder", exclude=["encoder", "cfg"])
    assert other.get_pipe("biosyn_linker").engine.vocabulary().sparse_weight == 3.0  # cfg was not read


def test_a_loaded_lambda_is_the_saved_one_and_the_config_says_so(
    nlp, tmp_path, tiny_encoder, disease_dictionary
):
    nlp.get_pipe("biosyn_linker").to_disk(tmp_path / "component")  # saved alone, with lambda 10.0
    other = make_nlp(tiny_encoder, disease_dictionary, sparse_weight=3.0)
    pipe = other.get_pipe("biosyn_linker")
    pipe.from_disk(tmp_path / "component")
    assert pipe.settings.sparse_weight == 10.0  # the one holder, which every route's ranker reads
    assert other.config["components"]["biosyn_linker"]["sparse_weight"] == 10.0
    other.to_disk(tmp_path / "other")
    assert links(spacy.load(tmp_path / "other")) == links(nlp)


@pytest.mark.parametrize("name", ["../../evil", "/etc/evil", ".", "", "cfg/x", "a\x00b", "/".join(["d"] * 2000)])
def test_bytes_naming_a_file_no_save_writes_are_refused_in_one_line(nlp, name):
    import srsly

    pipe = nlp.get_pipe("biosyn_linker")
    files = srsly.msgpack_loads(pipe.to_bytes())
    with pytest.raises(ValueError, match=r"from_bytes refuses the file name .*: not one a save writes") as refused:
        pipe.from_bytes(srsly.msgpack_dumps({**files, name: b"x"}))
    assert "\n" not in str(refused.value)


class _RunsCode:
    """A pickle that creates a file when it is unpickled."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("damage", ["truncated", "binary tokenizer", "pickled weights"])
def test_an_encoder_folder_that_cannot_be_read_is_named_and_a_pickle_in_it_never_runs(saved, tmp_path, damage):
    encoder = saved / "biosyn_linker" / "encoder"
    marker = tmp_path / "pickle-ran"
    if damage == "truncated":
        weights = encoder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:1000])
        match = f"the encoder saved in {encoder} cannot be read"
    elif damage == "binary tokenizer":
        (encoder / "tokenizer.json").write_bytes(bytes(range(256)) * 4)
        match = f"the encoder saved in {encoder} cannot be read"
    else:
        (encoder / "model.safetensors").unlink()
        (encoder / "pytorch_model.bin").write_bytes(pickle.dumps(_RunsCode(marker)))
        match = f"{encoder / 'pytorch_model.bin'} is a pickled PyTorch checkpoint"
    with pytest.raises(SavedStateError, match="is not the file that was saved|is missing"):
        spacy.load(saved)  # the manifest names the damage first
    resealed(saved / "biosyn_linker")  # a save that wrote these files: the reader refuses them itself
    with pytest.raises(SavedStateError, match=re.escape(match)):
        spacy.load(saved)
    assert not marker.exists()


@pytest.mark.parametrize("content", ["pickle", "objects", "truncated"])
def test_name_vectors_that_are_not_a_float_matrix_are_named(tmp_path, content):
    from spacy_biosyn.search.index import ExactIndex

    names = np.eye(4, dtype=np.float32)
    index = tmp_path / "index"
    ExactIndex().build(names, sparse.csr_matrix(names)).to_disk(index)
    vectors = index / "vectors.npy"
    if content == "pickle":
        vectors.write_bytes(pickle.dumps(names))
    elif content == "objects":
        np.save(vectors, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    else:
        vectors.write_bytes(vectors.read_bytes()[:100])
    with pytest.raises(SavedStateError, match=re.escape(f"{vectors} is not a saved matrix of name vectors")):
        ExactIndex().from_disk(index)


@pytest.mark.parametrize("data", [b"\x93garbage" * 10, b"", srsly.msgpack_dumps([1, 2])])
def test_from_bytes_of_anything_else_is_refused_naming_the_component(nlp, data):
    with pytest.raises(SavedStateError, match="biosyn_linker: from_bytes was given .* bytes that are not a saved"):
        nlp.get_pipe("biosyn_linker").from_bytes(data)


def test_bytes_saved_without_the_encoder_and_loaded_with_it_say_so(nlp):
    data = nlp.get_pipe("biosyn_linker").to_bytes(exclude=["encoder"])
    with pytest.raises(SavedStateError, match=re.escape("these bytes hold no encoder")):
        nlp.get_pipe("biosyn_linker").from_bytes(data)
    nlp.get_pipe("biosyn_linker").from_bytes(data, exclude=["encoder"])


def test_a_pipeline_that_linked_can_be_pickled(nlp):
    before = links(nlp)  # Ab3P has been built by now
    assert links(pickle.loads(pickle.dumps(nlp))) == before


def test_a_save_that_fails_midway_leaves_the_previous_one(nlp, tmp_path, monkeypatch):
    nlp.to_disk(tmp_path / "p")
    before = links(spacy.load(tmp_path / "p"))
    component = nlp.get_pipe("biosyn_linker")

    def broken(path, **settings):
        raise OSError("disk full")

    monkeypatch.setattr(component.engine.vocabulary().index, "to_disk", broken)
    with pytest.raises(OSError, match="disk full"):
        nlp.to_disk(tmp_path / "p")
    assert links(spacy.load(tmp_path / "p")) == before
    assert not [p.name for p in (tmp_path / "p").iterdir() if p.name.startswith(".")]  # no staging folder left


def test_staging_folders_of_killed_saves_are_removed_by_the_next_save_or_load_but_not_those_of_running_ones(
    nlp, tmp_path
):
    import fcntl

    nlp.to_disk(tmp_path / "p")
    stale = [tmp_path / "p" / ".biosyn_linker.saving-0badf00d", tmp_path / ".p.saving-0badf00d"]
    running = tmp_path / "p" / ".biosyn_linker.saving-12345678"
    for folder in (*stale, running):
        folder.mkdir()
        (folder / "vectors.npy").write_bytes(b"half a save")
        os.utime(folder, (time.time() - 60, time.time() - 60))  # a save killed a minute ago
    just_made = tmp_path / "p" / ".biosyn_linker.saving-87654321"  # by a save about to lock it
    just_made.mkdir()
    held = os.open(running, os.O_RDONLY)  # a save in progress holds this lock
    fcntl.flock(held, fcntl.LOCK_EX)
    try:
        links(spacy.load(tmp_path / "p"))
        assert not stale[0].exists() and running.exists() and just_made.exists()
        just_made.rmdir()
        nlp.to_disk(tmp_path / "p")
        assert running.exists()
    finally:
        os.close(held)
    nlp.to_disk(tmp_path / "p")
    assert not [p.name for p in (tmp_path / "p").iterdir() if p.name.startswith(".")]
    save_pipeline(nlp, tmp_path / "p")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


SAVING = textwrap.dedent("""
    import sys, spacy
    from spacy_biosyn import save_pipeline
    nlp = spacy.load(sys.argv[1])
    print("saving", flush=True)
    while True:
        if sys.argv[2] == "pipeline":
            save_pipeline(nlp, sys.argv[1])
        else:
            nlp.get_pipe("biosyn_linker").to_disk(sys.argv[1] + "/biosyn_linker")
""")


@pytest.mark.parametrize("what", ["pipeline", "component"])
def test_saves_killed_at_random_points_leave_a_loadable_pipeline(nlp, tmp_path, what):
    nlp.to_disk(tmp_path / "p")
    expected = links(nlp)
    rng = random.Random(0)
    for _ in range(4):
        saver = subprocess.Popen([sys.executable, "-c", SAVING, str(tmp_path / "p"), what], stdout=subprocess.PIPE, text=True)
        assert saver.stdout.readline() == "saving\n"
        time.sleep(rng.uniform(0.0, 1.0))
        os.kill(saver.pid, signal.SIGKILL)
        saver.wait()
        assert links(spacy.load(tmp_path / "p")) == expected


def test_loading_while_another_process_saves_in_place(nlp, tmp_path):
    nlp.to_disk(tmp_path / "p")
    expected = links(nlp)
    saver = subprocess.Popen([sys.executable, "-c", SAVING, str(tmp_path / "p"), "pipeline"], stdout=subprocess.PIPE, text=True)
    try:
        assert saver.stdout.readline() == "saving\n"
        for _ in range(6):
            assert links(spacy.load(tmp_path / "p")) == expected
    finally:
        saver.kill()
        saver.wait()


@pytest.fixture
def saved(nlp, tmp_path):
    nlp.to_disk(tmp_path / "p")
    return tmp_path / "p"


@pytest.fixture
def sibling(tiny_encoder, tmp_path):
    """Another pipeline, over another dictionary, whose files could be mixed in."""
    other = tmp_path / "other.txt"
    other.write_text("D1||gout\nD2||gouty arthritis\nD3||breast neoplasm\n")
    make_nlp(tiny_encoder, str(other)).to_disk(tmp_path / "sibling")
    return tmp_path / "sibling" / "biosyn_linker"


@pytest.mark.parametrize("file", ["tfidf.json", "index/sparse.npz", "index/vectors.npy"])
def test_a_file_from_another_save_is_refused_naming_it(saved, sibling, file):
    path = saved / "biosyn_linker" / file
    original = path.read_bytes()
    path.write_bytes((sibling / file).read_bytes())
    with pytest.raises(SavedStateError, match=f"{path} is not the file that was saved"):
        spacy.load(saved)
    path.write_bytes(original)
    as_saved_before_manifests(saved / "biosyn_linker")  # saves without a manifest: index.json's checksums
    path.write_bytes((sibling / file).read_bytes())
    with pytest.raises(MismatchError, match=f"{path} is not the file saved with"):
        spacy.load(saved)


def test_one_replaced_name_vector_is_refused_naming_the_file(saved):
    # The load's probe re-encodes a few names only; this row is not one of them.
    path = saved / "biosyn_linker" / "index" / "vectors.npy"
    vectors = np.load(path)
    vectors[3] = vectors[1]
    np.save(path, vectors)
    with pytest.raises(SavedStateError, match=f"{path} is not the file that was saved"):
        spacy.load(saved)


def test_a_save_that_checksummed_only_the_tfidf_rows_still_loads(nlp, saved):
    import srsly

    meta_path = as_saved_before_manifests(saved / "biosyn_linker") / "index.json"
    meta = srsly.read_json(meta_path)
    srsly.write_json(meta_path, {k: v for k, v in meta.items() if k != "index_sha256"})
    assert links(spacy.load(saved)) == links(nlp)


def test_an_encoder_setting_edited_into_the_config_is_refused(tiny_encoder, disease_dictionary, tmp_path):
    encoder = {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": tiny_encoder}
    make_nlp(encoder, disease_dictionary).to_disk(tmp_path / "p")
    saved = tmp_path / "p"
    with pytest.raises(MismatchError, match="encoder.similarity = 'dot' given on load, but .* was built with encoder.similarity = 'cosine'"):
        spacy.load(saved, config={"components": {"biosyn_linker": {"encoder": {"similarity": "dot"}}}})


def test_how_the_index_holds_its_vectors_is_chosen_on_load_even_for_a_save_of_the_version_before(nlp, saved):
    # held_precision changes no saved file: the same links from int16 codes held as saved.
    lean = {"index": {"held_precision": "int16"}}
    assert links(spacy.load(saved, config={"components": {"biosyn_linker": lean}})) == links(nlp)
    config = saved / "config.cfg"
    original = config.read_text()
    config.write_text(original.replace('held_precision = "float32"', 'held_precision = "int16"'))
    edited = spacy.load(saved)
    assert edited.get_pipe("biosyn_linker").engine.routes.default.index.inner._vectors.dtype == np.int16
    assert links(edited) == links(nlp)
    # A pipeline saved with SizedIndex.v2, before held_precision, loads with v3 and it.
    config.write_text(original.replace("spacy_biosyn.SizedIndex.v3", "spacy_biosyn.SizedIndex.v2")
                      .replace('held_precision = "float32"\n', ""))
    cfg = srsly.read_json(saved / "biosyn_linker" / "cfg")
    cfg["bound_settings"]["index"] = {**cfg["bound_settings"]["index"], "@misc": "spacy_biosyn.SizedIndex.v2"}
    del cfg["bound_settings"]["index"]["held_precision"]
    srsly.write_json(saved / "biosyn_linker" / "cfg", cfg)
    resealed(saved / "biosyn_linker")
    assert "held_precision" not in config.read_text() + (saved / "biosyn_linker" / "cfg").read_text()
    lean = {"index": {"@misc": "spacy_biosyn.SizedIndex.v3", "held_precision": "int16"}}
    assert links(spacy.load(saved, config={"components": {"biosyn_linker": lean}})) == links(nlp)
    with pytest.raises(MismatchError, match="index.@misc = 'spacy_biosyn.ExactIndex.v4', .* given on load"):
        spacy.load(saved, config={"components": {"biosyn_linker": {"index": {"@misc": "spacy_biosyn.ExactIndex.v4"}}}})


def test_a_saved_config_takes_edits_of_runtime_settings_and_names_a_bound_one(nlp, saved):
    """A spaCy user's first move: edit top_k or nil_threshold in config.cfg.
    Settings the saved state was made with are refused, named."""
    config = saved / "config.cfg"
    original = config.read_text()
    assert "top_k = 5" in original and 'nil_threshold = "auto"' in original
    config.write_text(original.replace("top_k = 5", "top_k = 2").replace('nil_threshold = "auto"', "nil_threshold = 1.0"))
    edited = spacy.load(saved)
    linker = edited.get_pipe("biosyn_linker")
    assert (linker.top_k, linker.nil_threshold) == (2, 1.0)
    assert all(cui is None or kb_ents[0][1] == 1.0 for cui, kb_ents, _ in links(edited))  # names written as the mention only
    config.write_text(original.replace('nil_threshold = "auto"', "nil_threshold = 1000.0"))  # no score is above 1
    with pytest.raises(ValueError, match=r"nil_threshold 1000.0 lies outside \[0, 1\]"):
        spacy.load(saved)
    config.write_text(original.replace("sparse_weight = 10.0", "sparse_weight = 0.5"))
    with pytest.raises(MismatchError, match=rf"{config}: \[components.biosyn_linker\] sparse_weight \(10.0 -> 0.5\) cannot change"):
        spacy.load(saved)
    config.write_text(original)
    assert links(spacy.load(saved)) == links(nlp)


@pytest.mark.parametrize("override, named", [
    ({"sparse_weight": 0.5}, "sparse_weight = 0.5 given on load, but .* was built with sparse_weight = 10.0"),
    ({"split_composites": False}, "split_composites = False given on load"),
    ({"dictionary_labels": ["Chemical"]}, r"dictionary_labels = \['Chemical'\] given on load"),
])
def test_a_state_bound_setting_overridden_in_spacy_load_is_refused_naming_it(nlp, saved, override, named):
    with pytest.raises(MismatchError, match=named):
        spacy.load(saved, config={"components": {"biosyn_linker": override}})
    edited = spacy.load(saved, config={"components": {"biosyn_linker": {"top_k": 2}}})  # an editable one loads
    assert edited.get_pipe("biosyn_linker").top_k == 2


@pytest.mark.parametrize("setting", ["top_k", "names_searched"])
def test_a_runaway_ranking_size_is_refused_before_it_is_saved(nlp, setting):
    from spacy_biosyn import configure_linker

    for value in (10**9, 10**30):
        with pytest.raises(ValueError, match=f"{setting} should be less than or equal to 10000, got {value}"):
            configure_linker(nlp, **{setting: value})


@pytest.mark.parametrize("weight", ["true", "[1]", "-5", "NaN"])
def test_an_out_of_range_sparse_weight_in_cfg_is_refused(saved, weight):
    cfg = saved / "biosyn_linker" / "cfg"
    cfg.write_text(cfg.read_text().replace('"sparse_weight":10.0', f'"sparse_weight":{weight}'))
    resealed(saved / "biosyn_linker")  # as a save that wrote it: its reader's checks
    with pytest.raises(SavedStateError) as error:
        spacy.load(saved)
    # NaN is not even JSON
    assert str(error.value).startswith(f"{cfg}: sparse_weight must be a finite number >= 0" if weight != "NaN" else f"{cfg} is not valid JSON")


@pytest.mark.parametrize("file", ["cfg", "index.json", "tfidf.json", "corrections.json"])
def test_a_truncated_json_file_is_named(saved, file):
    path = saved / "biosyn_linker" / file
    path.write_text('{"sparse_weight": 1')
    with pytest.raises(BiosynError, match=str(path)):
        spacy.load(saved)


@pytest.mark.parametrize("file", ["dictionary.txt", "index.json", "tfidf.json", "index/sparse.npz"])
def test_a_deleted_file_fails_the_load_naming_it(saved, file):
    path = saved / "biosyn_linker" / file
    path.unlink()
    with pytest.raises((BiosynError, FileNotFoundError), match=str(path)):
        spacy.load(saved)


def test_a_save_without_a_format_loads_as_the_first_and_a_newer_format_is_refused_naming_its_version(nlp, saved):
    import srsly

    expected = links(nlp)
    cfg_path = saved / "biosyn_linker" / "cfg"
    cfg = srsly.read_json(cfg_path)
    assert cfg["format"] == 2 and cfg["saved_by"].startswith("spacy-biosyn ")
    # What versions before the format field wrote: no manifest either.
    as_saved_before_manifests(saved / "biosyn_linker")
    srsly.write_json(cfg_path, {k: v for k, v in cfg.items() if k not in ("format", "saved_by")})
    assert links(spacy.load(saved)) == expected
    srsly.write_json(cfg_path, {**cfg, "format": 3, "saved_by": "spacy-biosyn 9.0.0"})
    with pytest.raises(SavedStateError, match=r"saved in format 3 by spacy-biosyn 9\.0\.0; spacy-biosyn \S+ reads format 2"):
        spacy.load(saved)


def test_loading_and_linking_never_import_scikit_learn(saved):
    # A name's tf-idf row comes from the index and a new string's is computed
    # from the saved vocabulary: scikit-learn's import took 0.74 s.
    script = textwrap.dedent(f"""
        import sys
        import spacy
        from spacy.tokens import Span
        nlp = spacy.load({str(saved)!r})
        print("sklearn" in sys.modules)
        for text in ("breast cancer", "hereditary mammary carcinomas"):  # a name, then a new string
            doc = nlp.make_doc(text)
            doc.ents = [Span(doc, 0, len(doc), label="Disease")]
            cui = nlp.get_pipe("biosyn_linker")(doc).ents[0]._.cui
            print("sklearn" in sys.modules, cui)
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "False", "D001943", "False", "D001943"]


def test_a_pipeline_saved_when_scispacys_names_were_bound_settings_still_loads(nlp, tmp_path):
    """Saves made before k and max_entities_per_mention became editable
    hashed them (null) among the settings the state is bound to."""
    import hashlib

    nlp.to_disk(tmp_path / "p")
    cfg_file = tmp_path / "p" / "biosyn_linker" / "cfg"
    cfg = srsly.read_json(cfg_file)
    legacy = {**cfg["bound_settings"], "k": None, "max_entities_per_mention": None}
    cfg.update(bound_settings=legacy,
               settings_sha256=hashlib.sha256(srsly.json_dumps(legacy, sort_keys=True).encode("utf-8")).hexdigest())
    srsly.write_json(cfg_file, cfg)
    as_saved_before_manifests(cfg_file.parent)
    assert links(spacy.load(tmp_path / "p")) == links(nlp)
    config = tmp_path / "p" / "config.cfg"
    config.write_text(config.read_text().replace("sparse_weight = 10.0", "sparse_weight = 2.0"))
    with pytest.raises(MismatchError, match="sparse_weight"):
        spacy.load(tmp_path / "p")


def test_a_pipe_added_without_its_sources_takes_a_saved_state(tiny_encoder, saved, nlp):
    """The saved state replaces what initialize() would read: a pipe added
    with no dictionary loads a linker's folder, as spaCy users do."""
    fresh = spacy.blank("en")
    fresh.add_pipe("biosyn_linker", config={"encoder": tiny_encoder, "sparse_weight": 10.0}).from_disk(saved / "biosyn_linker")
    assert links(fresh) == links(nlp)


def test_the_encoders_runtime_settings_may_be_edited_in_config_cfg(tiny_encoder, disease_dictionary, tmp_path):
    encoder = {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": tiny_encoder, "batch_size": 128}
    make_nlp(encoder, disease_dictionary).to_disk(tmp_path / "p")
    config = tmp_path / "p" / "config.cfg"
    config.write_text(config.read_text().replace("batch_size = 128", "batch_size = 7"))
    assert spacy.load(tmp_path / "p").config["components"]["biosyn_linker"]["encoder"]["batch_size"] == 7
    config.write_text(config.read_text().replace("similarity = \"cosine\"", "similarity = \"dot\""))
    with pytest.raises(MismatchError, match=r"encoder.similarity \('cosine' -> 'dot'\) cannot change"):
        spacy.load(tmp_path / "p")


def test_a_saved_linkers_tfidf_rows_are_its_names_counts_and_load_as_built(nlp, tmp_path):
    nlp.to_disk(tmp_path / "p")
    saved = np.load(tmp_path / "p" / "biosyn_linker" / "index" / "sparse.npz", allow_pickle=False)
    assert saved["format"].item() == b"tfidf-counts" and saved["counts"].dtype == np.uint8
    built = nlp.get_pipe("biosyn_linker").engine.vocabulary().index.sparse_vectors
    loaded = spacy.load(tmp_path / "p").get_pipe("biosyn_linker").engine.vocabulary().index.sparse_vectors
    assert (built != loaded).nnz == 0 and loaded.dtype == np.float32
    assert links(spacy.load(tmp_path / "p")) == links(nlp)
