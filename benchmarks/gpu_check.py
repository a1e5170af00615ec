"""The GPU recipe in one run: build, link on the device and on the CPU,
BioSyn training and the transformer NER, per encoder, as one table.

    python -m benchmarks.gpu_check --workdir DIR --dictionary DICT --train DIR --dev DIR
        --abstracts TRAIN.PubTator DEV.PubTator (--encoder NAME=FOLDER ... | --random-encoders)
        [--device cuda] [--links 500] [--ner-steps 300] [--candidates 20] [--output TABLE.md]

Each step is the project's own command (`python -m spacy_biosyn ...`) in a
process of its own, timed from outside, so what runs is what a user runs:
- build: `build --device DEVICE` over the dictionary; names/s, and the time
  a 4,000,000-name vocabulary (UMLS) would take at that rate;
- link: 500 dev mentions through `link --mentions --json` on the device,
  then with the device hidden (CUDA_VISIBLE_DEVICES=""), the same saved
  pipeline: how many IDs agree and the largest score difference;
- train: BioSyn's synonym marginalization, one epoch (bf16 autocast where
  the device runs it), its last loss and dev Acc@1;
- train-ner: `convert` the abstracts, then the transformer recipe from the
  encoder's folder with no shape override, for --ner-steps steps; its dev F.
Peak memory is the GPU's (nvidia-smi, sampled every 0.2 s) on a GPU, the
step's peak RSS on a CPU. --random-encoders builds, in the workdir, random
BERTs in two real layouts (BERT-base as SapBERT has it, 768 wide, 12
layers, 12 heads; MiniLM-L6's, 384, 6, 12) over a WordPiece vocabulary
trained on the abstracts and the dictionary: what a GPU machine with no
model hub can encode with. Only the standard library runs here; the steps
need spacy-biosyn installed.
"""
import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

# The layouts --random-encoders builds (BertConfig's arguments).
RANDOM_LAYOUTS = {
    "bert-base-random": {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12,
                         "intermediate_size": 3072, "max_position_embeddings": 512},
    "minilm-l6-random": {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
                         "intermediate_size": 1536, "max_position_embeddings": 512},
}
UMLS_NAMES = 4_000_000
CONFIGS = Path(__file__).resolve().parents[1] / "configs"
HEADER = ("encoder", "step", "seconds", "rate", "peak memory", "result")


class GpuMemory:
    """The largest GPU memory in use (MiB) while it runs, sampled from
    nvidia-smi; None where there is no nvidia-smi."""

    def __init__(self):
        self.peak: Optional[int] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True) if shutil.which("nvidia-smi") else None

    def _sample(self) -> None:
        while not self._stop.wait(0.2):
            done = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True)
            used = [int(x) for x in done.stdout.split() if x.isdigit()]
            if used:
                self.peak = max(self.peak or 0, max(used))

    def __enter__(self) -> "GpuMemory":
        if self._thread is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def run(command: List[str], log: Path, env: Optional[dict] = None, stdin: Optional[str] = None) -> Tuple[float, str, str]:
    """Run a spacy_biosyn command: its seconds, peak memory and standard
    output. A failure stops the check, with the end of what it printed."""
    with GpuMemory() as gpu:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "spacy_biosyn", *command], input=stdin, capture_output=True,
                              text=True, env={**os.environ, **(env or {})})
        seconds = time.perf_counter() - start
    log.write_text(f"$ {' '.join(command)}\n{done.stdout}\n{done.stderr}")
    if done.returncode:
        raise SystemExit(f"{' '.join(command[:2])} failed ({log}):\n{done.stderr[-3000:]}")
    # ru_maxrss of the children: the largest any step has reached, in KiB on Linux
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 2**20
    return seconds, f"GPU {gpu.peak} MiB" if gpu.peak is not None else f"RSS <= {rss:.1f} GiB", done.stdout


def random_encoders(workdir: Path, texts: List[str]) -> Dict[str, str]:
    """RANDOM_LAYOUTS over a WordPiece vocabulary trained on `texts`."""
    from tokenizers import BertWordPieceTokenizer

    from spacy_biosyn.encoders.tiny import SPECIALS, make_tiny_encoder

    tokenizer = BertWordPieceTokenizer(lowercase=True)
    tokenizer.train_from_iterator(texts, vocab_size=30_522, special_tokens=SPECIALS, show_progress=False)
    vocabulary = [token for token, _ in sorted(tokenizer.get_vocab().items(), key=lambda item: item[1])]
    return {name: make_tiny_encoder(workdir / "encoders" / name, vocabulary=vocabulary, **shape)
            for name, shape in RANDOM_LAYOUTS.items()}


def dev_mentions(dev: Path, n: int) -> List[str]:
    """The first `n` mentions of the dev .concept files, in file order."""
    mentions = []
    for file in sorted(dev.glob("*.concept")):
        for line in file.read_text(encoding="utf-8").splitlines():
            fields = line.split("||")
            if len(fields) == 5:
                mentions.append(fields[3])
    return mentions[:n]


def compare_links(on_device: str, on_cpu: str) -> str:
    """How the JSON rows of the same mentions agree: IDs and scores."""
    a, b = ([json.loads(line) for line in text.splitlines() if line.strip()] for text in (on_device, on_cpu))
    if len(a) != len(b):
        return f"{len(a)} rows on the device, {len(b)} on the CPU"
    same = sum(x["id"] == y["id"] for x, y in zip(a, b))
    largest = max((abs((x["score"] or 0) - (y["score"] or 0)) for x, y in zip(a, b)), default=0.0)
    return f"{same}/{len(a)} IDs the same, largest score difference {largest:.2e}"


