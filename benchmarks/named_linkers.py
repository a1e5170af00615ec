"""Named linkers (`linker_name`): a cold build, then warm starts from the
cache, each in a fresh process, with the time and resident memory of each.

    python -m benchmarks.named_linkers [--workdir benchmarks/.work/named] [--runs 3] [--names 4000000] [--warm-only]
        [--serving-python PYTHON]

MEDIC size: `medic` built from a `CTD_diseases.tsv.gz` written in CTD's own
format (its `# Fields:` header and nine tab-separated columns) from the
MEDIC at hand (BioSyn's `resources/medic_06Jul2012.txt`), served from a
mirror folder into an empty cache. Cold: a fresh process adds the pipe and
links one sentence, which fetches, reads, encodes, indexes and caches.
Warm: fresh processes do the same from the cache with the mirror gone and
encoding and requests made to fail, with the PyTorch encoder and with the
same model in ONNX Runtime (whose export is cached too).

UMLS size (`--names`, 0 to skip): a scispaCy KB file
(`umls_2022_ab_cat0129.jsonl`) of that many names, MEDIC's and variants of
them, built cold and loaded warm as above with the default index (faiss's
IVF4096,SQ8 from a million names on). Encoding millions of names with
MiniLM takes hours here, so this build gives each name a hashed 384-wide
vector in place of MiniLM's (the model is still loaded): the row's build
time is everything but encoding, and the encoding time beside it is the
names' count over the names/s of the whole MEDIC-size cold build (fetch,
read, encode, index), so it overstates encoding a little.

--warm-only measures the default encoder's MEDIC-size warm starts again
from the workdir's cache, built by an earlier run: warm starts are a few
seconds, and another job on the machine moves them.

--serving-python: the Python of an install without spacy-biosyn's torch
extra (a server's; with faiss, as here, or the cache's key differs). Its
warm starts load a MEDIC linker the rows above built, with the default
settings and the ONNX graph from the folder the cache keeps it in, as a
server names a saved encoder folder.
"""
import functools
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import time
from typing import List, Tuple
from pathlib import Path

