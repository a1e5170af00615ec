"""Fuzz a saved pipeline's files: each case damages one file of a small
saved pipeline, reseals the linker's manifest or not, then loads it and
links in a child process bounded in time and memory. Every outcome must be
a one-line refusal by spacy-biosyn naming a file of the pipeline, or the
links of the undamaged pipeline.

    python -m benchmarks.stress.fuzz_saved [--cases 3000] [--timeout 60] [--memory-gib 4] [--spacy-files]
    python -m benchmarks.stress.fuzz_saved --replay biosyn_linker/index/vectors.npy:12 [--keep DIR]

The pipeline: fuzz_cases' dictionary, the tiny random encoder, and a NIL
model learned from an annotated corpus of the dictionary's names (so that
nil_model.json and annotated_mentions.json are saved too). Case n damages
file n mod F (the F files of biosyn_linker/; with --spacy-files spaCy's own
files as well) with seed n // F: its key, FILE:SEED, replays it. The damage
is one of: bytes flipped, the file cut short or emptied, another file's
bytes in its place (one of the same kind first), and by format a JSON value
of another type or number (negative, huge, NaN, "NaN"), nesting too deep,
an .npy/.npz array of another dtype or shape or with negative or huge
entries, an .npy header that claims a huge shape, a safetensors header's
length, dtype, shape or offsets, a text file's lines. Four cases in five
reseal the manifest (write_manifest), so that the checks behind it meet the
damage; the others, and damage to the manifest itself, it must refuse.

Outcomes: "refused" (a BiosynError in one line naming a file of the
pipeline), "same links", "other links (values changed)" (a resealed file
whose values changed but not its layout: an edit that no check can tell
from a real one), and the findings: "different links", "unclear refusal"
(a BiosynError not naming a file of the pipeline, or of several lines),
"traceback" (any other exception), "signal", "hang" (over --timeout
seconds), "memory" (MemoryError under an address space of --memory-gib GiB
more than the loaded process's). An unsealed damage that is not refused is
a finding too. Each case runs in a child forked from one process that
loaded the pipeline once (its imports done, one thread, so forking is
safe): a child that crashes or hangs takes nothing with it.
"""
import argparse
import io
import json
import math
import os
import random
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from benchmarks.common import REPO, print_table, progress
from benchmarks.stress.fuzz_cases import DICTIONARY, Context, Worker

LINKER = "biosyn_linker"
MANIFEST = f"{LINKER}/manifest.json"
MENTIONS = ["breast cancer", "Breast Neoplasms", "ovarian cancers", "type 2 diabetes", "huntington's disease",
            "parkinson", "CMC", "cystic mastitis", "xyzzy syndrome", "a"]
TEXT = "Carriers develop breast cancer, ovarian cancer and type 2 diabetes."
ENTITIES = ("breast cancer", "ovarian cancer", "type 2 diabetes")
# Six mentions of each dictionary name in the annotated corpus: 48, enough to learn a NIL model from.
SUFFIXES = ("", "s", " disorder", " disease", " syndrome", " type")
OUTCOMES = ("refused", "same links", "other links (values changed)", "different links", "unclear refusal",
            "traceback", "signal", "hang", "memory")
FINDINGS = OUTCOMES[3:]
RESEALED = 0.8


class Case(NamedTuple):
    name: str  # the damaged file, relative to the pipeline
    seed: int
    folder: Path  # the damaged copy
    what: str  # the damage
    sealed: bool  # the manifest written again over it
    values_only: bool  # the file's layout (keys, types, dtypes, shapes) unchanged

    @property
    def key(self) -> str:
        return f"{self.name}:{self.seed}"


# --- the pipeline, its links -------------------------------------------------------------------------------------