def check_encoder(name: str, encoder: str, args, rows: list) -> None:
    out = args.workdir / name
    out.mkdir(parents=True, exist_ok=True)
    gpu_id = "0" if args.device == "cuda" else "-1"
    names = sum(1 for line in args.dictionary.read_text(encoding="utf-8").splitlines() if line.strip())
    pipeline = out / "pipeline"
    seconds, memory, _ = run(["build", "--dictionary", str(args.dictionary), str(pipeline), "--encoder", encoder,
                              "--device", args.device], out / "build.log")
    rate = names / seconds
    rows.append((name, f"build, {names:,} names", f"{seconds:.1f}", f"{rate:,.0f} names/s", memory,
                 f"{UMLS_NAMES / rate / 60:.0f} min for 4M names at this rate"))

    mentions = "\n".join(dev_mentions(args.dev, args.links)) + "\n"
    link = ["link", str(pipeline), "--mentions", "--json"]
    seconds, memory, on_device = run(link, out / "link-device.log", stdin=mentions)
    *_, on_cpu = run(link, out / "link-cpu.log", env={"CUDA_VISIBLE_DEVICES": ""}, stdin=mentions)
    n = mentions.count("\n")
    rows.append((name, f"link {n} mentions", f"{seconds:.1f}", f"{n / seconds:,.0f} mentions/s", memory,
                 f"device against CPU: {compare_links(on_device, on_cpu)}"))

    seconds, memory, _ = run(["train", str(CONFIGS / "biosyn.cfg"), "--output", str(out / "train"), "--gpu-id", gpu_id,
                           "--paths.dictionary", str(args.dictionary), "--paths.train", str(args.train),
                           "--paths.dev", str(args.dev), "--encoder.name", encoder, "--training.epochs", "1", "--training.k", str(args.candidates)],
                          out / "train.log")
    record = json.loads((out / "train" / "log.jsonl").read_text().splitlines()[-1])
    steps = record["step"]
    rows.append((name, "train, 1 epoch", f"{seconds:.1f}", f"{steps / seconds:.2f} steps/s", memory,
                 f"loss {record['loss']:.4f}, dev Acc@1 {100 * record['dev_link_acc_1']:.2f}"))

    corpus = {}
    for split, pubtator in zip(("train", "dev"), args.abstracts):
        corpus[split] = out / f"{split}.spacy"
        run(["convert", str(pubtator), str(corpus[split])], out / f"convert-{split}.log")
    seconds, memory, _ = run(["train-ner", str(CONFIGS / "ner-transformer.cfg"), "--output", str(out / "ner"),
                              "--gpu-id", gpu_id, "--paths.train", str(corpus["train"]), "--paths.dev", str(corpus["dev"]),
                              "--paths.encoder", encoder, "--training.max_steps", str(args.ner_steps),
                              "--training.eval_frequency", str(max(1, args.ner_steps // 3))], out / "train-ner.log")
    meta = json.loads((out / "ner" / "model-best" / "meta.json").read_text())
    rows.append((name, f"train-ner, {args.ner_steps} steps", f"{seconds:.1f}", f"{args.ner_steps / seconds:.2f} steps/s",
                 memory, f"dev ents F {100 * meta['performance']['ents_f']:.2f}"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--dictionary", type=Path, required=True, help="a BioSyn CUI||name dictionary")
    p.add_argument("--train", type=Path, required=True, help="training .concept files' folder")
    p.add_argument("--dev", type=Path, required=True, help="dev .concept files' folder")
    p.add_argument("--abstracts", type=Path, nargs=2, required=True, metavar=("TRAIN", "DEV"),
                   help="PubTator abstracts the NER trains and is scored on")
    p.add_argument("--encoder", action="append", default=[], metavar="NAME=FOLDER")
    p.add_argument("--random-encoders", action="store_true", help="build random BERTs in two real layouts")
    p.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    p.add_argument("--links", type=int, default=500)
    p.add_argument("--ner-steps", type=int, default=300)
    p.add_argument("--candidates", type=int, default=20, help="training.k: candidates per mention (BioSyn's 20)")
    p.add_argument("--output", type=Path, help="also write the table here")
    args = p.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    encoders = dict(spec.split("=", 1) for spec in args.encoder)
    if args.random_encoders:
        texts = [line.split("||")[1] for line in args.dictionary.read_text(encoding="utf-8").splitlines() if "||" in line]
        texts += [line for pubtator in args.abstracts for line in pubtator.read_text(encoding="utf-8").splitlines()]
        encoders.update(random_encoders(args.workdir, texts))
    if not encoders:
        p.error("give --encoder NAME=FOLDER or --random-encoders")
    rows: list = []
    for name, encoder in encoders.items():
        check_encoder(name, encoder, args, rows)
    device = "CPU"
    if args.device == "cuda" and shutil.which("nvidia-smi"):
        device = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                                text=True).stdout.strip()
    lines = [f"Device: {device} ({args.device}); host {platform.machine()}, {os.cpu_count()} CPUs", "",
             "| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in rows]
    table = "\n".join(lines)
    print(table)
    if args.output:
        args.output.write_text(table + "\n")


if __name__ == "__main__":
    main()
