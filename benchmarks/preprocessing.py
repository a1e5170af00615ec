"""Linking raw dev abstracts with the pipeline's own preprocessing, beside
BioSyn's gold-assisted processed_dev queries (issue 4).

    python benchmarks/preprocessing.py PIPELINE [PIPELINE ...] [--datasets ...]

Each pipeline is indexed once per dataset against its dev_dictionary.txt
(BioSyn protocol), then scores the processed_dev queries and the gold spans
of the raw dev abstracts with abbreviation expansion (Ab3P or
Schwartz-Hearst), composite splitting and, for NCBI, the spelling
corrections switched off and on. Same scoring rule throughout.

The raw rows link the same mentions as processed_dev: BioSyn dropped 50
BC5CDR dev mentions whose CUI (e.g. D066126, cardiotoxicity) its dictionary
lacks. `python -m spacy_biosyn evaluate PIPELINE FILE --labels Disease`
scores every gold mention of the raw file.
"""
import time

import spacy

from common import RAW_ABSTRACTS, parser, pct, print_table
from spacy_biosyn.corpus import pubtator_to_examples, read_concept_queries, read_pubtator
from spacy_biosyn.evaluation.queries import evaluate, evaluate_examples
from spacy_biosyn.preprocess.abbreviations import Ab3PDetector, SchwartzHearstDetector
from spacy_biosyn.preprocess.text import read_corrections

K = 5
# BioSyn applied spelling corrections to NCBI only.
CORRECTIONS = {"ncbi-disease": "resources/ncbi-spell-check.txt"}
# (row name, abbreviation detector, split composites, use corrections)
SETTINGS = [
    ("raw: no preprocessing", None, False, False),
    ("raw: abbreviations (Ab3P)", Ab3PDetector(), False, False),
    ("raw: composites", None, True, False),
    ("raw: both (Ab3P)", Ab3PDetector(), True, False),
    ("raw: both (Schwartz-Hearst)", SchwartzHearstDetector(), True, False),
    ("raw: both (Ab3P) + corrections", Ab3PDetector(), True, True),
]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipelines", nargs="+", help="saved pipelines with a biosyn_linker")
    p.add_argument("--datasets", nargs="+", default=list(RAW_ABSTRACTS))
    args = p.parse_args()
    rows = []
    for pipeline in args.pipelines:
        nlp = spacy.load(pipeline)
        linker = nlp.get_pipe("biosyn_linker")
        linker.top_k = max(linker.top_k, K)
        for dataset in args.datasets:
            corrections_file = CORRECTIONS.get(dataset)
            linker.set_dictionary(args.data / dataset / "dev_dictionary.txt")
            linker.preprocessor.corrections = {}
            queries = read_concept_queries(args.data / dataset / "processed_dev")
            start = time.perf_counter()
            m = evaluate(linker.rank, queries, K)
            rows.append(_row(pipeline, dataset, "processed_dev (BioSyn, gold-assisted)", m, start))
            print(rows[-1], flush=True)
            kept = {(q.doc_id, q.start, q.end) for q in queries}
            examples = pubtator_to_examples(
                nlp, [d._replace(annotations=_kept(d, kept)) for d in read_pubtator(args.data / RAW_ABSTRACTS[dataset]["dev"])]
            )
            corrections = read_corrections(args.data / corrections_file) if corrections_file else {}
            for name, detector, split, correct in SETTINGS:
                if correct and not corrections:
                    continue
                linker.abbreviation_detector = detector
                linker.preprocessor.split_composites = split
                linker.preprocessor.corrections = corrections if correct else {}
                start = time.perf_counter()
                m = evaluate_examples(linker.pipe, examples, K)
                rows.append(_row(pipeline, dataset, name, m, start))
                print(rows[-1], flush=True)
    print()
    print_table(("pipeline", "dataset", "queries", "acc@1", "acc@5", "n", "seconds"), rows)


def _kept(document, kept):
    return [a for a in document.annotations if (document.doc_id, a.start, a.end) in kept]


def _row(pipeline, dataset, name, metrics, start):
    seconds = time.perf_counter() - start
    return (
        pipeline,
        dataset,
        name,
        pct(metrics['link_acc_1']),
        pct(metrics[f'link_acc_{K}']),
        metrics["n"],
        f"{seconds:.1f}",
    )


if __name__ == "__main__":
    main()