def build(folder: Path) -> Path:
    """The saved pipeline the cases damage, in `folder`/pipeline."""
    from spacy_biosyn.encoders.tiny import make_tiny_encoder

    corpus = folder / "corpus"
    corpus.mkdir()
    lines = []
    for line in DICTIONARY.splitlines():
        ids, name = line.rsplit("||", 1)
        lines += [f"1||0|1||Disease||{name}{suffix}||{ids.split('|')[-1]}" for suffix in SUFFIXES]
    (corpus / "1.concept").write_text("\n".join(lines) + "\n")
    context = Context(make_tiny_encoder(folder / "encoder"), folder)
    context.make_nlp(preferred_ids_from=[str(corpus)]).to_disk(folder / "pipeline")
    if not (folder / "pipeline" / LINKER / "nil_model.json").is_file():
        raise RuntimeError("the fuzzed pipeline saved no NIL model: the annotated corpus is too small")
    return folder / "pipeline"


def _row(links) -> Optional[list]:
    return None if links is None else [links.cui, links.nil_reason, [[c, float(s)] for c, s in links.kb_ents]]


def load_and_link(folder: str) -> list:
    """Load the pipeline and link MENTIONS with its engine, and TEXT's
    ENTITIES through the pipeline: [cui, nil_reason, kb_ents] of each."""
    import spacy

    nlp = spacy.load(folder)
    found = [_row(links) for links in nlp.get_pipe(LINKER).engine.link(MENTIONS)]
    doc = nlp.make_doc(TEXT)
    doc.ents = [doc.char_span(TEXT.index(m), TEXT.index(m) + len(m), label="Disease") for m in ENTITIES]
    return found + [[e._.cui, None, [[c, float(s)] for c, s in e._.kb_ents]] for e in nlp(doc).ents]


def same_links(found: list, reference: list) -> bool:
    """The same IDs, NIL reasons and, to 1e-4, scores."""
    def close(a, b) -> bool:
        if a is None or b is None:
            return a is b
        return a[:2] == b[:2] and len(a[2]) == len(b[2]) and all(
            x[0] == y[0] and abs(x[1] - y[1]) <= 1e-4 for x, y in zip(a[2], b[2]))
    return len(found) == len(reference) and all(close(a, b) for a, b in zip(found, reference))


# --- damage --------------------------------------------------------------------------------------------------------


def kind_of(name: str, data: bytes) -> str:
    for suffix in ("npy", "npz", "safetensors"):
        if name.endswith("." + suffix):
            return suffix
    try:
        json.loads(data)
        return "json"
    except ValueError:
        pass
    try:
        data.decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "binary"


