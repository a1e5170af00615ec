"""Zero-shot Acc@1/Acc@5 on BioSyn's processed dev queries (BioSyn protocol:
dev queries scored against dev_dictionary.txt).

    python -m benchmarks.zero_shot [--datasets ncbi-disease bc5cdr-disease]

Rows: tf-idf alone; the encoder alone with [CLS] or mean pooling and cosine
(plus [CLS] with raw inner product, BioSyn's choice for BioBERT); and
S = dense + lambda * sparse for a sweep of lambda.
"""
import time

import numpy as np

from benchmarks.common import offline_minilm, parser, pct, print_table, progress
from spacy_biosyn.corpora.readers import read_concept_queries
from spacy_biosyn.encoders.transformer import TransformerEncoder
from spacy_biosyn.evaluation.queries import evaluate
from spacy_biosyn.kb.dictionary import Dictionary
from spacy_biosyn.preprocess.text import normalize
from spacy_biosyn.search.index import ExactIndex
from spacy_biosyn.search.name_ranker import FixedSettings, NameRanker
from spacy_biosyn.search.tfidf import SparseEncoder
from spacy_biosyn.ty import Candidate

K = 5


def sparse_only_ranker(dictionary: Dictionary):
    sparse = SparseEncoder().fit(dictionary.names)
    names = sparse.transform(dictionary.names)

    def rank(texts):
        scores = (sparse.transform([normalize(t) for t in texts]) @ names.T).toarray()
        top = np.argsort(-scores, axis=1, kind="stable")[:, :K]
        return [
            [Candidate(dictionary.names[i], dictionary.concepts[i], float(s[i])) for i in row]
            for s, row in zip(scores, top)
        ]

    return rank


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--datasets", nargs="+", default=["ncbi-disease", "bc5cdr-disease"])
    p.add_argument("--lambdas", nargs="+", type=float, default=[0.0, 0.0625, 0.125, 0.25, 0.5, 1.0])
    args = p.parse_args()
    encoder_path = args.encoder or offline_minilm()
    rows = []
    for dataset in args.datasets:
        dictionary = Dictionary.from_file(args.data / dataset / "dev_dictionary.txt")
        queries = read_concept_queries(args.data / dataset / "processed_dev")
        m = evaluate(sparse_only_ranker(dictionary), queries, K)
        rows.append((dataset, "tf-idf char 1-2-grams alone", "-", pct(m['link_acc_1'], 1), pct(m['link_acc_5'], 1)))
        progress(rows[-1])
        settings = [("cls", "cosine", args.lambdas), ("mean", "cosine", args.lambdas), ("cls", "dot", [0.0])]
        for pooling, similarity, lambdas in settings:
            encoder = TransformerEncoder(encoder_path, pooling=pooling, similarity=similarity).load()
            weight = {"lambda": 0.0}  # the ranker reads it at each ranking
            linker = NameRanker(encoder, ExactIndex(), lambda: FixedSettings(weight["lambda"]))
            start = time.perf_counter()
            linker.build(dictionary)
            build_s = time.perf_counter() - start
            for lam in lambdas:
                weight["lambda"] = lam
                m = evaluate(lambda texts: linker.rank([normalize(t) for t in texts], K), queries, K)
                method = f"{pooling} {similarity}" + (f" + {lam:g} * tf-idf" if lam else " alone")
                rows.append((dataset, method, f"{build_s:.0f}s", pct(m['link_acc_1'], 1), pct(m['link_acc_5'], 1)))
                progress(rows[-1])
        print(f"{dataset}: {len(queries)} queries, {len(dictionary)} names", flush=True)
    print()
    print_table(("dataset", "method", "index build", "Acc@1", "Acc@5"), rows)


if __name__ == "__main__":
    main()
