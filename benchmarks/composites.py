"""Precision and recall of the composite splitter against the splits that
BioSyn's processed files record (a mention field with `|`), issue 4.

    python benchmarks/composites.py [--datasets ncbi-disease bc5cdr-disease] [--examples 8]

Each processed query's raw text is cut from its abstract by offsets and
preprocessed as the pipeline does (Ab3P abbreviations, then the splitter,
whose whole-string lookup uses the dictionary of that split: train queries
against train_dictionary.txt, dev queries against dev_dictionary.txt, so no
query finds itself). A split is right when the splitter splits a query that
BioSyn split; "same parts" also asks for the same normalized parts. The second
precision also counts as right a split of a query that BioSyn left whole but
gave several CUIs, since Acc@k scores both the same way.
"""
from collections import Counter

from common import RAW_ABSTRACTS, parser, print_table
from spacy_biosyn.preprocess.abbreviations import Ab3PDetector
from spacy_biosyn.preprocess.composites import is_coordinated
from spacy_biosyn.corpus import read_concept_queries, read_pubtator
from spacy_biosyn.kb.dictionary import Dictionary, split_cuis
from spacy_biosyn.preprocess.readings import MentionPreprocessor, long_forms_by_short_form

def main() -> None:
    p = parser(__doc__)
    p.add_argument("--datasets", nargs="+", default=list(RAW_ABSTRACTS))
    p.add_argument("--examples", type=int, default=8, help="errors shown per kind")
    args = p.parse_args()
    detector, preprocessor = Ab3PDetector(), MentionPreprocessor(split_composites=True)
    rows, errors = [], []
    for dataset in args.datasets:
        for split, raw_file in RAW_ABSTRACTS[dataset].items():
            dictionary = Dictionary.from_file(args.data / dataset / f"{split}_dictionary.txt")
            documents = {d.doc_id: d for d in read_pubtator(args.data / raw_file)}
            long_forms = {}
            counts = Counter()
            for query in read_concept_queries(args.data / dataset / f"processed_{split}"):
                text = documents[query.doc_id].text
                if query.doc_id not in long_forms:
                    long_forms[query.doc_id] = long_forms_by_short_form(detector(text))
                mention = text[query.start : query.end]
                parts = preprocessor.readings(mention, long_forms[query.doc_id], dictionary.__contains__)[0]
                gold = tuple(query.mention.split("|"))
                predicted_split, gold_split = len(parts) > 1, len(gold) > 1
                counts["gold"] += gold_split
                counts["predicted"] += predicted_split
                counts["coordinated gold"] += gold_split and is_coordinated(mention)
                if predicted_split and gold_split:
                    counts["right"] += 1
                    counts["same parts"] += set(parts) == set(gold)
                    counts["right coordinated"] += is_coordinated(mention)
                elif predicted_split != gold_split:
                    # BioSyn left some coordinations whole but gave them every part's CUI
                    # ("c6 and c7 deficiencies" -> 612446|610102): scored alike either way.
                    counts["unsplit, several CUIs"] += predicted_split and len(split_cuis(query.cui)) > 1
                    kind = "split, BioSyn did not" if predicted_split else "BioSyn split, we did not"
                    errors.append((dataset, split, kind, mention, " | ".join(parts), " | ".join(gold)))
            rows.append(
                (
                    dataset,
                    split,
                    counts["gold"],
                    counts["predicted"],
                    counts["right"],
                    _percent(counts["right"], counts["predicted"]),
                    _percent(counts["right"] + counts["unsplit, several CUIs"], counts["predicted"]),
                    _percent(counts["right"], counts["gold"]),
                    _percent(counts["right coordinated"], counts["coordinated gold"]),
                    counts["same parts"],
                )
            )
    header = (
        "dataset",
        "split",
        "BioSyn splits",
        "our splits",
        "both",
        "precision",
        "precision (several CUIs right)",
        "recall",
        "recall (coordinated)",
        "same parts",
    )
    print_table(header, rows)
    print()
    shown = Counter()
    examples = []
    for error in errors:
        key = error[:3]
        if shown[key] < args.examples:
            shown[key] += 1
            examples.append(error)
    print_table(("dataset", "split", "error", "raw mention", "ours", "BioSyn's"), examples)


def _percent(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:.1f}" if whole else "-"


if __name__ == "__main__":
    main()
