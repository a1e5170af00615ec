"""Every file of a saved linker is checked against the save's manifest
before any is read: an edited type, correction or threshold, a file cut
short, deleted or added, is refused in one line naming it, never linked with."""
import json

import pytest
import spacy
from helpers import resealed

from spacy_biosyn.errors import SavedStateError
from spacy_biosyn.files.manifest import MANIFEST


@pytest.fixture(scope="module")
def saved(tmp_path_factory, tiny_encoder):
    from helpers import make_nlp
    from vocabulary_files import CTD_TSV

    folder = tmp_path_factory.mktemp("integrity")
    (folder / "CTD_diseases.tsv").write_text(CTD_TSV)  # types and definitions: concepts.jsonl
    vocabulary = {"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": str(folder / "CTD_diseases.tsv")}
    (folder / "corrections.txt").write_text("cancr||cancer\n")
    make_nlp(tiny_encoder, vocabulary, corrections=str(folder / "corrections.txt")).to_disk(folder / "p")
    return folder / "p"


@pytest.fixture
def copy(saved, tmp_path):
    import shutil

    shutil.copytree(saved, tmp_path / "p")
    return tmp_path / "p"


def _one_line(error) -> str:
    message = str(error.value)
    assert "\n" not in message
    return message


def test_the_manifest_lists_every_file_of_the_save(saved):
    component = saved / "biosyn_linker"
    listed = json.loads((component / MANIFEST).read_text())["sha256"]
    on_disk = {f.relative_to(component).as_posix() for f in component.rglob("*") if f.is_file()} - {MANIFEST}
    assert set(listed) == on_disk
    assert {"cfg", "corrections.json", "index.json", "concepts.jsonl", "dictionary.txt"} <= on_disk


@pytest.mark.parametrize("file", ["concepts.jsonl", "corrections.json", "index.json", "id_usage.json", "cfg",
                                  "dictionary.txt", "index/vectors.npy", "encoder/model.safetensors"])
def test_one_changed_byte_in_any_file_is_refused_naming_it(copy, file):
    path = copy / "biosyn_linker" / file
    content = bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0x01
    path.write_bytes(bytes(content))
    with pytest.raises(SavedStateError) as refused:
        spacy.load(copy)
    assert _one_line(refused).startswith(f"{path} is not the file that was saved")


def test_an_edited_correction_never_links(copy):
    corrections = copy / "biosyn_linker" / "corrections.json"
    corrections.write_text(json.dumps({"cancer": "asthma"}))
    with pytest.raises(SavedStateError, match="corrections.json is not the file that was saved"):
        spacy.load(copy)


@pytest.mark.parametrize("change", ["deleted", "added", "manifest deleted"])
def test_a_deleted_or_added_file_or_a_missing_manifest_is_refused_naming_it(copy, change):
    component = copy / "biosyn_linker"
    if change == "deleted":
        (component / "concepts.jsonl").unlink()
        named = f"{component / 'concepts.jsonl'} is missing"
    elif change == "added":
        (component / "synonyms.txt").write_text("D001943||boob cancer\n")  # read if present: would add a name
        named = f"{component / 'synonyms.txt'} is not part of the save"
    else:
        (component / MANIFEST).unlink()
        named = f"{component / MANIFEST} is missing"
    with pytest.raises(SavedStateError) as refused:
        spacy.load(copy)
    assert _one_line(refused).startswith(named)


@pytest.mark.parametrize("content", ["[1, 2]", '"index"', "7"])
def test_saved_json_of_the_wrong_shape_is_named_in_one_line(copy, content):
    component = copy / "biosyn_linker"
    (component / "index.json").write_text(content)
    resealed(component)  # as a save that wrote it: the reader's own check
    with pytest.raises(SavedStateError) as refused:
        spacy.load(copy)
    assert _one_line(refused).startswith(f"{component / 'index.json'} holds")


def counting_hashes(monkeypatch) -> list:
    """The files hashed from now on, this process's checks forgotten (as a new process's)."""
    import spacy_biosyn.files.manifest as manifests

    hashed = []
    real = manifests.file_sha256
    monkeypatch.setattr(manifests, "file_sha256", lambda path: hashed.append(str(path)) or real(path))
    monkeypatch.setattr(manifests, "_CHECKED", {})
    return hashed


def test_a_whole_save_loads_and_its_files_are_hashed_once_per_load(saved, monkeypatch, tmp_path):
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))  # no check remembered
    hashed = counting_hashes(monkeypatch)
    spacy.load(saved)
    assert hashed and len(hashed) == len(set(hashed))  # the linker inside the pipe's folder is not hashed again


def test_a_save_that_passed_is_not_hashed_again_until_a_file_changes(copy, monkeypatch, tmp_path):
    import os

    import spacy_biosyn.files.manifest as manifests

    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(manifests, "_SETTLING_S", 0)  # the copy's files count as settled at once
    spacy.load(copy)
    hashed = counting_hashes(monkeypatch)
    spacy.load(copy)
    assert not [path for path in hashed if path.startswith(str(copy))]
    # One byte changed in place, its size and modification time put back: its change time tells
    path = copy / "biosyn_linker" / "cfg"
    before, content = path.stat(), bytearray(path.read_bytes())
    content[len(content) // 2] ^= 0x01
    path.write_bytes(bytes(content))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    with pytest.raises(SavedStateError) as refused:
        spacy.load(copy)
    assert _one_line(refused).startswith(f"{path} is not the file that was saved")


def test_hidden_files_beside_a_save_are_left_alone(copy):
    """No save writes or reads a hidden file: a notebook's checkpoints
    folder in the pipeline does not stop it loading."""
    (copy / "biosyn_linker" / ".ipynb_checkpoints").mkdir()
    (copy / "biosyn_linker" / ".ipynb_checkpoints" / "cfg-checkpoint").write_text("{}")
    (copy / "biosyn_linker" / ".DS_Store").write_bytes(b"\0\1")
    assert spacy.load(copy).get_pipe("biosyn_linker").engine.is_ready


def test_a_save_just_written_or_a_cache_that_cannot_be_written_is_hashed_at_each_load(copy, monkeypatch, tmp_path):
    import spacy_biosyn.files.manifest as manifests

    # Files written this second: a write in the same tick of the clock could leave their stat as it was
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    spacy.load(copy)
    hashed = counting_hashes(monkeypatch)
    spacy.load(copy)
    assert hashed
    # A cache folder that is a file: nothing remembered, nothing refused
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "not-a-folder"))
    monkeypatch.setattr(manifests, "_SETTLING_S", 0)
    spacy.load(copy)
    hashed = counting_hashes(monkeypatch)
    spacy.load(copy)
    assert hashed


def test_checks_are_remembered_for_the_most_recently_used_folders_and_recheck_forgets_them(
        saved, copy, monkeypatch, tmp_path):
    import spacy_biosyn.files.manifest as manifests

    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(manifests, "_SETTLING_S", 0)
    monkeypatch.setattr(manifests, "_REMEMBERED_AT_MOST", 2)
    for folder in (saved, copy, saved):
        counting_hashes(monkeypatch)
        spacy.load(folder)
    assert len(list((tmp_path / "cache" / "checked").iterdir())) == 2
    hashed = counting_hashes(monkeypatch)
    spacy.load(saved)
    assert not hashed
    monkeypatch.setenv("SPACY_BIOSYN_RECHECK", "1")
    hashed = counting_hashes(monkeypatch)
    spacy.load(saved)
    assert hashed