from benchmarks.common import REPO, parser, print_table, progress

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
# None: the component's default encoder (MiniLM in ONNX Runtime). It comes
# first: its rebuild empties the cache's linkers, which the other rows build after.
DEFAULT = "default (ONNX Runtime, names_precision auto)"
ENCODERS = {
    DEFAULT: None,
    "PyTorch": {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": MINILM},
    "ONNX Runtime, names in fp32": {"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": MINILM, "names_precision": "fp32"},
}
TEXT = "Germline mutations of BRCA1 predispose to breast cancer."
MENTION = "breast cancer"

# One process: add the named linker, link one sentence, report as JSON.
# With "refuse", encoding names and making requests raise; with "hashed",
# every text gets a hashed vector instead of the encoder's.
PROCESS = """
import json, sys, time, urllib.request
start = time.perf_counter()
import spacy
imported = time.perf_counter()
from spacy_biosyn.search.name_ranker import NameRanker
from benchmarks.common import memory_gib
from benchmarks.named_linkers import hashed_vectors
modes, config = sys.argv[1].split(","), json.loads(sys.argv[2])
if "refuse" in modes:
    def refuse(*args, **kwargs):
        raise AssertionError("a warm start encoded names or made a request")
    NameRanker.build = refuse
    urllib.request.urlopen = refuse
if "hashed" in modes:
    from spacy_biosyn.encoders.transformer import TransformerEncoder
    from spacy_biosyn.encoders.vector_cache import EncodedNames
    TransformerEncoder.encode = lambda self, texts: hashed_vectors(texts, self.dim)
    EncodedNames.store = None  # no store of stand-ins
stages, peaks, resident = {}, {}, {}
def timed(owner, attribute, stage):
    inner = getattr(owner, attribute)
    def wrapper(*args, **kwargs):
        begun = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            stages[stage] = stages.get(stage, 0.0) + time.perf_counter() - begun
            peaks[stage] = memory_gib("VmHWM")  # the process's peak so far, as the stage ends
            resident[stage] = memory_gib("VmRSS")
    setattr(owner, attribute, wrapper)
import spacy_biosyn.named.cache as named_cache, spacy_biosyn.search.name_ranker as ranker
from spacy_biosyn.encoders.onnx import OnnxEncoder
from spacy_biosyn.search.sized_index import SizedIndex
from spacy_biosyn.search.tfidf import SparseEncoder
for owner, attribute, stage in [
    (named_cache, "cached_path", "fetch"), (named_cache, "read_vocabulary_file", "read the vocabulary"),
    (SparseEncoder, "fit_transform", "tf-idf"),
    # The index is filled as the names are encoded: one stage.
    (SizedIndex, "build", "encode the names and index them"), (ranker.NameRanker, "to_disk", "save to the cache"),
    (ranker.NameRanker, "from_disk", "load the linker (and its 8-name probe)"),
    (OnnxEncoder, "load", "load the encoder"),
]:
    timed(owner, attribute, stage)
if "Transformer" in (config.get("encoder") or {}).get("@misc", ""):
    from spacy_biosyn.encoders.transformer import TransformerEncoder
    timed(TransformerEncoder, "load", "load the encoder")
begun = time.perf_counter()
nlp = spacy.blank("en")
stages["spacy.blank (every installed plugin's factories)"] = time.perf_counter() - begun
nlp.add_pipe("biosyn_linker", config=config)
added = time.perf_counter()
doc = nlp.make_doc(sys.argv[3])
start_char = sys.argv[3].index(sys.argv[4])
doc.ents = [doc.char_span(start_char, start_char + len(sys.argv[4]), label="Disease")]
linked = nlp(doc).ents[0]
done = time.perf_counter()
stages["first link"] = done - added
print(json.dumps({"import_s": imported - start, "link_s": done - imported, "cui": linked._.cui, "stages": stages, "peaks": peaks, "resident": resident,
                  "names": len(nlp.get_pipe("biosyn_linker").engine.vocabulary().dictionary), "rss_gib": memory_gib("VmRSS"), "peak_gib": memory_gib("VmHWM")}))
"""


def hashed_vectors(names, dim: int):
    """Unit vectors, one per name, from a hash of the name: a stand-in for an
    encoder's that costs next to nothing and is the same in every process
    (the sum of three rows, chosen by the hash, of one fixed random table)."""
    import hashlib

    import numpy as np

    table = _hash_table(dim)
    vectors = np.empty((len(names), dim), dtype=np.float32)
    for start in range(0, len(names), 100_000):  # chunks: a gather of 4M rows holds 6 GiB
        hashes = np.array([int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=6).digest(), "little")
                           for name in names[start:start + 100_000]], dtype=np.int64)
        chunk = table[hashes & 0xFFFF] + table[(hashes >> 16) & 0xFFFF] + table[(hashes >> 32) & 0xFFFF]
        vectors[start:start + len(chunk)] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    return vectors


@functools.lru_cache(maxsize=1)
def _hash_table(dim: int):
    import numpy as np

    # Made once: a build asks for its names' vectors a chunk at a time.
    return np.random.default_rng(0).standard_normal((1 << 16, dim), dtype=np.float32)


