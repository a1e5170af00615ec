"""Names that several concepts share, resolved by the dictionary's order or by the document.

    python benchmarks/shared_names.py DATASET PIPELINE [PIPELINE ...] [--examples 10]

Links the gold spans of DATASET's raw dev abstracts with each PIPELINE twice,
`resolve_shared_names` off (the dictionary's order, which preferred_ids_from
learns from an annotated corpus) and on (the concept the doc's other mentions
name first), and prints cui_acc (the share whose span._.cui is gold) and
Acc@1 of each, the spans whose cui changed, and examples of those fixed and
broken. Build the pipelines with the vocabulary reader in question: raw MEDIC
read by spacy_biosyn.MedicVocabulary.v1 keeps the 1,010 names that two MEDIC
entries share as two concepts.
"""
from common import RAW_ABSTRACTS, parser, pct, print_table

# NCBI Disease's four classes and BC5CDR's Disease (its Chemical spans are another route's).
DISEASE_LABELS = {"SpecificDisease", "DiseaseClass", "Modifier", "CompositeMention", "Disease"}


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("pipelines", nargs="+")
    p.add_argument("--examples", type=int, default=10)
    args = p.parse_args()

    import spacy

    from spacy_biosyn.accuracy import cui_is_gold, link_scores
    from spacy_biosyn.corpus import pubtator_to_examples, read_pubtator

    documents = [
        d._replace(annotations=[a for a in d.annotations if a.label in DISEASE_LABELS])
        for d in read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"])
    ]
    rows = []
    for path in args.pipelines:
        nlp = spacy.load(path)
        linker = nlp.get_pipe("biosyn_linker")
        results = {}
        for resolve in (False, True):
            linker.resolve_shared_names = resolve
            examples = pubtator_to_examples(nlp, documents)
            for _ in linker.pipe(eg.predicted for eg in examples):
                pass
            results[resolve] = (link_scores(examples), _cuis(examples, documents))
        (before, before_cuis), (after, after_cuis) = results[False], results[True]
        changed = [(key, before_cuis[key], after_cuis[key]) for key in before_cuis if before_cuis[key] != after_cuis[key]]
        fixed = [c for c in changed if cui_is_gold(c[2], c[0][-1]) and not cui_is_gold(c[1], c[0][-1])]
        broken = [c for c in changed if cui_is_gold(c[1], c[0][-1]) and not cui_is_gold(c[2], c[0][-1])]
        rows.append((
            path, pct(before['link_cui_acc']), pct(after['link_cui_acc']), pct(before['link_acc_1']),
            pct(after['link_acc_1']), len(changed), len(fixed), len(broken), before["n"],
        ))
        for title, spans in (("fixed", fixed), ("broken", broken)):
            print(f"{path}: {title} ({len(spans)})")
            for (doc_id, _, text, gold), old, new in spans[: args.examples]:
                print(f"  {doc_id} {text!r}: gold {gold}, {old} -> {new}")
    print()
    print_table(
        ("pipeline", "cui_acc by order", "cui_acc by document", "acc@1 before", "acc@1 after",
         "cui changed", "fixed", "broken", "n"),
        rows,
    )


def _cuis(examples, documents) -> dict:
    """(doc id, offset, span text, gold field) -> span._.cui, for every gold span."""
    cuis = {}
    for example, document in zip(examples, documents):
        predicted = {(s.start_char, s.end_char): s for s in example.predicted.ents}
        for gold in example.reference.ents:
            span = predicted[(gold.start_char, gold.end_char)]
            cuis[(document.doc_id, gold.start_char, gold.text, gold.kb_id_)] = span._.cui
    return cuis


if __name__ == "__main__":
    main()
