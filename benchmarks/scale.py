"""Index back-ends on a dictionary of millions of names (issue 5, benchmark 2).

    python -m benchmarks.scale PIPELINE [--names 4000000] [--backends exact ivf-sq8 ...]
                                        [--workdir benchmarks/.scale] [--plot FILE.png]

The dictionary is PIPELINE's own (MEDIC, 72,887 names, with their real
vectors) plus generated distractors up to --names. A distractor is a MEDIC
name with one word replaced, inserted or dropped, the new word taken from
another name; it gets a concept ID of its own, so linking to it is always
wrong. Encoding millions of names is hours on this CPU, so a distractor's
vector is made cheaply from its two source names' vectors,
alpha * v_source + beta * v_donor + noise, with alpha, beta and the noise's
size fitted by least squares to 2,000 distractors encoded for real; the fit
is printed, so you can see how close cheap and real vectors are.

Each back-end runs in two fresh processes: one builds the index from the
stored vectors and tf-idf rows and saves the linker; one loads it (encoder,
dictionary, tf-idf, index) and ranks BioSyn's NCBI dev queries. Resident
memory is that second process's RSS after loading and its peak while
ranking, and its private (anonymous) memory after ranking. The encoder
probe of NameRanker.from_disk is skipped there: it would rightly reject the
distractors' synthetic vectors.
"""
import json
import subprocess
import sys
import time
from itertools import chain
from pathlib import Path

import numpy as np
import srsly
from scipy import sparse

from benchmarks.common import REPO, memory_gib, parser, pct, print_table


def _faiss(factory: str, **search) -> dict:
    """A FaissIndex block; tf-idf candidates always come from a 64-dim SVD
    projection in an IVF index, so no search step touches every name."""
    return {"@misc": "spacy_biosyn.FaissIndex.v1", "factory": factory, **search,
            "sparse_dims": 64, "sparse_factory": "IVF1024,SQ8"}


BACKENDS = {
    "exact": {"@misc": "spacy_biosyn.ExactIndex.v4"},
    "ivf-sq8": _faiss("IVF4096,SQ8", nprobe=64),
    "ivf-sq4": _faiss("IVF4096,SQ4", nprobe=64),
    "ivf-pq96": _faiss("IVF4096,PQ96", nprobe=64),
    "hnsw-sq8": _faiss("HNSW32,SQ8", ef_search=128),
}
K = 5
N_CALIBRATION = 2000


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline", type=Path)
    p.add_argument("--names", type=int, default=4_000_000)
    p.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    p.add_argument("--workdir", type=Path, default=Path(__file__).parent / ".scale")
    p.add_argument("--plot", type=Path, default=None, help="save Acc@1 against memory here")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rerun", action="store_true", help="measure again the back-ends measured before")
    args = p.parse_args()
    work = args.workdir / str(args.names)
    if not (work / "meta.json").exists():
        prepare(args.pipeline, work, args.names, args.seed, args.data)
    meta = srsly.read_json(work / "meta.json")
    print(json.dumps(meta["calibration"]), flush=True)
    rows = []
    for backend in args.backends:
        built = _run_stage("build", work, backend, args.rerun)
        ranked = _run_stage("rank", work, backend, args.rerun, str(args.data))
        rows.append({"backend": backend, **built, **ranked})
        print(json.dumps(rows[-1]), flush=True)
    exact = next((r["link_acc_1"] for r in rows if r["backend"] == "exact"), None)
    print(
        f"\n{meta['n_names']:,} names ({meta['n_real']:,} MEDIC + distractors); "
        f"tf-idf of all names {meta['tfidf_s']:.0f} s (shared by every back-end); "
        f"{meta['n_texts']} distinct NCBI dev mentions\n"
    )
    header = ("back-end", "factory", "build s", "build peak GiB", "load s", "resident GiB",
              "peak GiB", "private GiB", "search ms/mention", "acc@1", "acc@5", "acc@1 vs exact",
              f"distractors in top {K} %")
    print_table(header, [
        (r["backend"], BACKENDS[r["backend"]].get("factory", "Flat"), f"{r['build_s']:.0f}",
         f"{r['build_peak_gib']:.2f}", f"{r['load_s']:.1f}", f"{r['resident_gib']:.2f}",
         f"{r['peak_gib']:.2f}", f"{r.get('private_gib', float('nan')):.2f}", f"{r['search_ms']:.2f}", pct(r['link_acc_1']), pct(r['link_acc_5']),
         "" if exact is None else f"{100 * (r['link_acc_1'] - exact):+.2f}", f"{r['distractors_in_top_k']:.1f}")
        for r in rows
    ])
    if args.plot:
        _plot(rows, args.plot, meta["n_names"])


