"""fp32 against bf16 autocast on this machine's CPU: speed and agreement.

    python benchmarks/precision.py [--names 4000] [--steps 3]

Encoding: names/s over MEDIC names, and the cosine between each name's fp32
and bf16 vectors. Training: seconds per BioSyn step (16 mentions x (1 + 20)
strings, forward and backward, AdamW).
"""
import random
import time

import numpy as np
import torch

from common import offline_minilm, parser, print_table
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.kb.dictionary import Dictionary


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--names", type=int, default=4000)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    names = Dictionary.from_file(args.data / "ncbi-disease" / "train_dictionary.txt").names
    sample = random.Random(0).sample(names, args.names)
    encoder = TransformerEncoder(args.encoder or offline_minilm()).load()
    rows, vectors = [], {}
    for dtype in (None, torch.bfloat16):
        label = "bf16 autocast" if dtype else "fp32"
        start = time.perf_counter()
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            vectors[label] = encoder.encode(sample)
        encode_rate = len(sample) / (time.perf_counter() - start)
        rows.append([label, f"{encode_rate:.0f}", f"{train_step_seconds(encoder, names, dtype, args.steps):.2f}"])
    cosine = (vectors["fp32"] * vectors["bf16 autocast"]).sum(1)
    for row in rows:
        row.append("1" if row[0] == "fp32" else f"{np.mean(cosine):.4f} (min {cosine.min():.4f})")
    print_table(("precision", "encode names/s", "train step s", "cosine to fp32"), rows)


def train_step_seconds(encoder: TransformerEncoder, names, dtype, steps: int) -> float:
    model = encoder.model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    sample = random.Random(1)
    start = time.perf_counter()
    for _ in range(steps):
        with torch.autocast("cpu", dtype=dtype, enabled=dtype is not None):
            vectors = encoder.embed(sample.sample(names, 16 * 21)).float()
        loss = vectors[:, 0].sum()  # any loss: the timing is of backward + step
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()
    return (time.perf_counter() - start) / steps


if __name__ == "__main__":
    main()
