"""The download and named-linker caches under what users do to them: one
cache shared by settings that store different things, mirror copies that
do not read, killed fetches, modes, passwords in URLs, bad settings, full
disks, another user's read-only cache and damaged records. Each refusal is
one line naming what is at fault."""
import errno
import gzip
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time
import warnings
from base64 import b64encode

import pytest
import spacy
from test_named_linkers import PUBLISHED, answer, linked, named_config, serving
from typer.testing import CliRunner
from vocabulary_files import CTD_TSV

from benchmarks.stress.findings_cache import ctd_diseases
from spacy_biosyn.cli import app
from spacy_biosyn.encoders.tiny import make_tiny_encoder
from spacy_biosyn.files.downloads import CacheError, cached_path
from spacy_biosyn.files.fetching import DownloadError

MEDIC_URL = "https://ctdbase.org/reports/CTD_diseases.tsv.gz"


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    """A mirror folder holding MEDIC as CTD publishes it, and an empty cache."""
    folder = tmp_path / "mirror"
    folder.mkdir()
    (folder / "CTD_diseases.tsv.gz").write_bytes(PUBLISHED["CTD_diseases.tsv.gz"])
    monkeypatch.setenv("SPACY_BIOSYN_MIRROR", str(folder))
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    return folder


def medic_pipe(encoder, **config):
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={**named_config("medic", encoder), **config})
    return nlp


def initialized(encoder, **config):
    nlp = medic_pipe(encoder, **config)
    nlp.get_pipe("biosyn_linker").initialize()
    return nlp.get_pipe("biosyn_linker")


def downloads(tmp_path):
    """The cache's downloads other than the lock files."""
    return sorted(p.name for p in (tmp_path / "cache" / "downloads").iterdir() if not p.name.endswith(".lock"))


# What a cached linker holds ----------------------------------------------------

def test_each_lambda_gets_the_nil_threshold_derived_with_it(mirror, tiny_encoder, tmp_path, monkeypatch):
    (mirror / "CTD_diseases.tsv.gz").write_bytes(gzip.compress(ctd_diseases().encode()))
    assert initialized(tiny_encoder, sparse_weight=10.0).nil_threshold is not None
    shared = initialized(tiny_encoder, sparse_weight=0.5).nil_threshold
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "fresh-cache"))
    own = initialized(tiny_encoder, sparse_weight=0.5).nil_threshold
    assert shared == own and own != initialized(tiny_encoder, sparse_weight=10.0).nil_threshold


def write_corpus(folder):
    """NCBI-style queries whose annotators wrote OMIM 114480 for breast cancer."""
    folder.mkdir()
    (folder / "1.concept").write_text("1||0|13||SpecificDisease||breast cancer||114480\n"
                                      "1||30|43||SpecificDisease||breast carcinoma||114480\n")
    return folder