def prepare(pipeline: Path, work: Path, n_names: int, seed: int, data: Path) -> None:
    """The dictionary file, the name vectors (.npy) and tf-idf rows of
    MEDIC plus distractors, made once per size and reused by every back-end."""
    import spacy

    from spacy_biosyn.kb.dictionary import Dictionary

    work.mkdir(parents=True, exist_ok=True)
    linker = spacy.load(pipeline).get_pipe("biosyn_linker").engine.vocabulary()
    real = linker.dictionary
    real_vectors = linker.index.reconstruct(np.arange(len(real)))
    rng = np.random.default_rng(seed)
    sources, donors, names = _distractors(real.names, n_names - len(real), rng)

    calibration = _fit_cheap_vectors(linker.encoder, real_vectors, sources, donors, names, rng)
    vectors = np.lib.format.open_memmap(
        work / "vectors.npy", mode="w+", dtype=np.float32, shape=(n_names, real_vectors.shape[1])
    )
    vectors[: len(real)] = real_vectors
    for start in range(0, len(names), 500_000):
        rows = slice(start, start + 500_000)
        vectors[len(real) + start : len(real) + start + len(names[rows])] = _cheap_vectors(
            real_vectors, sources[rows], donors[rows], calibration, rng
        )
    vectors.flush()
    distractor_concepts = (((f"DISTRACTOR:{i}",),) for i in range(len(names)))
    dictionary = Dictionary(chain(real.names, names), chain(real.concepts, distractor_concepts))
    dictionary.to_file(work / "dictionary.txt")
    linker.sparse.to_disk(work / "tfidf.json")
    linker.encoder.to_disk(work / "encoder")
    start = time.perf_counter()
    sparse.save_npz(work / "sparse.npz", linker.sparse.transform(dictionary.names))
    tfidf_s = time.perf_counter() - start
    _, texts = _dev_texts(data)
    srsly.write_json(work / "meta.json", {
        "n_names": n_names, "n_real": len(real), "n_texts": len(texts), "tfidf_s": tfidf_s,
        "sparse_weight": linker.sparse_weight, "calibration": calibration,
    })


def _distractors(names, n, rng):
    """n new names, each a real name with one word replaced by, or joined
    by, a word of another name, or with one word dropped."""
    words = [name.split() for name in names]
    seen = set(names)
    sources, donors, made = [], [], []
    while len(made) < n:
        batch = n - len(made)
        for a, b, op, r1, r2 in zip(
            rng.integers(len(names), size=batch), rng.integers(len(names), size=batch),
            rng.integers(3, size=batch), rng.random(batch), rng.random(batch),
        ):
            new = list(words[a])
            word = words[b][int(r2 * len(words[b]))]
            at = int(r1 * len(new))
            if op == 0 or (op == 2 and len(new) == 1):
                new[at] = word
            elif op == 1:
                new.insert(at, word)
            else:
                del new[at]
            text = " ".join(new)
            if text not in seen:
                seen.add(text)
                sources.append(a)
                donors.append(b)
                made.append(text)
    return np.array(sources), np.array(donors), made


