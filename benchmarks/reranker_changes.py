"""What the re-ranker changes: dev queries linked with and without it.

    python benchmarks/reranker_changes.py PIPELINE DATASET [--examples 10]

PIPELINE has a re-ranker (train-reranker's model-best); DATASET is
ncbi-disease or bc5cdr-disease, whose processed_dev queries are read in
their raw dev abstracts. Prints Acc@1/Acc@5 of the first stage alone and
with the re-ranker, the queries the re-ranker fixed and broke at rank 1
(counts and examples: mention, context, the two top names and the gold
ID), and mentions/s of each on the same queries (one call over all).
"""
import time

from common import RAW_ABSTRACTS, parser, print_table


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline")
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("--examples", type=int, default=10)
    args = p.parse_args()

    import spacy

    from spacy_biosyn.corpus import read_concept_queries, read_pubtator
    from spacy_biosyn.evaluation import UNSCORED_CUIS, evaluate, hit_rank
    from spacy_biosyn.reranker import query_contexts

    pipe = spacy.load(args.pipeline).get_pipe("biosyn_linker")
    reranker = pipe.reranker
    if reranker is None:
        raise SystemExit(f"{args.pipeline} has no re-ranker")
    queries = [q for q in read_concept_queries(args.data / args.dataset / "processed_dev") if q.cui not in UNSCORED_CUIS]
    contexts = query_contexts(queries, read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"]), reranker.context_chars)
    runs = {}
    for setting, active in (("first stage", None), ("+ re-ranker", reranker)):
        pipe.reranker = active
        ranked = []

        def rank(texts, parts_contexts):
            ranked.append(pipe.rank(texts, parts_contexts))
            return ranked[-1]

        start = time.perf_counter()
        metrics = evaluate(rank, queries, contexts=contexts)
        seconds = time.perf_counter() - start
        runs[setting] = (metrics, ranked[0], seconds)
    print_table(("setting", "Acc@1", "Acc@5", "mentions/s"), [
        (setting, f"{m['acc@1']:.2f}", f"{m['acc@5']:.2f}", f"{len(ranked) / seconds:.0f}")
        for setting, (m, ranked, seconds) in runs.items()
    ])

    # Per query: its parts' ranked lists, in evaluate's order.
    def per_query(ranked):
        lists, i = [], 0
        for q in queries:
            n = len(q.mention.replace("+", "|").split("|"))
            lists.append(ranked[i : i + n])
            i += n
        return lists

    before, after = (per_query(runs[s][1]) for s in runs)
    fixed, broken = [], []
    for q, context, b, a in zip(queries, contexts, before, after):
        right_before, right_after = hit_rank(b, q.cui) == 0, hit_rank(a, q.cui) == 0
        if right_before != right_after:
            (fixed if right_after else broken).append((q, context, _top(b), _top(a)))
    print(f"\nfixed {len(fixed)}, broken {len(broken)} of {len(queries)} queries at Acc@1")
    for title, changes in (("fixed", fixed), ("broken", broken)):
        print(f"\n{title} (first {args.examples}):")
        print_table(("mention in context", "first stage", "re-ranked", "gold"), [
            (context.first_segment()[:110], was, now, q.cui) for q, context, was, now in changes[: args.examples]
        ])


def _top(parts) -> str:
    return " | ".join(candidates[0].name if candidates else "-" for candidates in parts)


if __name__ == "__main__":
    main()
