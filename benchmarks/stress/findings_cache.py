"""Stress cases of the download and named-linker caches, one per finding
of their review: `CASES`, a list of (finding, run), where `run(workdir)`
sets up in the empty folder `workdir`, does what a user does through the
public API (spacy.blank + add_pipe, `cached_path`) or the command line in
a process of its own, and returns (held, what it did): held is True where
the fixed behaviour is seen. They use only what older versions had, so
that a runner can give each case before and after a change (PYTHONPATH at
an older checkout). A tiny random encoder keeps each case to seconds.

The full-disk cases mount a small tmpfs, which needs root; elsewhere they
say that they did not run.
"""
import contextlib
import functools
import gzip
import http.server
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
import traceback
import warnings
from base64 import b64encode
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

MEDIC_URL = "https://ctdbase.org/reports/CTD_diseases.tsv.gz"
_CTD_HEADER = ("# Fields:\n# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\t"
               "ParentTreeNumbers\tSynonyms\tSlimMappings\n#\n")
# MEDIC concepts (`IDs||name|synonyms`, the first ID CTD's DiseaseID) with
# three or four names each: enough held-out names to derive a NIL
# threshold from. The first also has an OMIM ID, which annotators of NCBI
# Disease write for it.
MEDIC_ROWS = """\
MESH:D001943|OMIM:114480||Breast Neoplasms|Breast Cancer|Breast Carcinoma|Mammary Carcinoma, Human
MESH:D001819||Bluetongue|Blue Tongue|Tongue, Blue
MESH:D053018||Pyonephrosis|Hydronephrosis, Infected|Infected Hydronephrosis
MESH:D005383||Finger Injuries|Finger Injury|Injuries, Finger|Injury, Finger
MESH:D017359||HELLP Syndrome|Hemolysis, Elevated Liver Enzymes, Lowered Platelets|Syndrome, HELLP
MESH:D005393||Fish Diseases|Disease, Fish|Diseases, Fish|Fish Disease
MESH:D004065||Digestive System Abnormalities|Abnormalities, Digestive System|Digestive System Abnormality
MESH:D005357||Fibrous Dysplasia of Bone|Bone Fibrous Dysplasia|Osteitis Fibrosa Disseminata
MESH:D005355||Fibrosis|Cirrhosis|Fibroses
MESH:D050815||Fractures, Compression|Compression Fracture|Compression Fractures|Fracture, Compression
MESH:D005335||Fever of Unknown Origin|Unknown Origin Fever|Unknown Origin Fevers
MESH:D005352||Fibromuscular Dysplasia|Dysplasia, Fibromuscular|Fibromuscular Dysplasias
MESH:D020969||Disease Attributes|Attribute, Disease|Attributes, Disease|Disease Attribute
MESH:D019960||Elimination Disorders|Disorder, Elimination|Disorders, Elimination|Elimination Disorder
MESH:D007979||Levocardia|Isolated Levocardia|Levocardia, Isolated|Situs Inversus with Levocardia
MESH:D005316||Fetal Distress|Fetal Status, Nonreassuring|Nonreassuring Fetal Status
MESH:D020953||Neuroaspergillosis|Aspergillosis, Nervous System Invasive|Nervous System Invasive Aspergillosis
MESH:D005311||Fetal Hypoxia|Anoxia, Fetal|Fetal Anoxia|Hypoxia, Fetal
MESH:D018640||Stomatognathic System Abnormalities|Abnormalities, Stomatognathic System|Stomatognathic System Abnormality
MESH:D005327||Fetal Resorption|Fetal Resorptions|Resorption, Fetal|Resorptions, Fetal
MESH:D005320||Fetal Macrosomia|Fetal Macrosomias|Macrosomia, Fetal|Macrosomias, Fetal
MESH:D007955||Leukemoid Reaction|Leukemoid Reactions|Reaction, Leukemoid|Reactions, Leukemoid
MESH:D048550||Hepatic Insufficiency|Insufficiency, Hepatic|Insufficiency, Liver|Liver Insufficiency
MESH:D007967||Leukoedema, Oral|Leukoedemas, Oral|Oral Leukoedema|Oral Leukoedemas
MESH:D007964||Leukocytosis|Leukocytoses|Pleocytoses|Pleocytosis
MESH:D007960||Leukocyte Disorders|Disorder, Leukocyte|Disorders, Leukocyte|Leukocyte Disorder
MESH:D007970||Leukopenia|Leukocytopenia|Leukocytopenias|Leukopenias
MESH:D020924||Urological Manifestations|Manifestations, Urological|Urological Manifestation
MESH:D018614||Sweating Sickness|English Sweating Sickness|Sickness, Sweating|Sudor Anglicus
MESH:D007939||Leukemia L1210|L 1210, Leukemia|L1210, Leukemia|Leukemia L 1210
MESH:D006606||Hiccup|Hiccough|Hiccoughs|Hiccups
"""