def test_preferred_ids_from_orders_a_named_vocabularys_ids_as_a_dictionarys(mirror, tiny_encoder, tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    (tmp_path / "CTD_diseases.tsv").write_text(CTD_TSV)
    given = spacy.blank("en")
    medic_file = {"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": str(tmp_path / "CTD_diseases.tsv")}
    given.add_pipe("biosyn_linker", config={"dictionary": medic_file, "sparse_weight": 10.0,
                                            "preferred_ids_from": [str(corpus)],
                                            "encoder": named_config("medic", tiny_encoder)["encoder"]})
    named = medic_pipe(tiny_encoder, preferred_ids_from=[str(corpus)])
    plain = medic_pipe(tiny_encoder)
    mention = ("Risk of breast carcinoma in carriers.", "breast carcinoma")
    assert linked(given, *mention).kb_id_ == linked(named, *mention).kb_id_ == "OMIM:114480"
    assert linked(plain, *mention).kb_id_ == "MESH:D001943"  # built apart: the corpus's order is not cached for it
    assert len(list((tmp_path / "cache" / "linkers").glob("medic-*/named.json"))) == 2


def test_two_models_saved_in_turn_at_one_path_are_cached_apart(mirror, tmp_path, capfd):
    encoder = str(tmp_path / "encoder")
    for seed in (0, 1, 0):
        make_tiny_encoder(encoder, seed=seed)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert linked(medic_pipe(encoder), "Risk of breast carcinoma", "breast carcinoma").kb_id_ == "MESH:D001943"
        assert not [w for w in caught if "damaged" in str(w.message)]
    encoded = capfd.readouterr().err.count("encoding them now")
    assert encoded == 2  # the first model's linker is loaded again, not built


# Downloads -------------------------------------------------------------------

@pytest.mark.parametrize("damage", [
    lambda tsv: tsv.replace("Ovarian Cancer", "Ovarian Canc\xe9r").encode("latin-1"),
    lambda tsv: tsv.replace("Ovarian Cancer", "Ovarian\0Cancer").encode(),
], ids=["latin-1", "nul"])
def test_a_mirror_copy_that_does_not_read_is_named_and_not_kept(mirror, tiny_encoder, tmp_path, damage):
    (mirror / "CTD_diseases.tsv.gz").write_bytes(gzip.compress(damage(CTD_TSV)))
    with pytest.raises(ValueError) as refused:
        initialized(tiny_encoder)
    message = str(refused.value)
    assert MEDIC_URL in message and str(mirror / "CTD_diseases.tsv.gz") in message
    assert str(tmp_path / "cache") not in message and "\n" not in message
    assert downloads(tmp_path) == []
    (mirror / "CTD_diseases.tsv.gz").write_bytes(PUBLISHED["CTD_diseases.tsv.gz"])  # the mirror is mended
    assert linked(medic_pipe(tiny_encoder), "breast carcinoma", "breast carcinoma").kb_id_ == "MESH:D001943"


FETCH = "from spacy_biosyn.files.downloads import cached_path; cached_path({url!r}, refresh=True)"


def test_the_partial_file_of_a_killed_refresh_is_removed_by_the_next_use(tmp_path, monkeypatch):
    from filelock import FileLock

    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPACY_BIOSYN_MIRROR", raising=False)
    served = [answer(PUBLISHED["CTD_diseases.tsv.gz"]), answer(PUBLISHED["CTD_diseases.tsv.gz"], drip=0.5)]
    with serving(respond=lambda handler: served.pop(0)(handler)) as base:
        url = base + "CTD_diseases.tsv.gz"
        path = cached_path(url)
        refresh = subprocess.Popen([sys.executable, "-c", FETCH.format(url=url)], env=os.environ.copy())
        while not any(path.parent.glob(".*.partial")) and refresh.poll() is None:
            time.sleep(0.1)
        refresh.send_signal(signal.SIGKILL)
        refresh.wait()
        [killed] = path.parent.glob(".*.partial")
        running = path.with_name(f".{path.name[:-3]}-other.gz.12345678.partial")  # another URL's, being fetched
        running.write_bytes(b"\x1f\x8b")
        with FileLock(str(running.with_name(running.name[1:].rsplit(".", 2)[0])) + ".lock"):
            assert cached_path(url) == path and path.read_bytes() == PUBLISHED["CTD_diseases.tsv.gz"]
    assert not killed.exists() and running.exists()


def test_a_cached_copy_has_the_mode_the_umask_gives_never_its_sources(mirror, tmp_path):
    source = tmp_path / "published" / "CTD_diseases.tsv.gz"
    source.parent.mkdir()
    source.write_bytes(PUBLISHED["CTD_diseases.tsv.gz"])
    (mirror / "CTD_diseases.tsv.gz").unlink()
    (mirror / "CTD_diseases.tsv.gz").symlink_to(source)
    for source_mode, umask, cached_mode in ((0o600, 0o022, 0o644), (0o644, 0o077, 0o600)):
        source.chmod(source_mode)
        before = os.umask(umask)
        try:
            path = cached_path(MEDIC_URL, refresh=True)
        finally:
            os.umask(before)
        assert oct(path.stat().st_mode & 0o777) == oct(cached_mode)


def basic_auth(user, password):
    """A server that serves GOOD to `user`:`password` alone, else 401."""
    expected = "Basic " + b64encode(f"{user}:{password}".encode()).decode()

    def respond(handler):
        if handler.headers.get("Authorization") != expected:
            handler.send_response(401)
            handler.send_header("WWW-Authenticate", 'Basic realm="mirror"')
            handler.end_headers()
            return
        answer(PUBLISHED["CTD_diseases.tsv.gz"])(handler)
    return respond


def test_a_url_with_a_password_is_fetched_with_it_and_never_shows_it(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    with serving(respond=basic_auth("curator", "s3cr3t")) as base:
        port = base.rsplit(":", 1)[1].strip("/")
        monkeypatch.setenv("SPACY_BIOSYN_MIRROR", f"http://curator:s3cr3t@127.0.0.1:{port}/")
        assert cached_path(MEDIC_URL).read_bytes() == PUBLISHED["CTD_diseases.tsv.gz"]
        listed = CliRunner().invoke(app, ["linkers"])
        monkeypatch.delenv("SPACY_BIOSYN_MIRROR")
        with pytest.raises(DownloadError, match=r"curator:\*\*\*@127\.0\.0\.1.*HTTP 401") as refused:
            cached_path(f"http://curator:wrong@127.0.0.1:{port}/CTD_diseases.tsv.gz")
        assert "wrong" not in str(refused.value)
    assert "curator:***@127.0.0.1" in listed.output
    shown = listed.output + "".join(capfd.readouterr()) + "".join(
        p.read_text() for p in (tmp_path / "cache" / "downloads").glob("*.json"))
    assert "s3cr3t" not in shown


@pytest.mark.parametrize("value", ["nan", "abc", "inf", "-5", "0"])
def test_a_download_deadline_that_is_no_number_of_seconds_is_refused_in_one_line(tmp_path, monkeypatch, value):
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SPACY_BIOSYN_DOWNLOAD_DEADLINE", value)
    monkeypatch.delenv("SPACY_BIOSYN_MIRROR", raising=False)
    with serving(respond=answer(gzip.compress(b"x")[:8], drip=1.0)) as base:  # a byte a second
        started = time.monotonic()
        with pytest.raises(DownloadError, match=f"SPACY_BIOSYN_DOWNLOAD_DEADLINE='{value}': .*seconds above 0") as e:
            cached_path(base + "CTD_diseases.tsv.gz")
    assert time.monotonic() - started < 5 and "\n" not in str(e.value)


# A cache that cannot be written ----------------------------------------------

class NoRoom:
    """A file open for writing on a full disk."""

    def __init__(self, file):
        self.file = file

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.file, name)


def test_a_full_disk_while_fetching_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SPACY_BIOSYN_MIRROR", raising=False)
    opened = pathlib.Path.open

    def no_room(path, mode="r", *args, **kwargs):
        file = opened(path, mode, *args, **kwargs)
        return NoRoom(file) if "w" in mode and path.name.endswith(".partial") else file

    monkeypatch.setattr(pathlib.Path, "open", no_room)
    with serving(respond=answer(PUBLISHED["CTD_diseases.tsv.gz"])) as base:
        with pytest.raises(CacheError, match=f"the disk of the cache folder {tmp_path / 'cache'} is full"):
            cached_path(base + "CTD_diseases.tsv.gz")
    assert downloads(tmp_path) == []


def test_a_full_disk_while_the_linker_is_written_is_one_line_and_leaves_nothing(mirror, tiny_encoder, tmp_path,
                                                                               monkeypatch):
    from spacy_biosyn.search.name_ranker import NameRanker

    def no_room(linker, path, exclude=()):
        pathlib.Path(path).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(path) / "dictionary.txt").write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device", str(path / "index"))

    monkeypatch.setattr(NameRanker, "to_disk", no_room)
    with pytest.raises(CacheError, match="the disk of the cache folder .* is full: medic-.* free some space"):
        initialized(tiny_encoder)
    assert [p.name for p in (tmp_path / "cache" / "linkers").iterdir() if not p.name.endswith(".lock")] == []


