"""The share of gold spans that do not fall on token boundaries, per corpus,
split and entity type, with spaCy's English tokenizer and with the rules of
spacy_biosyn.BiomedicalTokenizer.v1. An NER can only emit whole tokens, so
this share is lost to strict recall whatever it learns.

    python benchmarks/tokenizer_alignment.py [--examples 10]
"""
from collections import Counter

import spacy

from common import RAW_ABSTRACTS, parser, print_table
from spacy_biosyn.corpus import read_pubtator
from spacy_biosyn.tokenizer import add_biomedical_rules


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--examples", type=int, default=10, help="misaligned spans shown per corpus, with the rules")
    args = p.parse_args()
    tokenizers = {"spaCy en": spacy.blank("en"), "+ biomedical rules": add_biomedical_rules(spacy.blank("en"))}
    rows, left = [], Counter()
    for dataset, splits in RAW_ABSTRACTS.items():
        for split, path in splits.items():
            documents = read_pubtator(args.data / path)
            counts, off = Counter(), {name: Counter() for name in tokenizers}
            for document in documents:
                docs = {name: nlp.make_doc(document.text) for name, nlp in tokenizers.items()}
                for a in document.annotations:
                    counts[a.label] += 1
                    for name, doc in docs.items():
                        if doc.char_span(a.start, a.end) is None:
                            off[name][a.label] += 1
                            if name == "+ biomedical rules" and split == "dev":
                                left[(dataset, document.text[max(0, a.start - 8): a.end + 8])] += 1
            for label in sorted(counts):
                rows.append((dataset, split, label, counts[label],
                             *(f"{100 * off[name][label] / counts[label]:.2f}" for name in tokenizers)))
    print_table(("corpus", "split", "type", "gold spans", *(f"% off tokens: {name}" for name in tokenizers)), rows)
    print(f"\nDev spans still off token boundaries with the rules (first {args.examples} per corpus, in context):")
    for dataset in RAW_ABSTRACTS:
        shown = [context for (d, context), _ in left.most_common() if d == dataset][: args.examples]
        print(f"  {dataset}: " + ", ".join(repr(c) for c in shown))


if __name__ == "__main__":
    main()