def ctd_diseases(rows: str = MEDIC_ROWS) -> str:
    """MEDIC rows as CTD publishes them (CTD_diseases.tsv)."""
    lines = []
    for row in rows.splitlines():
        (cui, *alternatives), (name, *synonyms) = (part.split("|") for part in row.split("||"))
        lines.append(f"{name}\t{cui}\t{'|'.join(alternatives)}\t\t\t\t\t{'|'.join(synonyms)}\t\n")
    return _CTD_HEADER + "".join(lines)


# Setting up ------------------------------------------------------------------

@contextlib.contextmanager
def _environment(**values: Optional[str]) -> Iterator[None]:
    """os.environ with `values` (None: unset) for the block, then as it was."""
    before = {name: os.environ.get(name) for name in values}
    try:
        for name, value in values.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)
        yield
    finally:
        for name, value in before.items():
            os.environ.pop(name, None) if value is None else os.environ.__setitem__(name, value)


def _tiny(workdir: Path, name: str = "encoder", seed: int = 0) -> str:
    from spacy_biosyn.encoders.tiny import make_tiny_encoder

    with contextlib.redirect_stderr(io.StringIO()):
        return make_tiny_encoder(workdir / name, seed=seed)


def _mirror(workdir: Path, content: bytes = b"") -> Path:
    """A mirror folder holding CTD_diseases.tsv.gz (by default MEDIC_ROWS)."""
    folder = workdir / "mirror"
    folder.mkdir(exist_ok=True)
    (folder / "CTD_diseases.tsv.gz").write_bytes(content or gzip.compress(ctd_diseases().encode()))
    return folder


def _settings(workdir: Path, mirror, cache: str = "cache") -> Dict[str, Optional[str]]:
    """The cache in `workdir`, `mirror` (None: none) and the default deadline."""
    return {"SPACY_BIOSYN_CACHE": str(workdir / cache), "SPACY_BIOSYN_MIRROR": None if mirror is None else str(mirror),
            "SPACY_BIOSYN_DOWNLOAD_DEADLINE": None}


def _pipe(encoder: str, **config):
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={
        "linker_name": "medic", "sparse_weight": 10.0,
        "encoder": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": encoder}, **config,
    })
    return nlp


def _linked(nlp, text: str = "Risk of breast carcinoma in carriers.", mention: str = "breast carcinoma") -> str:
    doc = nlp.make_doc(text)
    start = text.index(mention)
    doc.ents = [doc.char_span(start, start + len(mention), label="Disease")]
    return nlp(doc).ents[0].kb_id_


def _env(settings: Dict[str, Optional[str]]) -> Dict[str, str]:
    """os.environ with `settings` (None: unset)."""
    return {**{k: v for k, v in os.environ.items() if k not in settings},
            **{k: v for k, v in settings.items() if v is not None}}


