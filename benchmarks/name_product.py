"""The search's product in each number format this CPU offers: a batch of
mention vectors against every name vector (MEDIC's size by default), the
product ExactIndex computes for every mention it ranks.

    python benchmarks/name_product.py [--names 71924] [--dim 384] [--batch 64]

fp32 is numpy's BLAS product (what the index runs); bf16 and fp16 are
torch's; int8 is the product of int8 codes accumulated in int32. Where a
format has no native instructions (bf16 without AVX512-BF16 or AMX, int8
without VNNI) it is emulated, and slower than fp32.
"""
import time

import numpy as np
import torch

from common import cpu_description, parser, print_table


def best_ms(fn, repeats: int = 3) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * min(times)


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--names", type=int, default=71924)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--batch", type=int, default=64)
    args = p.parse_args()
    rng = np.random.default_rng(0)
    names = rng.standard_normal((args.names, args.dim)).astype(np.float32)
    queries = rng.standard_normal((args.batch, args.dim)).astype(np.float32)
    t_names, t_queries = torch.from_numpy(names), torch.from_numpy(queries)
    scale = 127 / np.abs(names).max()
    # Names are stored in each format once, as an index would hold them.
    codes, query_codes = (np.round(a * scale).astype(np.int8).astype(np.int32) for a in (names, queries))
    bf16, fp16 = t_names.bfloat16(), t_names.half()
    runs = {
        "fp32 (numpy BLAS, the index's)": lambda: queries @ names.T,
        "bf16 (torch)": lambda: t_queries.bfloat16() @ bf16.T,
        "fp16 (torch)": lambda: t_queries.half() @ fp16.T,
        "int8 codes, int32 sums (numpy)": lambda: query_codes @ codes.T,
    }
    fp32_ms = None
    rows = []
    for name, run in runs.items():
        ms = best_ms(run)
        fp32_ms = fp32_ms or ms
        rows.append((name, f"{ms:.1f} ms", f"{1000 * args.batch / ms:.0f} mentions/s", f"{fp32_ms / ms:.2f}x fp32"))
    print(f"CPU: {cpu_description()}; {args.batch} mentions x {args.names} names x {args.dim} dims\n")
    print_table(("format", "one batch", "product alone", "speed"), rows)


if __name__ == "__main__":
    main()
