"""The tie rule: which concept a name that several concepts share is read
as, and what its last step, the concept's own other names, changes.

    python -m benchmarks.tie_rule

Links the gold Disease spans of NCBI Disease's and BC5CDR Disease's raw
dev abstracts with BioSyn's MEDIC dictionary plus the dataset's training
mentions as synonyms and preferred IDs (the README example's linker), the
offline MiniLM and default settings, nil_threshold null. For each span
whose best name several concepts share it counts the rule that chose
(`span._.ties`); for the spans `own_names` decided it compares the chosen
concept with the one the vocabulary's order puts first (what linked
before the rule), against the gold IDs; so too for the spans whose one
concept of several IDs is now named by another ID than the vocabulary's
first (its own names ranking nearer, where the corpus used none of its
IDs). cui_acc is `span._.cui` naming exactly the gold IDs.
"""
from collections import Counter

from benchmarks.common import RAW_ABSTRACTS, cpu_description, offline_minilm, parser, pct, print_table, progress

DICTIONARY = "ncbi-disease/train_dictionary.txt"
TRAIN = {"ncbi-disease": "ncbi-disease/processed_train", "bc5cdr-disease": "bc5cdr-disease/processed_train"}
SHOWN = 8


def main() -> None:
    args = parser(__doc__).parse_args()
    import spacy

    from spacy_biosyn.corpora.docs import pubtator_to_examples
    from spacy_biosyn.corpora.readers import NCBI_LABELS, read_pubtator
    from spacy_biosyn.kb.namespaces import MEDIC_NAMESPACES, ConceptKeys
    from spacy_biosyn.linking.choice import BY_OWN_NAMES, TIE_RULES
    from spacy_biosyn.names import PIPE_NAME
    from spacy_biosyn.kb.namespaces import UNSCORED_CUIS, cui_is_gold

    keys = ConceptKeys(MEDIC_NAMESPACES)
    labels = {"Disease", *NCBI_LABELS}
    rows, changed = [], []
    for dataset, paths in RAW_ABSTRACTS.items():
        nlp = spacy.blank("en")
        train = str(args.data / TRAIN[dataset])
        linker = nlp.add_pipe(PIPE_NAME, config={
            "dictionary": str(args.data / DICTIONARY), "encoder": args.encoder or offline_minilm(),
            "synonyms": [train], "preferred_ids_from": [train], "nil_threshold": None})
        linker.initialize()
        dictionary = linker.engine.routes.default.dictionary
        examples = pubtator_to_examples(nlp, read_pubtator(args.data / paths["dev"]), labels)
        progress(f"{dataset}: linking {len(examples)} abstracts' gold spans")
        for _ in linker.pipe(eg.predicted for eg in examples):
            pass
        right, rules, fixed, broken, own_id = [], Counter(), 0, 0, [0, 0]
        for eg in examples:
            predicted = {(s.start_char, s.end_char): s for s in eg.predicted.ents}
            for gold in eg.reference.ents:
                span = predicted.get((gold.start_char, gold.end_char))
                if gold.kb_id_ in UNSCORED_CUIS or span is None:
                    continue
                right.append(cui_is_gold(span._.cui, gold.kb_id_, keys))
                rules.update(tie.rule for tie in span._.ties)
                best = span._.parts[0].candidates[0] if len(span._.parts) == 1 and span._.cui else None
                if best is not None and not span._.ties and len(best.concepts[0]) > 1:
                    listed = dictionary.concepts[dictionary.row(best.name)][0][0]
                    if listed != span._.cui:
                        now, before = cui_is_gold(span._.cui, gold.kb_id_, keys), cui_is_gold(listed, gold.kb_id_, keys)
                        own_id[0] += now and not before
                        own_id[1] += before and not now
                        changed.append(f"{dataset} {span.text!r} gold {gold.kb_id_}: ID {listed} -> {span._.cui}")
                for part, tie in zip([p for p in span._.parts if len(p.candidates[0].concepts) > 1], span._.ties):
                    if tie.rule != BY_OWN_NAMES:
                        continue
                    first = dictionary.concepts[dictionary.row(part.candidates[0].name)][0][0]
                    now, before = cui_is_gold(tie.ids[0], gold.kb_id_, keys), cui_is_gold(first, gold.kb_id_, keys)
                    fixed += now and not before
                    broken += before and not now
                    if now != before:
                        changed.append(f"{dataset} {span.text!r} gold {gold.kb_id_}: {first} -> {tie.ids[0]} "
                                       f"({'fixed' if now else 'broken'})")
        rows.append((dataset, len(right), pct(sum(right) / len(right)), sum(rules.values()),
                     ", ".join(f"{r} {rules[r]}" for r in TIE_RULES if rules[r]), f"{fixed} / {broken}",
                     f"{own_id[0]} / {own_id[1]}"))
    print(f"{cpu_description()}\n")
    print_table(("dev set", "gold spans", "cui_acc", "spans with a tie", "by rule", "own_names fixed / broke",
                 "own ID fixed / broke"), rows)
    print("\n" + "\n".join(changed[:SHOWN * 2]))


if __name__ == "__main__":
    main()