def _run(args: List[str], settings: Dict[str, Optional[str]], timeout: float = 60,
         prefix: Tuple[str, ...] = ()) -> Tuple[Optional[int], str]:
    """A Python process of its own (`args` after the interpreter; `prefix`
    before it): its exit status (None: killed at `timeout`) and its output."""
    try:
        done = subprocess.run([*prefix, sys.executable, *args], env=_env(settings), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as expired:
        return None, (expired.stdout or b"").decode(errors="replace") + (expired.stderr or b"").decode(errors="replace")
    return done.returncode, done.stdout + done.stderr


def _said(code: Optional[int], output: str, timeout: float = 60) -> str:
    """What a process did, in a phrase: ran, refused in N lines, a traceback, or was killed."""
    lines = output.splitlines()
    if code is None:
        return f"waited on until killed at {timeout:.0f} s"
    starts = [i for i, line in enumerate(lines) if "Traceback (most recent call last)" in line]  # rich's too
    if starts:
        last = next((line for line in reversed(lines) if "Error" in line), lines[-1])
        return f"{len(lines) - starts[0]}-line traceback: {last.strip(' │')[:140]}"
    refusals = [line for line in lines if line.startswith("✘")]
    if code != 0:
        return f"refused in {len(refusals)} line(s): {(refusals or lines or [''])[0][:180]}"
    return "ran to the end"


def _one_line(code: Optional[int], output: str, *words: str) -> bool:
    refusals = [line for line in output.splitlines() if line.startswith("✘")]
    return (code not in (0, None) and "Traceback" not in output and len(refusals) == 1
            and all(word in refusals[0] for word in words))


class _Server:
    """An HTTP server on 127.0.0.1 whose answers are `respond(handler)` in turn (the last one repeated)."""

    def __init__(self, *respond: Callable):
        answers = list(respond)

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                (answers.pop(0) if len(answers) > 1 else answers[0])(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _answer(body: bytes, drip: float = 0.0, status: int = 200) -> Callable:
    def respond(handler):
        handler.send_response(status)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        try:
            for start in range(0, len(body), 1 if drip else len(body) or 1):
                handler.wfile.write(body[start:start + (1 if drip else len(body))])
                handler.wfile.flush()
                time.sleep(drip)
        except OSError:  # the client gave up
            pass
    return respond


@contextlib.contextmanager
def _small_disk(folder: Path, size: str) -> Iterator[bool]:
    """A tmpfs of `size` at `folder`, where one can be mounted (root); False where not."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True).returncode == 0
    # Never fill a folder that is not the small disk: that would be the machine's own.
    stat = os.statvfs(folder)
    small = stat.f_blocks * stat.f_frsize <= 16 << 20
    try:
        yield mounted and small
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def _fill(folder: Path) -> None:
    """Use up the disk of `folder`."""
    with contextlib.suppress(OSError), open(folder / "filler", "wb") as out:
        while True:
            out.write(b"\0" * (1 << 16))
            out.flush()


_NO_TMPFS = (False, "not run: a small tmpfs cannot be mounted here (needs root)")


def _case(run: Callable[[Path], Tuple[bool, str]]) -> Callable[[Path], Tuple[bool, str]]:
    """`run`, with any exception it raises said as what it did."""
    @functools.wraps(run)
    def guarded(workdir: Path) -> Tuple[bool, str]:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return run(Path(workdir))
        except Exception as error:  # the finding itself, in older versions
            where = traceback.extract_tb(error.__traceback__)[-1]
            said = f"{type(error).__name__}: {str(error)[:160]}"
            return False, f"raised {said} ({Path(where.filename).name}:{where.lineno})"
    return guarded


# The cases -------------------------------------------------------------------

@_case
def lambda_in_key(workdir: Path) -> Tuple[bool, str]:
    encoder, mirror = _tiny(workdir), _mirror(workdir)
    thresholds = {}
    for cache, weight in (("cache", 10.0), ("cache", 5.0), ("fresh", 5.0)):
        with _environment(**_settings(workdir, mirror, cache)), contextlib.redirect_stderr(io.StringIO()):
            nlp = _pipe(encoder, sparse_weight=weight)
            nlp.get_pipe("biosyn_linker").initialize()
            thresholds[cache, weight] = nlp.get_pipe("biosyn_linker").nil_threshold
    shared, own = thresholds["cache", 5.0], thresholds["fresh", 5.0]
    return shared == own, (f"lambda 5 after lambda 10 in one cache: nil_threshold {shared} (its own {own}; "
                           f"lambda 10's {thresholds['cache', 10.0]})")


@_case
def preferred_ids(workdir: Path) -> Tuple[bool, str]:
    encoder, mirror = _tiny(workdir), _mirror(workdir)
    (workdir / "corpus").mkdir()
    (workdir / "corpus" / "1.concept").write_text("1||0|13||SpecificDisease||breast cancer||114480\n")
    (workdir / "CTD_diseases.tsv").write_text(ctd_diseases())
    corpus = [str(workdir / "corpus")]
    medic_file = {"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": str(workdir / "CTD_diseases.tsv")}
    with _environment(**_settings(workdir, mirror)), contextlib.redirect_stderr(io.StringIO()):
        named = _linked(_pipe(encoder, preferred_ids_from=corpus))
        given = _linked(_pipe(encoder, linker_name=None, dictionary=medic_file, preferred_ids_from=corpus))
        plain = _linked(_pipe(encoder))
    held = named == given == "OMIM:114480" and plain == "MESH:D001943"
    return held, f"with preferred_ids_from linker_name gives {named}, dictionary= gives {given}; without, {plain}"


@_case
def weights_in_key(workdir: Path) -> Tuple[bool, str]:
    mirror, encoder = _mirror(workdir), str(workdir / "encoder")
    said, damaged = io.StringIO(), 0
    with _environment(**_settings(workdir, mirror)), contextlib.redirect_stderr(said):
        for seed in (0, 1, 0):  # two models saved in turn at one path
            _tiny(workdir, seed=seed)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _linked(_pipe(encoder))
            damaged += sum("damaged" in str(warning.message) for warning in caught)
    built = said.getvalue().count("encoding them now")
    return damaged == 0 and built == 2, f"3 uses of 2 models at one path: {built} builds, {damaged} 'damaged' warnings"


@_case
def unreadable_mirror_copy(workdir: Path) -> Tuple[bool, str]:
    encoder = _tiny(workdir)
    latin1 = ctd_diseases().replace("Bluetongue", "Bluetongue \xe9").encode("latin-1")
    mirror = _mirror(workdir, gzip.compress(latin1))
    with _environment(**_settings(workdir, mirror)), contextlib.redirect_stderr(io.StringIO()):
        try:
            _linked(_pipe(encoder))
            return False, "the latin-1 copy was read"
        except Exception as error:
            message = str(error)
        _mirror(workdir)  # mended
        try:
            after = f"links {_linked(_pipe(encoder))} once the mirror is mended"
        except Exception as error:
            after = f"still refused once the mirror is mended ({str(error)[:80]})"
    names = "the mirror's file" if str(mirror / "CTD_diseases.tsv.gz") in message else (
        "the cache's copy" if str(workdir / "cache") in message else "neither file")
    held = names == "the mirror's file" and after.startswith("links") and "\n" not in message
    return held, f"refused naming {names}; {after}"


FETCH_AGAIN = "import sys; from spacy_biosyn import cached_path; cached_path(sys.argv[1], refresh=True)"


@_case
def killed_refresh_partial(workdir: Path) -> Tuple[bool, str]:
    body = gzip.compress(ctd_diseases().encode())
    with _Server(_answer(body), _answer(body, drip=0.2)) as host:
        settings = _settings(workdir, f"http://{host}/")
        with _environment(**settings), contextlib.redirect_stderr(io.StringIO()):
            from spacy_biosyn import cached_path

            path = cached_path(MEDIC_URL)
            refresh = subprocess.Popen([sys.executable, "-c", FETCH_AGAIN, MEDIC_URL], env=_env(settings),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 20
            while not list(path.parent.glob(".*.partial")) and time.monotonic() < deadline:
                time.sleep(0.1)
            refresh.send_signal(signal.SIGKILL)
            refresh.wait()
            left = len(list(path.parent.glob(".*.partial")))
            cached_path(MEDIC_URL)  # the next use
    after = len(list(path.parent.glob(".*.partial")))
    return left == 1 and after == 0, f"a killed refresh left {left} partial file(s); {after} after the next use"


@_case
def source_mode(workdir: Path) -> Tuple[bool, str]:
    from spacy_biosyn import cached_path

    source = workdir / "published" / "CTD_diseases.tsv.gz"
    source.parent.mkdir()
    source.write_bytes(gzip.compress(ctd_diseases().encode()))
    (workdir / "mirror").mkdir()
    (workdir / "mirror" / "CTD_diseases.tsv.gz").symlink_to(source)
    seen = []
    for source_mode, umask in ((0o600, 0o022), (0o644, 0o077)):
        source.chmod(source_mode)
        before = os.umask(umask)
        try:
            with _environment(**_settings(workdir, workdir / "mirror")):
                mode = cached_path(MEDIC_URL, refresh=True).stat().st_mode & 0o777
        finally:
            os.umask(before)
        seen.append((source_mode, umask, mode))
    held = all(mode == 0o666 & ~umask for _, umask, mode in seen)
    return held, "; ".join(f"source {s:o} under umask {u:03o}: cached {m:o}" for s, u, m in seen)


def _basic_auth(user: str, password: str, body: bytes) -> Callable:
    expected = "Basic " + b64encode(f"{user}:{password}".encode()).decode()

    def respond(handler):
        if handler.headers.get("Authorization") == expected:
            return _answer(body)(handler)
        handler.send_response(401)
        handler.send_header("WWW-Authenticate", 'Basic realm="mirror"')
        handler.end_headers()
    return respond


FETCH = "import sys; from spacy_biosyn import cached_path; print(cached_path(sys.argv[1]))"


@_case
def password_in_url(workdir: Path) -> Tuple[bool, str]:
    body = gzip.compress(ctd_diseases().encode())
    with _Server(_basic_auth("curator", "s3cr3t", body)) as host:
        good = _settings(workdir, f"http://curator:s3cr3t@{host}/")
        code, output = _run(["-c", FETCH, MEDIC_URL], good)
        _, listed = _run(["-m", "spacy_biosyn", "linkers"], good)
        bad = {**good, "SPACY_BIOSYN_MIRROR": None}
        wrong, refused = _run(["-c", FETCH, f"http://curator:wr0ng@{host}/CTD_diseases.tsv.gz"], bad)
    shown = output + listed + refused
    leaked = [word for word in ("s3cr3t", "wr0ng") if word in shown]
    fetched = "fetched" if code == 0 else f"not fetched ({_said(code, output)[:100]})"
    held = code == 0 and wrong not in (0, None) and not leaked
    return held, f"with the password in the mirror's URL: {fetched}; passwords printed: {leaked or 'none'}"


def _deadline(value: str, timeout: float) -> Callable[[Path], Tuple[bool, str]]:
    """`download` from a mirror that sends a byte a second, with the
    deadline set to `value`; given up on at `timeout` (a rich traceback
    takes seconds to print)."""
    @_case
    def run(workdir: Path) -> Tuple[bool, str]:
        encoder = _tiny(workdir)
        with _Server(_answer(gzip.compress(ctd_diseases().encode()), drip=1.0)) as host:
            settings = {**_settings(workdir, f"http://{host}/"), "SPACY_BIOSYN_DOWNLOAD_DEADLINE": value}
            code, output = _run(["-m", "spacy_biosyn", "download", "medic", "--encoder", encoder], settings, timeout)
        held = _one_line(code, output, "SPACY_BIOSYN_DOWNLOAD_DEADLINE", repr(value))
        return held, _said(code, output, timeout)
    return run


def _noise_rows(n: int) -> str:
    """`n` concepts with random names: a file gzip cannot shrink much."""
    rng = random.Random(0)
    return "".join(f"MESH:D{i:06d}||{rng.randbytes(12).hex()}|{rng.randbytes(12).hex()}\n" for i in range(n))


@_case
def disk_full_download(workdir: Path) -> Tuple[bool, str]:
    encoder = _tiny(workdir)
    mirror = _mirror(workdir, gzip.compress(ctd_diseases(_noise_rows(4000)).encode()))
    with _small_disk(workdir / "disk", "64k") as mounted:
        if not mounted:
            return _NO_TMPFS
        code, output = _run(["-m", "spacy_biosyn", "download", "medic", "--encoder", encoder],
                            _settings(workdir, mirror, "disk/cache"))
        left = [p.name for p in (workdir / "disk" / "cache").rglob("*") if p.is_file() and not p.name.endswith(".lock")]
    held = _one_line(code, output, str(workdir / "disk" / "cache"), "full") and not left
    return held, f"{_said(code, output)}; files left: {len(left)}"


@_case
def disk_full_linker(workdir: Path) -> Tuple[bool, str]:
    encoder, mirror = _tiny(workdir), _mirror(workdir)
    with _small_disk(workdir / "disk", "1m") as mounted:
        if not mounted:
            return _NO_TMPFS
        settings = _settings(workdir, mirror, "disk/cache")
        _run(["-c", FETCH, MEDIC_URL], settings)  # the download fits
        _fill(workdir / "disk")
        code, output = _run(["-m", "spacy_biosyn", "download", "medic", "--encoder", encoder], settings)
        linkers = workdir / "disk" / "cache" / "linkers"
        left = [p.name for p in linkers.iterdir() if not p.name.endswith(".lock")] if linkers.is_dir() else []
    held = _one_line(code, output, str(workdir / "disk" / "cache"), "full") and not left
    return held, f"{_said(code, output)}; left in linkers/: {left or 'nothing'}"


# Another user asks a shared cache for the linker of the encoder it was built for, then of another encoder.
OTHER_USER = """
import sys, spacy
for encoder in sys.argv[1:]:
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"linker_name": "medic", "sparse_weight": 10.0,
        "encoder": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": encoder}})
    try:
        nlp.get_pipe("biosyn_linker").initialize()
        print("served")
    except Exception as error:
        print(f"{type(error).__name__}: {error}")
"""


@_case
def read_only_cache(workdir: Path) -> Tuple[bool, str]:
    first, second, mirror = _tiny(workdir), _tiny(workdir, "other-encoder", seed=1), _mirror(workdir)
    settings = _settings(workdir, mirror)
    with _environment(**settings), contextlib.redirect_stderr(io.StringIO()):
        _pipe(first).get_pipe("biosyn_linker").initialize()
    cache = workdir / "cache"
    for folder in (cache, *cache.rglob("*")):
        if folder.is_dir():
            folder.chmod(0o555)
    # root writes anywhere: without the capability to, it stands for another user
    prefix = ("setpriv", "--bounding-set=-dac_override,-dac_read_search", "--") if os.geteuid() == 0 else ()
    if prefix and shutil.which("setpriv") is None:
        return False, "not run: root without setpriv cannot be denied a write"
    try:
        code, output = _run(["-c", OTHER_USER, first, second], settings, prefix=prefix)
    finally:
        for folder in (cache, *cache.rglob("*")):
            if folder.is_dir():
                folder.chmod(0o755)
    if code != 0:
        return False, _said(code, output)
    served, new = output.strip().splitlines()[-2:]
    held = served == "served" and new.startswith("CacheError") and "SPACY_BIOSYN_CACHE" in new
    return held, f"the cached encoder's linker: {served[:60]}; a new encoder's: {new[:160]}"


@_case
def malformed_record(workdir: Path) -> Tuple[bool, str]:
    for number, content in enumerate(("{not json", "[1]", '{"name": "medic"}', '{"name": "medic", "encoder": "x"}')):
        record = workdir / "cache" / "linkers" / f"medic-{number:020d}" / "named.json"
        record.parent.mkdir(parents=True)
        record.write_text(content)
    code, output = _run(["-m", "spacy_biosyn", "linkers"], _settings(workdir, None))
    return code == 0, "listed, 4 damaged records passed over" if code == 0 else _said(code, output)


@_case
def cache_is_a_file(workdir: Path) -> Tuple[bool, str]:
    encoder, mirror = _tiny(workdir), _mirror(workdir)
    (workdir / "cache").write_text("not a folder")
    code, output = _run(["-m", "spacy_biosyn", "download", "medic", "--encoder", encoder], _settings(workdir, mirror))
    return _one_line(code, output, str(workdir / "cache"), "is a file"), _said(code, output)


CASES: List[Tuple[str, Callable[[Path], Tuple[bool, str]]]] = [
    ("cache key lacks lambda", lambda_in_key),
    ("preferred_ids_from ignored by linker_name, not in the key", preferred_ids),
    ("cache key names the encoder's path, not its weights", weights_in_key),
    ("an unreadable mirror copy stays cached", unreadable_mirror_copy),
    ("a killed --refresh leaves its .partial", killed_refresh_partial),
    ("a cached copy takes its source's mode", source_mode),
    ("a password in a URL is printed and never sent", password_in_url),
    ("SPACY_BIOSYN_DOWNLOAD_DEADLINE=nan turns the deadline off", _deadline("nan", timeout=25)),
    ("SPACY_BIOSYN_DOWNLOAD_DEADLINE=abc gives a traceback", _deadline("abc", timeout=60)),
    ("disk full while downloading", disk_full_download),
    ("disk full while the linker is written", disk_full_linker),
    ("another user's read-only cache, a new encoder", read_only_cache),
    ("linkers on a malformed named.json", malformed_record),
    ("SPACY_BIOSYN_CACHE is a file", cache_is_a_file),
]
