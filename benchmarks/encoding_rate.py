"""The default encoder's rate at encoding a build's names on a UMLS-like
slice, chunk by chunk, and the cold build of a UMLS-size vocabulary it
implies.

    python -m benchmarks.encoding_rate [--names 40000] [--chunk 10000] [--full 3260465]

The names are those of a scispaCy KB file grown from MEDIC as
`named_linkers` grows it (MEDIC's names, then variants of them with a word
added), shuffled, so each chunk holds names of every length as a UMLS file
does. Each chunk is encoded as a build encodes it (length-sorted batches,
in bf16 where the CPU has it: the encoder's `names_precision`);
the extrapolation is printed only where the chunks' rates stay within 10%
of each other, as a rate that falls with size would make it wrong.
"""
import os
import random
import tempfile
import time
from pathlib import Path

from benchmarks.common import cpu_description, parser, print_table, progress
from benchmarks.named_linkers import write_scispacy_kb

UMLS_NAMES = 3_260_465  # scispaCy's 2022 UMLS KB, unique names


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--names", type=int, default=40_000)
    p.add_argument("--chunk", type=int, default=10_000)
    p.add_argument("--full", type=int, default=UMLS_NAMES)
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import spacy

    from spacy_biosyn.vocabularies.formats import read_vocabulary_file

    with tempfile.TemporaryDirectory() as folder:
        kb = Path(folder) / "umls_2022_ab_cat0129.jsonl"
        write_scispacy_kb(args.data / "resources" / "medic_06Jul2012.txt", kb, max(args.names * 3, 200_000))
        names = sorted(set(read_vocabulary_file(kb)[0].names))
    random.Random(0).shuffle(names)
    names = names[: args.names]
    nlp = spacy.blank("en")
    encoder = nlp.add_pipe("biosyn_linker").engine.encoder  # the default encoder, as its config builds it
    encoder.load()
    encode = encoder.names_encoding()
    encode(names[:256])  # the runtime's first-call set-up is not a chunk's
    rows, rates = [], []
    for start in range(0, len(names), args.chunk):
        chunk = names[start : start + args.chunk]
        begun = time.perf_counter()
        encode(chunk)
        seconds = time.perf_counter() - begun
        rates.append(len(chunk) / seconds)
        rows.append([f"{start:,}-{start + len(chunk):,}", f"{seconds:.1f}", f"{rates[-1]:.0f}"])
        progress(rows[-1])
    print_table(["names", "s", "names/s"], rows)
    rate = len(names) / sum(len(names[i : i + args.chunk]) / r for i, r in zip(range(0, len(names), args.chunk), rates))
    flat = max(rates) <= 1.1 * min(rates)
    print(f"\nCPU: {cpu_description()}\n{type(encoder).__name__} ({encoder.name}), names in "
          f"{encoder.names_precision_used}, {len(names):,} names: {rate:.0f} names/s; "
          f"the chunks' rates {'stay' if flat else 'do not stay'} within 10% of each other.")
    if flat:
        print(f"{args.full:,} names at this rate: {args.full / rate / 3600:.2f} h of encoding.")


if __name__ == "__main__":
    main()