def _json_layout(value):
    if isinstance(value, dict):
        return {k: _json_layout(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_layout(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "non-finite"
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def layout(data: bytes, kind: str):
    """What a file holds but for its values: JSON's keys and types, arrays'
    dtypes and shapes, a text's fields per line; None if unreadable."""
    try:
        if kind == "json":
            return _json_layout(json.loads(data))
        if kind == "npy":
            array = np.load(io.BytesIO(data), allow_pickle=False)
            return array.dtype.str, array.shape
        if kind == "npz":
            with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
                return sorted((k, arrays[k].dtype.str, arrays[k].shape) for k in arrays.files)
        if kind == "safetensors":
            n = struct.unpack("<Q", data[:8])[0]
            return json.loads(data[8:8 + n]), len(data)
        if kind == "text":
            return [line.count("|") for line in data.decode("utf-8").splitlines()]
    except Exception:  # noqa: BLE001: damage that leaves it unreadable changes its layout
        return None
    return None


def flip(rng: random.Random, data: bytes) -> Tuple[bytes, str]:
    out = bytearray(data or b"\0")
    n = rng.randint(1, 8)
    for _ in range(n):
        out[rng.randrange(len(out))] ^= rng.randint(1, 255)
    return bytes(out), f"{n} bytes flipped"


def json_value(rng: random.Random, data: bytes) -> Tuple[bytes, str]:
    """One value, found by a random walk from the root, of another type or
    number, or removed; or nesting too deep for a parser."""
    if rng.random() < 0.05:
        depth = rng.choice([1_000, 100_000])
        return b"[" * depth + b"]" * depth, f"lists nested {depth} deep"
    root = [json.loads(data)]
    parent, key, path = root, 0, "$"
    while isinstance(parent[key], (dict, list)) and parent[key] and rng.random() < 0.8:
        node = parent[key]
        parent, key = node, rng.choice(list(node) if isinstance(node, dict) else range(len(node)))
        path += f"[{key!r}]"
    value, roll = parent[key], rng.random()
    if roll < 0.1 and parent is not root:
        del parent[key]
        return json.dumps(root[0]).encode(), f"{path} removed"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and roll < 0.6:
        new = rng.choice([-1, -value, value * 1000, value + 1, 0, 0.5, 10**18, 2**64, 1e308, -1e308])
    else:
        new = rng.choice(["NaN", "x", "", None, True, [], {}, float("nan"), float("inf"), str(value)[:20], [value]])
    parent[key] = new
    return json.dumps(root[0]).encode(), f"{path} = {json.dumps(new)[:30]}"


def array_edit(rng: random.Random, array: np.ndarray) -> Tuple[np.ndarray, str]:
    """The array of another dtype or shape, or with an odd entry."""
    roll = rng.random()
    if roll < 0.3:
        dtype = rng.choice([np.float64, np.float16, np.int64, np.int8, np.uint8, np.complex64, bool, object, "<U3"])
        return array.astype(dtype), f"dtype {np.dtype(dtype)}"
    if roll < 0.55:
        edits = {"a row fewer": lambda a: a[:-1], "a row more": lambda a: np.concatenate([a, a[:1]]),
                 "transposed": lambda a: a.T, "flattened": lambda a: a.ravel(), "one more axis": lambda a: a[None],
                 "no rows": lambda a: a[:0], "a scalar": lambda a: a.reshape(-1)[0]}
        name = rng.choice(sorted(edits))
        return np.asarray(edits[name](array)), name
    out = array.copy()
    if out.dtype.kind == "f":
        value = rng.choice([math.nan, math.inf, -math.inf, 1e30, -1e30, -1.0])
    elif out.dtype.kind in "iu":
        info = np.iinfo(out.dtype)
        value = rng.choice([info.min, info.max, -1, out.size * 1000, 10**12])
        value = int(np.clip(value, info.min, info.max))
    elif out.dtype.kind == "b":
        value = True
    else:
        value = rng.choice(["", "garbage", "csr"])
    flat = out.reshape(-1)
    if not flat.size:
        raise ValueError("no entry to change")
    spots = rng.sample(range(flat.size), min(flat.size, rng.choice([1, 1, 3, flat.size])))
    flat[spots] = value
    return out, f"{len(spots)} entries = {value!r}"


def npy(rng: random.Random, data: bytes) -> Tuple[bytes, str]:
    array = np.load(io.BytesIO(data), allow_pickle=False)
    out = io.BytesIO()
    if rng.random() < 0.2:  # a header claiming far more than the file holds
        rows = rng.choice([10**6, 10**9, 2**40])
        header = {"descr": np.lib.format.dtype_to_descr(array.dtype), "fortran_order": False,
                  "shape": (rows, *array.shape[1:])}
        np.lib.format.write_array_header_1_0(out, header)
        out.write(array.tobytes())
        return out.getvalue(), f"header claims {rows} rows"
    edited, what = array_edit(rng, array)
    np.save(out, edited, allow_pickle=True)
    return out.getvalue(), what


def npz(rng: random.Random, data: bytes) -> Tuple[bytes, str]:
    import zipfile

    with np.load(io.BytesIO(data), allow_pickle=False) as saved:
        arrays = {k: saved[k] for k in saved.files}
    key, roll = rng.choice(sorted(arrays)), rng.random()
    if roll < 0.15:
        del arrays[key]
        what = f"{key} removed"
    elif roll < 0.2:
        arrays["extra"] = np.arange(3)
        what = "an array more"
    else:
        arrays[key], what = array_edit(rng, arrays[key])
        what = f"{key}: {what}"
    compressed = zipfile.ZipFile(io.BytesIO(data)).infolist()[0].compress_type != zipfile.ZIP_STORED
    out = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(out, **arrays)
    return out.getvalue(), what


def safetensors(rng: random.Random, data: bytes) -> Tuple[bytes, str]:
    n = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8:8 + n]), data[8 + n:]
    if rng.random() < 0.3:
        length = rng.choice([len(data), n + 1, n - 1, 2**40, 2**64 - 1])
        return struct.pack("<Q", length) + data[8:], f"header length {length}"
    name = rng.choice(sorted(k for k in header if k != "__metadata__"))
    tensor, field = header[name], rng.choice(["dtype", "shape", "data_offsets"])
    shape, (start, end) = tensor["shape"], tensor["data_offsets"]
    tensor[field] = {
        "dtype": rng.choice(["F16", "F64", "I64", "BOOL", "U8", "X"]),
        "shape": rng.choice([[*shape, 2], shape[:-1], [(shape or [1])[0] * 1000, *shape[1:]], [-1, *shape[1:]]]),
        "data_offsets": rng.choice([[start, end + 4], [start, end + 10**12], [end, start], [start, end - 4]]),
    }[field]
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + body, f"{name}.{field} = {json.dumps(tensor[field])}"


def text_lines(rng: random.Random, data: bytes) -> Tuple[bytes, str]:
    lines = data.decode("utf-8").split("\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    what = rng.choice(["removed", "doubled", "swapped", "inserted"])
    if what == "removed":
        del lines[i]
    elif what == "doubled":
        lines.insert(i, lines[i])
    elif what == "swapped":
        lines[i], lines[j] = lines[j], lines[i]
    else:
        lines.insert(i, rng.choice(["", "|", "||", "D1||", "||name", "\x00", "a|b|c||d", "x" * 100_000, "\ufeff"]))
    return "\n".join(lines).encode("utf-8"), f"line {i} {what}"


FORMATS = {"json": json_value, "npy": npy, "npz": npz, "safetensors": safetensors, "text": text_lines}


def damage(rng: random.Random, name: str, saved: Dict[str, bytes]) -> Tuple[bytes, str]:
    """New bytes for `name`, unlike its saved ones, and what was done."""
    data, kind = saved[name], kind_of(name, saved[name])
    ways = ["flip"] * 3 + ["truncate"] * 2 + ["empty", "swap", "swap"] + [kind] * (4 * (kind in FORMATS))
    for _ in range(20):
        way = rng.choice(ways)
        try:
            if way == "flip":
                new, what = flip(rng, data)
            elif way == "truncate":
                cut = rng.randrange(len(data) or 1)
                new, what = data[:cut], f"cut to {cut} of {len(data)} bytes"
            elif way == "empty":
                new, what = b"", "emptied"
            elif way == "swap":
                others = [n for n in sorted(saved) if saved[n] != data]
                alike = [n for n in others if kind_of(n, saved[n]) == kind]
                other = rng.choice(alike if alike and rng.random() < 0.8 else others)
                new, what = saved[other], f"the bytes of {other}"
            else:
                new, what = FORMATS[way](rng, data)
        except Exception:  # noqa: BLE001: an edit this file's content does not allow; draw another
            continue
        if new != data:
            return new, what
    return data + b"\0", "a NUL byte appended"


def make_case(pipeline: Path, saved: Dict[str, bytes], name: str, seed: int, folder: Path) -> Case:
    from spacy_biosyn.files.manifest import write_manifest

    rng = random.Random(f"{name}:{seed}")
    shutil.copytree(pipeline, folder)
    new, what = damage(rng, name, saved)
    (folder / name).write_bytes(new)
    sealed = name.startswith(LINKER + "/") and name != MANIFEST and rng.random() < RESEALED
    if sealed:
        write_manifest(folder / LINKER)
    kind = kind_of(name, saved[name])
    before = layout(saved[name], kind)
    return Case(name, seed, folder, what, sealed, before is not None and before == layout(new, kind))


# --- the forked children -------------------------------------------------------------------------------------------


def _address_space() -> int:
    return int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _child(folder: str, bound: int, fd: int) -> None:
    """Load and link in a forked child; what came of it to `fd`."""
    import resource

    from spacy_biosyn.errors import BiosynError

    try:
        limit = _address_space() + bound
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        result = {"links": load_and_link(folder)}
    except MemoryError as error:
        result = {"memory": f"{type(error).__name__}: {error}"[:300]}
    except BaseException as error:  # noqa: BLE001: what fails is the outcome
        frames = traceback.extract_tb(error.__traceback__)
        result = {"error": type(error).__name__, "message": str(error)[:2000], "biosyn": isinstance(error, BiosynError),
                  "where": f"{Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else "",
                  "traceback": traceback.format_exc()[-4000:]}
    data = json.dumps(result).encode()
    while data:
        data = data[os.write(fd, data):]
    os._exit(0)


def run_forked(folder: str, bound: int, timeout_s: float) -> dict:
    """Load and link `folder` in a forked child: its result, or that it hung
    or died (signal, exit status), and its peak memory."""
    read_end, write_end = os.pipe()
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        _child(folder, bound, write_end)
    os.close(write_end)
    chunks, hung = [], False
    while True:
        ready, _, _ = select.select([read_end], [], [], max(0.0, start + timeout_s - time.perf_counter()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            hung = True
            break
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    _, status, usage = os.wait4(pid, 0)
    try:
        result = {} if hung else json.loads(b"".join(chunks))
    except ValueError:
        result = {}
    return {**result, "hung": hung, "seconds": time.perf_counter() - start, "max_rss_mib": usage.ru_maxrss // 1024,
            "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
            "exit": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None}


def serve(reference: str, fd: int, bound: int, timeout_s: float) -> None:
    """The process children fork from: loads and links `reference` once
    (its links, the first line to `fd`), then a child per folder on stdin."""
    try:
        import torch

        torch.set_num_threads(1)  # no thread pool for a fork to inherit
    except ImportError:
        pass
    with os.fdopen(fd, "w") as results:
        results.write(json.dumps(load_and_link(reference)) + "\n")
        results.flush()
        for line in sys.stdin:
            folder, _ = json.loads(line)
            results.write(json.dumps(run_forked(folder, bound, timeout_s)) + "\n")
            results.flush()


class Forker(Worker):
    """fuzz_cases' Worker, whose process is `serve`: cases go to it as
    [folder, 0] and come back as what came of the child that ran them; a
    new one starts if it dies."""

    def __init__(self, reference: Path, log: Path, bound: int, timeout_s: float, quiet: bool = True):
        super().__init__(str(reference), timeout_s + 60)  # `serve` itself times the children
        self.args = [str(reference), str(bound), str(timeout_s)]
        self.log, self.quiet = log, quiet
        self._start()

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        with self.log.open("a") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "benchmarks.stress.fuzz_saved", "--serve", *self.args, str(write_end)],
                cwd=REPO, stdin=subprocess.PIPE, stdout=log if self.quiet else None, stderr=log if self.quiet else None,
                pass_fds=(write_end,), text=True, env=env)
        os.close(write_end)
        self.results = os.fdopen(read_end)
        ready, _, _ = select.select([self.results], [], [], 300)
        line = self.results.readline() if ready else ""
        if not line:
            raise RuntimeError(f"the pipeline does not load and link undamaged:\n{self.log.read_text()[-3000:]}")
        self.reference = json.loads(line)

    def run(self, folder: Path) -> dict:
        try:
            result = super().run(str(folder), 0)
        except BrokenPipeError:
            self.close()
            result = "crash"
        return result if isinstance(result, dict) else {"hung": True, "served_by": f"the forking process: {result}"}


# --- judging -------------------------------------------------------------------------------------------------------


def judge(case: Case, result: dict, reference: list, timeout_s: float) -> Tuple[str, str]:
    """The outcome of a case, and what to say of it."""
    if result.get("hung"):
        return "hang", result.get("served_by", f"killed after {timeout_s:.0f} s")
    if result.get("signal"):
        return "signal", f"signal {result['signal']} ({signal.Signals(result['signal']).name})"
    if "memory" in result:
        return "memory", f"{result['memory']} (peak {result['max_rss_mib']} MiB)"
    if "links" in result:
        if same_links(result["links"], reference):
            return "same links", ""
        changed = [MENTIONS[i] if i < len(MENTIONS) else ENTITIES[i - len(MENTIONS)]
                   for i, (a, b) in enumerate(zip(result["links"], reference)) if not same_links([a], [b])]
        return "other links (values changed)" if case.sealed and case.values_only else "different links", \
            f"links of {changed} differ"
    if "error" in result:
        message = result["message"].strip()
        said = f"{result['error']}: {' '.join(message[:300].split())}"
        if result["biosyn"]:
            clear = "\n" not in message and str(case.folder) in message
            return ("refused" if clear else "unclear refusal"), said
        return "traceback", f"{said} (at {result['where']})"
    return "traceback", f"exit status {result.get('exit')} without a result"


def run(args: argparse.Namespace, folder: Path) -> None:
    os.environ["SPACY_BIOSYN_CACHE"] = str(folder / "cache")  # the manifests checked, here only
    pipeline = build(folder)
    saved = {p.relative_to(pipeline).as_posix(): p.read_bytes() for p in sorted(pipeline.rglob("*")) if p.is_file()}
    files = [name for name in saved if args.spacy_files or name.startswith(LINKER + "/")]
    bound = int(args.memory_gib * 2**30)
    forker = Forker(pipeline, folder / "serve.log", bound, args.timeout, quiet=not args.replay)
    if args.replay:
        name, seed = args.replay.rsplit(":", 1)
        into = (args.keep or folder) / f"case-{name.replace('/', '-')}-{seed}"
        case = make_case(pipeline, saved, name, int(seed), into)
        result = forker.run(case.folder)
        forker.close()
        outcome, detail = judge(case, result, forker.reference, args.timeout)
        print(f"{case.key}: {case.what}{', resealed' if case.sealed else ''}\n{outcome}: {detail}"
              f"\n{result.get('seconds', 0):.2f} s, peak {result.get('max_rss_mib')} MiB")
        if "traceback" in result and outcome != "refused":
            print(result["traceback"])
        return
    control = forker.run(pipeline)
    if not same_links(control.get("links", []), forker.reference):
        raise RuntimeError(f"a forked child does not link the undamaged pipeline as its parent: {control}")
    counts: Dict[str, Counter] = defaultdict(Counter)
    findings: List[str] = []
    start = time.perf_counter()
    for n in range(args.cases):
        case = make_case(pipeline, saved, files[n % len(files)], n // len(files), folder / f"case-{n}")
        outcome, detail = judge(case, forker.run(case.folder), forker.reference, args.timeout)
        counts[case.name][outcome] += 1
        accepted = not case.sealed and case.name.startswith(LINKER + "/") and outcome != "refused"
        if outcome in FINDINGS or accepted:
            label = f"{outcome}, not resealed" if accepted else outcome
            label += "" if case.name.startswith(LINKER + "/") else " (a file of spaCy's)"
            findings.append(f"{label}: {case.key} ({case.what}{', resealed' if case.sealed else ''}): {detail}")
        shutil.rmtree(case.folder)
        if (n + 1) % 100 == 0:
            progress(f"{n + 1} cases, {time.perf_counter() - start:.0f} s, {len(findings)} findings")
    forker.close()
    seconds = time.perf_counter() - start
    rows = [(name, sum(counts[name].values()), *(counts[name][o] for o in OUTCOMES)) for name in files]
    rows.append(("all", *(sum(row[i] for row in rows) for i in range(1, 2 + len(OUTCOMES)))))
    print(f"\n{args.cases} cases in {seconds:.0f} s ({seconds / max(args.cases, 1):.2f} s a case); "
          f"timeout {args.timeout:.0f} s, memory bound {args.memory_gib} GiB")
    print_table(("file", "cases", *OUTCOMES), rows)
    if findings:
        print(f"\n{len(findings)} findings (replay with --replay FILE:SEED):\n  " + "\n  ".join(findings[:50]))


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:
        reference, bound, timeout_s, fd = sys.argv[2:6]
        serve(reference, int(fd), int(bound), float(timeout_s))
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", type=int, default=3000)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds a case may take before it is a hang")
    p.add_argument("--memory-gib", type=float, default=4.0, help="address space a case may add to the loaded process's")
    p.add_argument("--spacy-files", action="store_true", help="damage spaCy's files of the pipeline too")
    p.add_argument("--replay", help="FILE:SEED, a case to run again, with its traceback")
    p.add_argument("--keep", type=Path, help="with --replay: the folder to leave the damaged pipeline in")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp))


if __name__ == "__main__":
    main()
