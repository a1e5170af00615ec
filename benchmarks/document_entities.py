"""What each step of biosyn_document_entities does to an NER's entities on a
dataset's raw dev abstracts: entities added and removed, right (a gold span)
or wrong, each step alone and all together, with the wrong additions most
often made.

    python benchmarks/document_entities.py DATASET NER_PIPELINE [--label Disease]

NER_PIPELINE runs up to its linker (which is left out); the end-to-end
scores with and without the component are benchmarks/end_to_end.py's.
"""
from collections import Counter

from common import RAW_ABSTRACTS, parser, print_table

STEPS = ("rejoin", "pair_abbreviations", "propagate")


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("pipeline")
    p.add_argument("--label", default=None, help="gold spans of this label only (NCBI's four types are Disease)")
    args = p.parse_args()

    import spacy

    from spacy_biosyn.corpus import NCBI_LABELS, read_pubtator

    documents = read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"])
    nlp = spacy.load(args.pipeline, exclude=["biosyn_linker", "biosyn_document_entities"])
    docs = list(nlp.pipe(d.text for d in documents))
    gold = [
        {(a.start, a.end) for a in d.annotations if args.label is None or NCBI_LABELS.get(a.label, a.label) == args.label}
        for d in documents
    ]
    rows, examples = [], []
    for name, steps in [*((step, {step}) for step in STEPS), ("all", set(STEPS))]:
        component = spacy.blank("en").add_pipe("biosyn_document_entities", config={s: s in steps for s in STEPS})
        counts, wrong = Counter(), Counter()
        for doc, document, spans in zip(docs, documents, gold):
            before = {(e.start_char, e.end_char) for e in doc.ents}
            after = {(e.start_char, e.end_char) for e in component(doc.copy()).ents}
            for span in after - before:
                counts["added right" if span in spans else "added wrong"] += 1
                if span not in spans:
                    wrong[document.text[span[0]:span[1]]] += 1
            for span in before - after:
                counts["removed right" if span in spans else "removed wrong"] += 1
        rows.append((name, counts["added right"], counts["added wrong"], counts["removed right"], counts["removed wrong"]))
        examples.append((name, wrong.most_common(8)))
    print(f"{args.dataset} dev, {len(documents)} abstracts, {args.pipeline}\n")
    print_table(("step", "added right", "added wrong", "removed right", "removed wrong"), rows)
    for name, wrong in examples:
        print(f"\n{name}, wrong additions: {wrong}")


if __name__ == "__main__":
    main()
