"""What a change of model changes: dev queries linked before and after.

    python benchmarks/link_changes.py PIPELINE DATASET [--before OTHER] [--examples 10]

Without --before, PIPELINE has a re-ranker (train-reranker's model-best)
and is compared with its own first stage; with it, PIPELINE (say a trained
bi-encoder) is compared with OTHER (say the untrained one). DATASET is
ncbi-disease or bc5cdr-disease, whose processed_dev queries are read in
their raw dev abstracts. Prints Acc@1/Acc@5 before and after, the queries
fixed and broken at rank 1 (counts and examples: mention in context, the
two top names and the gold ID), and mentions/s of each on the same queries
(one call over all).
"""
import time

from common import RAW_ABSTRACTS, parser, pct, print_table


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline")
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("--before", help="the pipeline to compare with (default: PIPELINE's first stage)")
    p.add_argument("--examples", type=int, default=10)
    args = p.parse_args()

    import spacy

    from spacy_biosyn.accuracy import UNSCORED_CUIS, hit_rank
    from spacy_biosyn.corpus import read_concept_queries, read_pubtator
    from spacy_biosyn.evaluation.queries import evaluate
    from spacy_biosyn.pipeline.reranker import query_contexts

    after = spacy.load(args.pipeline).get_pipe("biosyn_linker")
    if args.before:
        before = spacy.load(args.before).get_pipe("biosyn_linker")
        settings = (("before", before, before.reranker), ("after", after, after.reranker))
    elif after.reranker is None:
        raise SystemExit(f"{args.pipeline} has no re-ranker: give --before to compare two pipelines")
    else:
        settings = (("first stage", after, None), ("+ re-ranker", after, after.reranker))
    # The re-rankers' window; without one, context is only shown.
    window = max((r.context_chars for _, _, r in settings if r is not None), default=100)
    queries = [q for q in read_concept_queries(args.data / args.dataset / "processed_dev") if q.cui not in UNSCORED_CUIS]
    contexts = query_contexts(queries, read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"]), window)
    runs = {}
    for setting, pipe, reranker in settings:
        pipe.set_reranker(reranker)
        ranked = []

        def rank(texts, parts_contexts):
            ranked.append(pipe.rank(texts, parts_contexts))
            return ranked[-1]

        start = time.perf_counter()
        metrics = evaluate(rank, queries, contexts=contexts)
        seconds = time.perf_counter() - start
        runs[setting] = (metrics, ranked[0], seconds)
    print_table(("setting", "Acc@1", "Acc@5", "mentions/s"), [
        (setting, pct(m['link_acc_1']), pct(m['link_acc_5']), f"{len(ranked) / seconds:.0f}")
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

    earlier, later = (per_query(runs[s][1]) for s in runs)
    fixed, broken = [], []
    for q, context, b, a in zip(queries, contexts, earlier, later):
        right_before, right_after = hit_rank(b, q.cui) == 0, hit_rank(a, q.cui) == 0
        if right_before != right_after:
            (fixed if right_after else broken).append((q, context, _top(b), _top(a)))
    print(f"\nfixed {len(fixed)}, broken {len(broken)} of {len(queries)} queries at Acc@1")
    for title, changes in (("fixed", fixed), ("broken", broken)):
        print(f"\n{title} (first {args.examples}):")
        print_table(("mention in context", *(f"top name, {s}" for s in runs), "gold"), [
            (context.first_segment()[:110], was, now, q.cui) for q, context, was, now in changes[: args.examples]
        ])


def _top(parts) -> str:
    return " | ".join(candidates[0].name if candidates else "-" for candidates in parts)


if __name__ == "__main__":
    main()
