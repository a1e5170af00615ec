"""nlp.pipe with one and with two processes on the raw dev abstracts' gold
spans: seconds, mentions/s, whether the links (IDs, kb_ents and candidate
names in order) are identical, and the largest score difference: the
encoder's float32 arithmetic depends on the batch, by about 1e-6.

    python -m benchmarks.stress.processes PIPELINE [--dataset ncbi-disease] [--processes 1 2]
"""
import time
from pathlib import Path

import spacy

from benchmarks.common import RAW_ABSTRACTS, parser, print_table, progress
from spacy_biosyn.corpora.docs import pubtator_to_examples
from spacy_biosyn.corpora.readers import read_pubtator


def links(docs):
    """Per mention: (offsets, cui, kb_ents IDs, candidate names and IDs), and its scores."""
    found, scores = [], []
    for doc in docs:
        for e in doc.ents:
            found.append((e.start_char, e.end_char, e._.cui, [cui for cui, _ in e._.kb_ents],
                          [(c.name, c.concepts) for c in e._.candidates]))
            scores.append([score for _, score in e._.kb_ents] + [c.score for c in e._.candidates])
    return found, scores


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline", type=Path)
    p.add_argument("--dataset", default="ncbi-disease", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("--processes", nargs="+", type=int, default=[1, 2])
    args = p.parse_args()
    nlp = spacy.load(args.pipeline)
    documents = read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"])
    rows, reference = [], None
    for n_process in args.processes:
        docs = [eg.predicted for eg in pubtator_to_examples(nlp, documents)]
        mentions = sum(len(doc.ents) for doc in docs)
        start = time.perf_counter()
        linked = list(nlp.pipe(docs, n_process=n_process, batch_size=16))
        seconds = time.perf_counter() - start
        found, scores = links(linked)
        reference = (found, scores) if reference is None else reference
        drift = max((abs(a - b) for x, y in zip(scores, reference[1]) for a, b in zip(x, y)), default=0.0)
        rows.append((n_process, len(docs), mentions, f"{seconds:.1f}", f"{mentions / seconds:.0f}",
                     found == reference[0], f"{drift:.1e}"))
        progress(rows[-1])
    print()
    print_table(("processes", "docs", "mentions", "seconds", "mentions/s",
                 f"links identical to {args.processes[0]}", "max score difference"), rows)


if __name__ == "__main__":
    main()