def test_a_cache_that_is_a_file_is_one_line(mirror, tiny_encoder, tmp_path, monkeypatch):
    (tmp_path / "cache-file").write_text("not a folder")
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache-file"))
    with pytest.raises(CacheError, match=f"the cache folder {tmp_path / 'cache-file'} is a file: set SPACY_BIOSYN"):
        initialized(tiny_encoder)


# Another user asks the shared cache for the first encoder's linker, then for a new encoder's.
OTHER_USER = """
import spacy
for encoder in {encoders!r}:
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={{"linker_name": "medic", "sparse_weight": 10.0,
        "encoder": {{"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": encoder}}}})
    doc = nlp.make_doc("breast carcinoma")
    doc.ents = [doc.char_span(0, 16, label="Disease")]
    try:
        print(nlp(doc).ents[0].kb_id_)
    except Exception as error:
        print(type(error).__name__, error)
"""


def test_another_users_read_only_cache_serves_what_it_holds_and_says_what_it_cannot(mirror, tiny_encoder,
                                                                                  other_tiny_encoder, tmp_path):
    assert linked(medic_pipe(tiny_encoder), "breast carcinoma", "breast carcinoma").kb_id_ == "MESH:D001943"
    cache = tmp_path / "cache"
    for folder in (cache, *cache.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o555)
    # root writes anywhere: it stands for another user without the right to
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root without setpriv cannot be denied a write")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", sys.executable]
    else:
        command = [sys.executable]
    try:
        result = subprocess.run([*command, "-c", OTHER_USER.format(encoders=[tiny_encoder, other_tiny_encoder])],
                                capture_output=True, text=True, timeout=300)
    finally:
        for folder in (cache, *cache.rglob("*")):
            if folder.is_dir():
                folder.chmod(0o755)
    assert result.returncode == 0, result.stderr[-2000:]
    served, refused = result.stdout.strip().splitlines()
    assert served == "MESH:D001943"
    assert refused.startswith(f"CacheError the cache folder {cache} is not writable ({cache / 'linkers'}/medic-")
    assert refused.endswith("could not be written): set SPACY_BIOSYN_CACHE to a folder you can write")


@pytest.mark.parametrize("content", ['{"name": "medic", "encoder": "x"}', '{"name": "medic"}', "[1, 2]", "{not json"])
def test_linkers_passes_over_a_damaged_record(mirror, tiny_encoder, tmp_path, content):
    initialized(tiny_encoder)
    damaged = tmp_path / "cache" / "linkers" / "medic-0123456789abcdef0123"
    damaged.mkdir()
    (damaged / "named.json").write_text(content)
    listed = CliRunner().invoke(app, ["linkers"])
    assert listed.exit_code == 0, listed.output
    medic_row = next(line for line in listed.output.splitlines() if line.startswith("medic "))
    assert medic_row.rstrip().endswith(os.path.basename(tiny_encoder))


@pytest.mark.parametrize("url, shown", [
    ("https://alice:s3cret@host/a.gz", "https://alice:***@host/a.gz"),
    ("https://ghp_T0KEN@host/a.gz", "https://***@host/a.gz"),
    ("https://host/a.gz", "https://host/a.gz"),
])
def test_a_url_is_shown_without_its_secret(url, shown):
    from spacy_biosyn.files.fetching import redacted

    assert redacted(url) == shown