def _fit_cheap_vectors(encoder, real_vectors, sources, donors, names, rng):
    """alpha, beta and the noise per dimension that make alpha * v_source +
    beta * v_donor + noise closest to the real encoding, on a sample."""
    sample = rng.choice(len(names), N_CALIBRATION, replace=False)
    fit, held_out = sample[: N_CALIBRATION // 2], sample[N_CALIBRATION // 2 :]
    encoded = encoder.encode([names[i] for i in sample])
    real_fit, real_held = encoded[: len(fit)], encoded[len(fit) :]
    basis = np.stack([real_vectors[sources[fit]], real_vectors[donors[fit]]], axis=-1)
    (alpha, beta), *_ = np.linalg.lstsq(basis.reshape(-1, 2), real_fit.ravel(), rcond=None)
    residual = real_fit - basis @ np.array([alpha, beta])
    calibration = {"alpha": float(alpha), "beta": float(beta), "noise": float(residual.std())}
    cheap = _cheap_vectors(real_vectors, sources[held_out], donors[held_out], calibration, rng)
    source = real_vectors[sources[held_out]]
    calibration.update({
        "cosine(cheap, real) on held-out distractors": float((cheap * real_held).sum(1).mean()),
        "cosine(real distractor, its source name)": float((real_held * source).sum(1).mean()),
        "cosine(cheap distractor, its source name)": float((cheap * source).sum(1).mean()),
    })
    return calibration


def _cheap_vectors(real_vectors, sources, donors, calibration, rng):
    vectors = calibration["alpha"] * real_vectors[sources] + calibration["beta"] * real_vectors[donors]
    vectors += rng.normal(0, calibration["noise"], vectors.shape).astype(np.float32)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def _dev_texts(data: Path):
    from spacy_biosyn.corpora.readers import read_concept_queries
    from spacy_biosyn.preprocess.text import normalize

    queries = read_concept_queries(data / "ncbi-disease" / "processed_dev")
    parts = (p for q in queries for p in q.mention.replace("+", "|").split("|"))
    return queries, list(dict.fromkeys(normalize(p) for p in parts))


def _run_stage(stage: str, work: Path, backend: str, rerun: bool, *extra: str) -> dict:
    """A stage's measurements, from a fresh process or, unless `rerun`,
    from the file of an earlier run: a 4M-name back-end takes many minutes."""
    saved = work / f"{backend}.{stage}.json"
    if rerun or not saved.exists():
        out = subprocess.run(
            [sys.executable, "-m", "benchmarks.scale", f"--{stage}", str(work), backend, *extra],
            check=True, stdout=subprocess.PIPE, text=True, cwd=REPO,
        ).stdout
        saved.write_text(out.strip().splitlines()[-1])
    return json.loads(saved.read_text())


def _stage_main() -> None:
    stage, work, backend, *extra = sys.argv[1:]
    work = Path(work)
    if stage == "--build":
        print(json.dumps(_build(work, backend)))
    else:
        print(json.dumps(_rank(work, backend, Path(extra[0]))))


def _linker(work: Path, backend: str):
    from spacy.util import registry

    from spacy_biosyn.encoders.onnx import MODEL_FILE, OnnxEncoder
    from spacy_biosyn.search.name_ranker import FixedSettings, NameRanker

    class SyntheticVectorsLinker(NameRanker):
        def _check_saved_state(self, path, dictionary, meta):
            """Skips the encoder probe; distractors' vectors are not the encoder's."""

    index = registry.resolve({"index": BACKENDS[backend]})["index"]
    sparse_weight = srsly.read_json(work / "meta.json")["sparse_weight"]
    # The pipeline's own encoder kind: an ONNX one loads without transformers.
    if (work / "encoder" / MODEL_FILE).exists():
        encoder = OnnxEncoder(str(work / "encoder"))
    else:
        from spacy_biosyn.encoders.transformer import TransformerEncoder

        encoder = TransformerEncoder(str(work / "encoder"))
    return SyntheticVectorsLinker(encoder, index, lambda: FixedSettings(sparse_weight))


def _build(work: Path, backend: str) -> dict:
    from spacy_biosyn.kb.dictionary import Dictionary

    linker = _linker(work, backend)
    linker.dictionary = Dictionary.from_file(work / "dictionary.txt")
    linker.sparse.from_disk(work / "tfidf.json")
    linker.encoder.from_disk(work / "encoder")
    vectors = np.load(work / "vectors.npy", mmap_mode="r")
    names_sparse = sparse.load_npz(work / "sparse.npz").tocsr()
    start = time.perf_counter()
    linker.index.build(vectors, names_sparse)
    build_s = time.perf_counter() - start
    linker.to_disk(work / backend)
    return {"build_s": build_s, "build_peak_gib": memory_gib("VmHWM")}


def _rank(work: Path, backend: str, data: Path) -> dict:
    from spacy_biosyn.evaluation.queries import evaluate
    from spacy_biosyn.preprocess.text import normalize

    start = time.perf_counter()
    linker = _linker(work, backend).from_disk(work / backend)
    load_s = time.perf_counter() - start
    resident = memory_gib("VmRSS")
    queries, texts = _dev_texts(data)
    dense_queries, sparse_queries = linker.encoder.encode(texts), linker.sparse.transform(texts)
    start = time.perf_counter()
    linker.index.search(dense_queries, sparse_queries, linker.sparse_weight, K)
    search_ms = 1000 * (time.perf_counter() - start) / len(texts)
    ranked = linker.rank(texts, K)
    metrics = evaluate(lambda ts: linker.rank([normalize(t) for t in ts], K), queries, K)
    return {
        "load_s": load_s, "resident_gib": resident, "peak_gib": memory_gib("VmHWM"),
        # The rest of the resident memory is memory-mapped files (tf-idf rows,
        # vectors): page cache, shared by processes on the node and reclaimable.
        "private_gib": memory_gib("RssAnon"),
        "search_ms": search_ms, "link_acc_1": metrics["link_acc_1"], "link_acc_5": metrics["link_acc_5"],
        # How hard the distractors are: the share of top-k slots they take.
        "distractors_in_top_k": 100 * np.mean([
            c.cuis[0].startswith("DISTRACTOR:") for candidates in ranked for c in candidates
        ]),
    }


def _plot(rows, path: Path, n_names: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for r in rows:
        ax.scatter(r["peak_gib"], 100 * r["link_acc_1"])
        ax.annotate(r["backend"], (r["peak_gib"], 100 * r["link_acc_1"]), textcoords="offset points", xytext=(4, 4))
    ax.axvline(4, linestyle="--", color="grey")
    ax.set_xlabel("peak resident memory while linking (GiB)")
    ax.set_ylabel("NCBI dev Acc@1")
    ax.set_title(f"{n_names:,} names: accuracy against memory")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("--build", "--rank"):
        _stage_main()
    else:
        main()
