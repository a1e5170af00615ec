"""The linker's own Ab3P beside the pairs of scispaCy's AbbreviationDetector
(abbreviations = spacy_biosyn.ScispacyAbbreviations.v1), on each dataset's
gold Disease spans in the raw dev abstracts.

    python benchmarks/scispacy_abbreviations.py ncbi-disease=PIPELINE bc5cdr-disease=PIPELINE [--changes 5]

Needs scispacy importable (its abbreviation module only: scispaCy pins
numpy < 2, so `pip install --no-deps --target DIR scispacy` and PYTHONPATH=DIR
do). Each row: the definitions found (distinct short form and long form per
abstract: scispaCy lists every occurrence), cui_acc and Acc@1 of the
linker's pipe; then the spans whose cui the swap fixes and breaks.
"""
from common import RAW_ABSTRACTS, parser, pct, print_table


def main() -> None:
    p = parser(__doc__)
    p.add_argument("linkers", nargs="+", help="DATASET=PIPELINE with a biosyn_linker")
    p.add_argument("--changes", type=int, default=5)
    args = p.parse_args()

    import importlib

    import spacy

    importlib.import_module("scispacy.abbreviation")  # registers the abbreviation_detector factory

    from spacy_biosyn.accuracy import cui_is_gold, link_scores
    from spacy_biosyn.corpus import NCBI_LABELS, pubtator_to_examples, read_pubtator
    from spacy_biosyn.preprocess.abbreviations import Ab3PDetector, ScispacyAbbreviations

    rows, changes = [], []
    scispacy = spacy.blank("en")
    sentencizer, detector = scispacy.add_pipe("sentencizer"), scispacy.add_pipe("abbreviation_detector")
    for dataset, _, path in (spec.partition("=") for spec in args.linkers):
        documents = read_pubtator(args.data / RAW_ABSTRACTS[dataset]["dev"])
        nlp = spacy.load(path)
        linker = nlp.get_pipe("biosyn_linker")
        right = {}
        for name, own_detector in (("Ab3P (the linker's own)", Ab3PDetector()), ("scispaCy's pairs", ScispacyAbbreviations())):
            examples = pubtator_to_examples(nlp, documents, {"Disease", *NCBI_LABELS})
            linker.abbreviation_detector = own_detector
            if isinstance(own_detector, ScispacyAbbreviations):
                for eg in examples:
                    detector(sentencizer(eg.predicted))
            for _ in linker.pipe(eg.predicted for eg in examples):
                pass
            metrics = link_scores(examples)
            pairs = sum(len({(a.short_form, a.long_form.lower()) for a in eg.predicted._.biosyn_abbreviations})
                        for eg in examples)
            rows.append((dataset, name, pairs, pct(metrics["link_cui_acc"]), pct(metrics["link_acc_1"]), metrics["n"]))
            right[name] = {
                (i, span.start_char): (span.text, span._.cui, gold.kb_id_)
                for i, eg in enumerate(examples) for span, gold in zip(eg.predicted.ents, eg.reference.ents)
                if cui_is_gold(span._.cui, gold.kb_id_)
            }
            wrong = {
                (i, span.start_char): (span.text, span._.cui, gold.kb_id_)
                for i, eg in enumerate(examples) for span, gold in zip(eg.predicted.ents, eg.reference.ents)
            }
        ab3p, scispacy_right = right.values()
        changes.append((dataset, "fixed", [wrong[k] for k in sorted(scispacy_right.keys() - ab3p.keys())]))
        changes.append((dataset, "broken", [wrong[k] for k in sorted(ab3p.keys() - scispacy_right.keys())]))
    print("raw dev abstracts, gold Disease spans\n")
    print_table(("dataset", "abbreviations", "definitions", "cui_acc", "Acc@1", "spans"), rows)
    for dataset, kind, spans in changes:
        print(f"\n{dataset}: scispaCy's pairs against Ab3P, {kind}: {len(spans)}")
        for text, cui, gold in spans[: args.changes]:
            print(f"  {text!r}: {cui} (gold {gold})")


if __name__ == "__main__":
    main()