def run(mode: str, config: dict, env: dict, mention: str = MENTION, text: str = TEXT, python: str = sys.executable) -> dict:
    start = time.perf_counter()
    done = subprocess.run([python, "-c", PROCESS, mode, json.dumps(config), text, mention], cwd=REPO,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{mode} run failed:\n{done.stderr[-3000:]}")
    return {**json.loads(done.stdout.splitlines()[-1]), "wall_s": time.perf_counter() - start}


def warm_cells(warm: List[dict]) -> Tuple[dict, List[str]]:
    """The median of warm runs, and the table's cells of them: time (median,
    min-max), import spacy, RSS / peak, the ID linked."""
    median = sorted(warm, key=lambda r: r["link_s"])[len(warm) // 2]
    times = [r["link_s"] for r in warm]
    return median, [f"{median['link_s']:.2f} ({min(times):.2f}-{max(times):.2f})", f"{median['import_s']:.1f}",
                    f"{median['rss_gib']:.2f} / {median['peak_gib']:.2f}", median["cui"]]


def write_ctd_diseases(medic: Path, target: Path) -> None:
    """MEDIC (`IDs||Name|Synonym|...`) as CTD publishes it: CTD_diseases.tsv.gz."""
    rows = ["# Comparative Toxicogenomics Database (CTD) - http://ctdbase.org/", "# Fields:",
            "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings",
            "#"]
    for line in medic.read_text(encoding="utf-8").splitlines():
        ids, _, names = line.partition("||")
        ids, names = ids.split("|"), names.split("|")
        prefixed = ["OMIM:" + i if i[0].isdigit() else "MESH:" + i for i in ids]
        prefixed.sort(key=lambda i: not i.startswith("MESH:"))
        rows.append("\t".join([names[0], prefixed[0], "|".join(prefixed[1:]), "", "", "", "", "|".join(names[1:]), ""]))
    with gzip.open(target, "wt", encoding="utf-8") as f:
        f.write("\n".join(rows) + "\n")


def write_scispacy_kb(medic: Path, target: Path, n_names: int, seed: int = 0) -> int:
    """A scispaCy KB file of `n_names` names: MEDIC's concepts, then concepts
    of variants of their names (a word added from another name), four names each."""
    rng = random.Random(seed)
    concepts = []
    for line in medic.read_text(encoding="utf-8").splitlines():
        ids, _, names = line.partition("||")
        concepts.append(names.split("|"))
    words = [word for names in concepts for name in names for word in name.split()]
    written = 0
    with target.open("w", encoding="utf-8") as f:
        for i, names in enumerate(concepts):
            f.write(json.dumps({"concept_id": f"C{i:07d}", "canonical_name": names[0], "aliases": names[1:],
                                "types": ["T047"]}) + "\n")
            written += len(names)
        i = len(concepts)
        while written < n_names:
            base = rng.choice(concepts)[0]
            names = [f"{base} {rng.choice(words)}" for _ in range(4)]
            f.write(json.dumps({"concept_id": f"C{i:07d}", "canonical_name": names[0], "aliases": names[1:],
                                "types": ["T047"]}) + "\n")
            written, i = written + 4, i + 1
    return written


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / ".work" / "named")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--names", type=int, default=4_000_000)
    p.add_argument("--warm-only", action="store_true",
                   help="warm starts of MEDIC with the default encoder, from the workdir's cache alone")
    p.add_argument("--serving-python", help="the Python of an install without the torch extra: warm starts there too")
    args = p.parse_args()
    medic = args.data / "resources" / "medic_06Jul2012.txt"
    mirror, cache = args.workdir / "mirror", args.workdir / "cache"
    if not args.warm_only:
        shutil.rmtree(args.workdir, ignore_errors=True)
        mirror.mkdir(parents=True)
        write_ctd_diseases(medic, mirror / "CTD_diseases.tsv.gz")
    concepts = len(medic.read_text(encoding="utf-8").splitlines())
    base = {key: value for key, value in os.environ.items() if key != "SPACY_BIOSYN_MIRROR"}
    cold_env = {**base, "SPACY_BIOSYN_CACHE": str(cache), "SPACY_BIOSYN_MIRROR": str(mirror)}
    warm_env = {**base, "SPACY_BIOSYN_CACHE": str(cache)}
    rows, profiles = [], {}
    rate = None
    for runtime, encoder in ENCODERS.items():
        if args.warm_only and runtime != DEFAULT:
            continue
        config = {"linker_name": "medic", **({} if encoder is None else {"encoder": encoder})}
        if not args.warm_only:  # cold is cold: the ONNX export an earlier row kept is made again
            shutil.rmtree(cache / "onnx", ignore_errors=True)
        cold = None if args.warm_only else run("build", config, cold_env)
        if encoder is None and cold is not None:
            rate = cold["names"] / cold["link_s"]
        progress(cold)
        rebuild = None
        if cold is not None and encoder is None:
            # The same vocabulary built again with the name vectors kept (as after a
            # new release of the file, or another lambda or index): no name is encoded again.
            shutil.rmtree(cache / "linkers")
            rebuild = run("build", config, cold_env)
            progress(rebuild)
        warm = [run("refuse", config, warm_env) for _ in range(args.runs)]
        progress(warm)
        median, cells = warm_cells(warm)
        profiles.update({(runtime, "cold"): cold, (runtime, "rebuilt, vectors kept"): rebuild,
                         (runtime, "warm (median)"): median})
        rows.append([f"medic ({concepts:,} concepts, CTD TSV)", runtime, f"{median['names']:,}",
                     "-" if cold is None else f"{cold['link_s']:.0f}"
                     + ("" if rebuild is None else f" (rebuilt, vectors kept: {rebuild['link_s']:.0f})"),
                     "-" if cold is None else f"{cold['peak_gib']:.2f}",
                     *cells])
    if args.serving_python:
        exported = max(cache.glob("onnx/*/model.onnx"), key=lambda path: path.stat().st_mtime).parent
        config = {"linker_name": "medic", "encoder": {"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": str(exported)}}
        warm = [run("refuse", config, warm_env, python=args.serving_python) for _ in range(args.runs)]
        progress(warm)
        median, cells = warm_cells(warm)
        runtime = "default, without the torch extra (the graph's folder named)"
        profiles[(runtime, "warm (median)")] = median
        rows.append([f"medic ({concepts:,} concepts, CTD TSV)", runtime, f"{median['names']:,}", "-", "-",
                     *cells])
    if args.names and not args.warm_only:
        (mirror / "umls_2022_ab_cat0129.jsonl").unlink(missing_ok=True)
        written = write_scispacy_kb(medic, mirror / "umls_2022_ab_cat0129.jsonl", args.names)
        progress(f"wrote {written:,} names")
        config = {"linker_name": "umls", "encoder": ENCODERS["PyTorch"]}
        cold = run("hashed", config, cold_env, mention="Breast Neoplasms", text="Risk of Breast Neoplasms.")
        progress(cold)
        profiles[("umls size, hashed vectors", "cold")] = cold
        warm = [run("hashed,refuse", config, warm_env, mention="Breast Neoplasms", text="Risk of Breast Neoplasms.")
                for _ in range(args.runs)]
        _, cells = warm_cells(warm)
        rows.append([f"umls size ({written:,} names, scispaCy JSONL)", "PyTorch, hashed vectors", f"{cold['names']:,}",
                     f"{cold['link_s']:.0f} + {cold['names'] / rate:.0f} encoding (the default's MEDIC cold build: "
                     f"{rate:.0f} names/s)", f"{cold['peak_gib']:.2f} (without encoding)",
                     *cells])
    print_table(["vocabulary", "encoder", "names", "cold build + first link, s", "cold build peak, GiB",
                 "warm add_pipe + first link, s (median, min-max)", "warm: import spacy, s", "warm: RSS / peak, GiB",
                 "breast cancer ->"], rows)
    measured = {key: value for key, value in profiles.items() if value is not None}
    stages = list(dict.fromkeys(stage for result in measured.values() for stage in result["stages"]))
    print("\nWhere the time goes, s; a stage's time includes the stages it calls:\n")
    print_table(["stage"] + [f"{runtime}: {kind}" for runtime, kind in measured],
                [["import spacy"] + [f"{r['import_s']:.2f}" for r in measured.values()]]
                + [[stage] + [f"{r['stages'][stage]:.2f}" if stage in r["stages"] else "-" for r in measured.values()]
                   for stage in stages]
                + [["add_pipe + first link"] + [f"{r['link_s']:.2f}" for r in measured.values()]])
    colds = {runtime: result for (runtime, kind), result in measured.items() if kind == "cold"}
    if colds:
        print("\nThe cold builds' peak resident memory so far / resident memory, as each stage ends, GiB:\n")
        print_table(["stage"] + list(colds), [[stage] + [f"{r['peaks'][stage]:.2f} / {r['resident'][stage]:.2f}"
                                                         if stage in r["peaks"] else "-" for r in colds.values()]
                                              for stage in stages if any(stage in r["peaks"] for r in colds.values())])
    print(f"\nWarm: {args.runs} fresh processes each, from the cache alone (the mirror gone, encoding and "
          "requests made to fail).")


if __name__ == "__main__":
    main()
