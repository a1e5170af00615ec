"""One pipeline for BC5CDR's two entity types, spans routed by their label
(issue 6, must-show 2).

    python benchmarks/routing.py [--encoder MODEL]

Every gold span of the raw BC5CDR dev abstracts, diseases and chemicals
together, goes through one biosyn_linker (Ab3P, composite splitting):
- routed: Disease spans against MEDIC plus the disease training mentions
  (bc5cdr-disease/dev_dictionary.txt), Chemical spans against a chemical
  dictionary made of the chemical training mentions (bc5cdr-chemical/train):
  no chemical vocabulary such as CTD's is at hand, so the chemical rows are
  bounded by that dictionary's coverage, printed with the table;
- MEDIC for every span: the same linker with its route switched off.
Acc@1/Acc@5 per label by the same rule; CUI-less spans are not scored.
"""
import spacy

from common import RAW_ABSTRACTS, offline_minilm, parser, pct, print_table
from spacy_biosyn.accuracy import UNSCORED_CUIS, link_scores
from spacy_biosyn.corpus import pubtator_to_examples, read_pubtator, read_synonyms
from spacy_biosyn.kb.dictionary import split_cuis

K = 5


def main() -> None:
    p = parser(__doc__)
    args = p.parse_args()
    chemical_mentions = args.data / "bc5cdr-chemical" / "train"
    chemicals = read_synonyms(chemical_mentions)
    nlp = spacy.blank("en")
    linker = nlp.add_pipe("biosyn_linker", config={
        "dictionary": str(args.data / "bc5cdr-disease" / "dev_dictionary.txt"),
        "encoder": args.encoder or offline_minilm(),
        "routes": {"Chemical": str(chemical_mentions)},  # a .concept folder: its mentions are the names
    })
    nlp.initialize()
    examples = pubtator_to_examples(nlp, read_pubtator(args.data / RAW_ABSTRACTS["bc5cdr-disease"]["dev"]))
    gold = [split_cuis(e.kb_id_) for eg in examples for e in eg.reference.ents
            if e.label_ == "Chemical" and e.kb_id_ not in UNSCORED_CUIS]
    covered = sum(any(c in chemicals.rows_by_cui for c in cuis) for cuis in gold)
    print(f"chemical dictionary: {len(chemicals)} names of {len(chemicals.rows_by_cui)} concepts, "
          f"holding a gold CUI of {covered} of {len(gold)} scored dev chemical spans "
          f"({100 * covered / len(gold):.1f}%)\n")
    rows = []
    for setting, labels in (("routed by label", linker.routes.labels), ("MEDIC for every span", [])):
        linker.routes.use_labels(labels)  # the same MEDIC linker; without routes every span uses it
        list(linker.pipe(eg.predicted for eg in examples))  # links in place, scored per label below
        for labels in (["Disease"], ["Chemical"], ["Disease", "Chemical"]):
            m = link_scores(examples, K, labels)
            rows.append((setting, "+".join(labels), pct(m['link_acc_1']), pct(m['link_acc_5']), m["n"]))
            print(rows[-1], flush=True)
    print()
    print_table(("setting", "spans", "acc@1", "acc@5", "n"), rows)


if __name__ == "__main__":
    main()
