"""Abbreviation pairs that Ab3P and Schwartz-Hearst find on the raw dev
abstracts, and how many both find (issue 4). Their effect on Acc@1 is in
benchmarks/preprocessing.py.

    python benchmarks/abbreviations.py [--examples 4]
"""
import time

from common import RAW_ABSTRACTS, parser, print_table
from spacy_biosyn.preprocess.abbreviations import Ab3PDetector, SchwartzHearstDetector
from spacy_biosyn.corpus import read_pubtator



def main() -> None:
    p = parser(__doc__)
    p.add_argument("--examples", type=int, default=4, help="pairs shown that only one detector finds")
    args = p.parse_args()
    rows, examples = [], []
    for dataset, splits in RAW_ABSTRACTS.items():
        corpus = f"{dataset} dev"
        documents = read_pubtator(args.data / splits["dev"])
        found, seconds = {}, {}
        for name, detector in (("Ab3P", Ab3PDetector()), ("Schwartz-Hearst", SchwartzHearstDetector())):
            start = time.perf_counter()
            found[name] = {
                (d.doc_id, a.short_form, a.long_form.lower()) for d in documents for a in detector(d.text)
            }
            seconds[name] = time.perf_counter() - start
        ab3p, hearst = found["Ab3P"], found["Schwartz-Hearst"]
        rows.append(
            (
                corpus,
                len(documents),
                len(ab3p),
                len(hearst),
                len(ab3p & hearst),
                len(ab3p - hearst),
                len(hearst - ab3p),
                f"{seconds['Ab3P']:.2f} / {seconds['Schwartz-Hearst']:.2f}",
            )
        )
        for only, pairs in (("Ab3P only", ab3p - hearst), ("Schwartz-Hearst only", hearst - ab3p)):
            examples.extend((corpus, only, *pair) for pair in sorted(pairs)[: args.examples])
    header = ("abstracts", "docs", "Ab3P", "Schwartz-Hearst", "both", "Ab3P only", "S-H only", "seconds")
    print_table(header, rows)
    print()
    print_table(("abstracts", "found by", "PMID", "short form", "long form"), examples)


if __name__ == "__main__":
    main()
