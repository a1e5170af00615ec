"""Search strategies on BioSyn's processed dev queries (issue 6, table 1).

    python benchmarks/strategies.py LABEL=PIPELINE [LABEL=PIPELINE ...]
        [--datasets ncbi-disease bc5cdr-disease] [--margins 0.175 0.125 0.075 0.025]

Each pipeline's linker (its encoder, tf-idf and lambda) is re-indexed over the
dataset's train_dictionary.txt, the ontology alone (MEDIC), and scored:
- no extras;
- + training mentions: processed_train's mentions added as synonyms, which
  gives the names of BioSyn's dev_dictionary.txt;
then, each on top of the training mentions, one at a time:
- exact match first: a mention that is a training mention takes that
  mention's CUI (the sieve's first stage, BNE's "XM" rule);
- sieve at 1 + lambda - m: that, else the nearest training mention when its
  S is at least that (an identical string scores S = 1 + lambda, so the
  margin m means the same for linkers with different lambdas);
- alias-count re-ranking of the 20 best names: S of a concept's best name
  + 2c * its names' mean S + c * their count, c = 0.01 being MiniEL's
  5 : 0.1 : 0.05 scaled to S, and smaller c for a gentler count bonus;
- concept centroids: the concepts of the 20 best names scored by S with the
  mean vectors of all their names (Triplet-Search-ConNorm's "-C").
"""
import time

import spacy

from common import parser, pct, print_table
from spacy_biosyn import AliasCountReranker, ConceptCentroids, Dictionary, Sieve
from spacy_biosyn.corpus import read_concept_queries, read_synonyms
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.preprocess.text import normalize

K = 5


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipelines", nargs="+", help="LABEL=PIPELINE_DIR")
    p.add_argument("--datasets", nargs="+", default=["ncbi-disease", "bc5cdr-disease"])
    p.add_argument("--margins", nargs="+", type=float, default=[0.175, 0.125, 0.075, 0.025])
    p.add_argument("--count-weights", nargs="+", type=float, default=[0.01, 0.003, 0.001])
    p.add_argument("--only", default="", help="run only the strategies whose name holds this")
    args = p.parse_args()
    strategies = [
        ("exact match first", lambda _: Sieve(exact_match=True), None),
        *((f"sieve at 1 + lambda - {m}", lambda weight, m=m: Sieve(threshold=1 + weight - m), None)
          for m in args.margins),
        *((f"alias-count re-ranking, c = {c}", lambda _: None,
           AliasCountReranker(mean_weight=2 * c, count_weight=c)) for c in args.count_weights),
        ("concept centroids", lambda _: None, ConceptCentroids()),
    ]
    strategies = [s for s in strategies if args.only in s[0]]
    rows = []
    for dataset in args.datasets:
        ontology = Dictionary.from_file(args.data / dataset / "train_dictionary.txt")
        mentions = read_synonyms(args.data / dataset / "processed_train")
        queries = read_concept_queries(args.data / dataset / "processed_dev")
        for label, path in (spec.split("=", 1) for spec in args.pipelines):
            linker = spacy.load(path).get_pipe("biosyn_linker").linker
            linker.build(ontology, refit_sparse=False)

            def score(strategy: str) -> None:
                start = time.perf_counter()
                m = evaluate(lambda texts: linker.rank([normalize(t) for t in texts], K), queries, K)
                rows.append((dataset, label, strategy, pct(m['link_acc_1']), pct(m['link_acc_5']),
                             f"{time.perf_counter() - start:.1f}"))
                print(" | ".join(rows[-1]), flush=True)

            score("no extras (ontology names only)")
            linker.add_synonyms(mentions)
            score("+ training mentions")
            for strategy, make_sieve, concept_scorer in strategies:
                linker.sieve, linker.concept_scorer = make_sieve(linker.sparse_weight), concept_scorer
                score(f"+ training mentions, {strategy}")
    print()
    print_table(("dataset", "linker", "strategy", "acc@1", "acc@5", "seconds"), rows)


if __name__ == "__main__":
    main()
