"""Mentions whose concept the vocabulary lacks: how many are left NIL, and
what that costs the mentions whose concept it has.

    python -m benchmarks.absent_concepts [--removed 0.2] [--seed 0]

Every gold mention of NCBI Disease and BC5CDR Disease has a MEDIC concept,
so no other score here counts the open world. This one takes a seeded
fifth (--removed) of the gold concepts of both dev sets out of MEDIC (the
BioSyn training dictionary, 71,924 names): each name of such a concept
goes, a name with several IDs where any of them is removed. It indexes
what is left with the offline MiniLM and default settings, then links the
raw dev abstracts' gold Disease spans (abbreviations, composites and the
document's choice as a pipeline links them), under:
- none: no threshold at all;
- auto, vocabulary only: what nil_threshold "auto" is without an annotated
  corpus (the measured or derived score threshold);
- auto, + TRAIN corpus: "auto" where `preferred_ids_from` names the
  dataset's own training mentions (processed_train), from which the
  open-world NIL model is learned (search/nil_model.py).
Mentions of removed concepts (any gold ID removed) should be NIL; a
mention of a kept concept is right when `span._.cui` names exactly its gold
IDs (cui_acc, NIL a miss). Common words: the share of the 1,000 most
frequent English words (wordfreq) that get an ID, each linked alone. The
build is timed as `initialize`, which learns the NIL model too (names come
from the vector store once encoded: the first variant's build is the cold
one). Last, "xyzzy syndrome" and the first absent mentions of
each dev set, as each variant links them.
"""
import random
import tempfile
import time
from pathlib import Path

from benchmarks.common import RAW_ABSTRACTS, cpu_description, offline_minilm, parser, pct, print_table, progress

LABELS = ["Disease"]
TRAIN_MENTIONS = {"ncbi-disease": "ncbi-disease/processed_train", "bc5cdr-disease": "bc5cdr-disease/processed_train"}
MEDIC = "ncbi-disease/train_dictionary.txt"
SHOWN = 5


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--removed", type=float, default=0.2, help="the share of the dev sets' gold concepts removed")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    import spacy
    from wordfreq import top_n_list

    from spacy_biosyn.corpora.docs import pubtator_to_examples
    from spacy_biosyn.corpora.readers import NCBI_LABELS, read_pubtator
    from spacy_biosyn.kb.ids import bare_id, split_cuis
    from spacy_biosyn.kb.namespaces import MEDIC_NAMESPACES, ConceptKeys
    from spacy_biosyn.names import PIPE_NAME
    from spacy_biosyn.kb.namespaces import UNSCORED_CUIS, cui_is_gold

    labels = {*LABELS, *NCBI_LABELS}  # NCBI's four types are diseases
    documents = {ds: read_pubtator(args.data / paths["dev"]) for ds, paths in RAW_ABSTRACTS.items()}
    gold = sorted({bare_id(cui) for docs in documents.values() for d in docs for a in d.annotations
                   if a.label in labels and a.cui not in UNSCORED_CUIS for cui in split_cuis(a.cui) if cui != "-1"})
    removed = set(random.Random(args.seed).sample(gold, round(len(gold) * args.removed)))
    names = (args.data / MEDIC).read_text(encoding="utf-8").splitlines()
    kept_names = [line for line in names if not set(line.split("||")[0].split("|")) & removed]
    known = {cui for line in kept_names for cui in line.split("||")[0].split("|")}
    keys = ConceptKeys(MEDIC_NAMESPACES)
    words = top_n_list("en", 1000)
    encoder = args.encoder or offline_minilm()
    rows, shown = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        vocabulary = Path(tmp) / "medic-minus.txt"
        vocabulary.write_text("\n".join(kept_names) + "\n", encoding="utf-8")
        variants = [("vocabulary only", None, list(documents))]
        variants += [(f"+ {ds} train", ds, [ds]) for ds in documents]
        for variant, corpus, datasets in variants:
            nlp = spacy.blank("en")
            config = {"dictionary": str(vocabulary), "encoder": encoder}
            if corpus is not None:
                config["preferred_ids_from"] = [str(args.data / TRAIN_MENTIONS[corpus])]
            linker = nlp.add_pipe(PIPE_NAME, config=config)
            start = time.perf_counter()
            linker.initialize()
            built = time.perf_counter() - start
            model = linker.engine.vocabulary().nil_model
            progress(f"{variant}: built in {built:.1f} s; NIL model: {model.source if model else 'none'}")
            for threshold in (None, "auto"):
                linker.nil_threshold = threshold
                setting = f"{'none' if threshold is None else 'auto'}, {variant}"
                common = sum(link is not None and link.cui is not None for link in linker.engine.link(words)) / len(words)
                for ds in datasets:
                    examples = pubtator_to_examples(nlp, documents[ds], labels)
                    for _ in linker.pipe(eg.predicted for eg in examples):
                        pass
                    kept, absent, said = [], [], []
                    for eg in examples:
                        predicted = {(s.start_char, s.end_char): s for s in eg.predicted.ents}
                        for span in eg.reference.ents:
                            if span.kb_id_ in UNSCORED_CUIS or (span.start_char, span.end_char) not in predicted:
                                continue
                            linked = predicted[(span.start_char, span.end_char)]
                            if {bare_id(c) for c in split_cuis(span.kb_id_)} <= known:
                                kept.append(cui_is_gold(linked._.cui, span.kb_id_, keys))
                            else:
                                absent.append(linked._.cui is None)
                                said.append(f"{linked.text!r} -> " + described(
                                    linked._.cui, linked._.kb_ents, linked._.nil_reason, linked._.candidates))
                    rows.append((ds, setting, len(kept), pct(sum(kept) / len(kept)), len(absent),
                                 pct(sum(absent) / len(absent), 1), pct(common, 1),
                                 f"{built:.1f}" if threshold == "auto" else ""))
                    shown[(ds, setting)] = said[:SHOWN]
                xyzzy = linker.engine.link(["xyzzy syndrome"])[0]
                shown[("'xyzzy syndrome'", setting)] = [
                    described(xyzzy.cui, xyzzy.kb_ents, xyzzy.nil_reason, xyzzy.candidates)]
    print(f"{cpu_description()}\nMEDIC less {len(removed)} of the dev sets' {len(gold)} gold concepts "
          f"({len(names) - len(kept_names)} of {len(names)} names); encoder {encoder}\n")
    print_table(("dev set", "nil_threshold, corpus", "kept mentions", "kept cui_acc", "absent mentions", "absent left NIL %",
                 "common words linked %", "build s"), sorted(rows, key=lambda r: r[0]))
    for (where, setting), said in shown.items():
        print(f"\n{where}, {setting}:\n  " + "\n  ".join(said))


def described(cui, kb_ents, nil_reason, candidates) -> str:
    """A link as the table's examples show it: the ID and score, or NIL, why, and the best name."""
    if cui is not None:
        return f"{cui} ({kb_ents[0][1]:.3f}, {candidates[0].name!r})"
    best = f"; best {candidates[0].name!r} {candidates[0].score:.3f}" if candidates else ""
    return f"NIL ({nil_reason}{best})"


if __name__ == "__main__":
    main()
