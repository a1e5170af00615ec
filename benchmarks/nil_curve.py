"""NIL threshold: precision of the links kept against the share of mentions
kept (issue 6, curve 3).

    python benchmarks/nil_curve.py PIPELINE [--dataset ncbi-disease] [--plot FILE]

PIPELINE's linker ranks BioSyn's processed dev queries; a mention's score is
its best candidate's (the mean over a composite's parts, as kb_ents scores
it). A threshold t makes every mention scoring below t NIL; the table gives,
for t at quantiles of the scores, the share of mentions still linked
(coverage) and Acc@1 among them (precision), and --plot draws the curve.
No threshold links fewer mentions than the exact dictionary matches (S =
1 + lambda): they all score the same.
"""
from pathlib import Path

import numpy as np
import spacy

from common import parser, print_table
from spacy_biosyn.accuracy import hit_rank
from spacy_biosyn.corpus import read_concept_queries
from spacy_biosyn.preprocess.text import normalize

COVERAGES = [1.0, 0.98, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline", type=Path)
    p.add_argument("--dataset", default="ncbi-disease")
    p.add_argument("--plot", type=Path, default=None)
    args = p.parse_args()
    linker = spacy.load(args.pipeline).get_pipe("biosyn_linker").linker
    queries = read_concept_queries(args.data / args.dataset / "processed_dev")
    parts = [q.mention.replace("+", "|").split("|") for q in queries]
    ranked = iter(linker.rank([normalize(p) for query_parts in parts for p in query_parts], 1))
    scores, right = [], []
    for query, query_parts in zip(queries, parts):
        candidates = [next(ranked) for _ in query_parts]
        scores.append(np.mean([c[0].score if c else -np.inf for c in candidates]))
        right.append(hit_rank(candidates, query.cui) == 0)
    # Scores rounded to 4 decimals: exact matches all score 1 + lambda up to
    # float noise, and no threshold can tell them apart.
    scores, right = np.round(np.array(scores), 4), np.array(right)
    rows = []
    for threshold in sorted({np.quantile(scores, 1 - c, method="lower") for c in COVERAGES}):
        kept = scores >= threshold
        rows.append((f"{threshold:.4f}", f"{100 * kept.mean():.1f}", f"{100 * right[kept].mean():.2f}",
                     int((~kept).sum()), int((~kept & ~right).sum())))
    curve = [(kept.mean(), right[kept].mean()) for kept in (scores >= t for t in np.unique(scores))]
    print(f"{args.dataset} dev, {len(queries)} mentions, {args.pipeline}\n")
    print_table(("nil_threshold", "coverage %", "precision (acc@1 of linked) %", "NIL", "of them wrong"), rows)
    if args.plot:
        _plot(*np.array(curve).T, args.plot, args.dataset)


def _plot(coverage, precision, path: Path, dataset: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 4))
    ax.plot(100 * coverage, 100 * precision, marker=".")
    ax.set_xlabel("coverage: mentions linked (%)")
    ax.set_ylabel("precision: Acc@1 of linked mentions (%)")
    ax.set_title(f"NIL threshold on {dataset} dev")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
