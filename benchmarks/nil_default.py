"""nil_threshold "auto" against no threshold and a threshold tuned on the
same dev set, on gold spans and end to end, for each linker.

    python -m benchmarks.nil_default DATASET NER_PIPELINE NAME=PIPELINE [NAME=PIPELINE ...] [--thresholds 0.9,0.97]
        [--checkout DIR]

Each linker links the dataset's raw dev abstracts twice, once on the gold
Disease spans and once behind the NER (its components, then the linker),
with no threshold; each threshold then re-reads the same links, as tune-nil
does: a span whose best score is below it gets no ID. The rows: none; what
"auto" is for the linker (measured for its encoder's weights, or derived
from its vocabulary); the threshold derived from the vocabulary even where
one was measured; the one `tune-nil` chooses on these very abstracts (best
end-to-end link F: an optimistic ceiling); and any --thresholds. Gold spans:
cui_acc (a gold span left NIL is a miss) and the share left NIL. End to
end: strict linking P/R/F and document-level ID F. Common words: the share
of the 1,000 most frequent English words (wordfreq) that get an ID, each
linked alone. IDs compare through MEDIC's namespaces, the datasets' own
ID systems (MeSH and OMIM, bare or prefixed), whatever the checkout. --checkout
runs it all with another checkout of spacy-biosyn (an older commit in a git
worktree), its package first on the path.
"""
import sys
from pathlib import Path

from benchmarks.common import RAW_ABSTRACTS, parser, pct, print_table

LABELS = ["Disease"]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("ner", help="a pipeline whose components find Disease entities")
    p.add_argument("linkers", nargs="+", help="NAME=PIPELINE with a biosyn_linker")
    p.add_argument("--thresholds", default="", help="more thresholds to show, comma-separated")
    p.add_argument("--checkout", type=Path, help="another spacy-biosyn checkout to measure")
    args = p.parse_args()
    if args.checkout:
        sys.path.insert(0, str(args.checkout.resolve()))
    import spacy
    from wordfreq import top_n_list

    from spacy_biosyn.corpora.docs import pubtator_to_examples
    from spacy_biosyn.corpora.readers import NCBI_LABELS, read_pubtator
    from spacy_biosyn.evaluation.end_to_end import end_to_end_scores, linked_examples
    from spacy_biosyn.evaluation.nil import nil_threshold_sweep, unlinked_below
    from spacy_biosyn.kb.namespaces import MEDIC_NAMESPACES as namespaces
    from spacy_biosyn.names import PIPE_NAME
    from spacy_biosyn.pipeline.accuracy import link_scores
    from spacy_biosyn.search.nil_default import derived_nil_default

    documents = read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"])
    rows, sources = [], []
    for name, _, path in (spec.partition("=") for spec in args.linkers):
        nlp = spacy.load(path)
        pipe = nlp.get_pipe(PIPE_NAME)
        auto = pipe.engine.vocabulary().nil_default
        derived = derived_nil_default(pipe.engine.vocabulary())
        sources.append(f"{name}: auto {auto.threshold} ({auto.source}); derived {derived.threshold} ({derived.source})")
        pipe.nil_threshold = None  # every threshold is applied below
        common = [link.kb_ents[0][1] if link and link.kb_ents else None
                  for link in pipe.engine.link(top_n_list("en", 1000))]
        gold = pubtator_to_examples(nlp, documents, {*LABELS, *NCBI_LABELS})  # NCBI's four types are diseases
        for _ in pipe.pipe(eg.predicted for eg in gold):
            pass
        text = spacy.load(args.ner)
        text.add_pipe(PIPE_NAME, source=nlp)
        ended = linked_examples(text, documents, NCBI_LABELS)
        tuned = nil_threshold_sweep(ended, LABELS, "link_f", id_namespaces=namespaces)[0][0]
        chosen = [("none", None), ("auto", auto.threshold), ("derived", derived.threshold), ("tuned on dev", tuned)]
        chosen += [("given", float(t)) for t in args.thresholds.split(",") if t]
        for label, threshold in chosen:
            with unlinked_below(gold, threshold), unlinked_below(ended, threshold):
                on_gold = link_scores(gold, id_namespaces=namespaces)
                nil = sum(e._.cui is None for eg in gold for e in eg.predicted.ents) / on_gold["n"]
                scores = end_to_end_scores(ended, LABELS, id_namespaces=namespaces)
            linked_words = sum(s is not None and (threshold is None or s >= threshold) for s in common) / len(common)
            rows.append((name, label, "-" if threshold is None else threshold, pct(on_gold["link_cui_acc"]), pct(nil),
                         pct(scores["link_p"]), pct(scores["link_r"]), pct(scores["link_f"]), pct(scores["doc_f"]),
                         pct(linked_words, 1)))
    print(f"{args.dataset}: raw dev abstracts, Disease; NER: {args.ner}")
    print("\n".join(sources) + "\n")
    print_table(("linker", "nil_threshold", "value", "gold cui_acc", "gold NIL %", "link P", "link R", "link F",
                 "doc F", "common words linked %"), rows)



if __name__ == "__main__":
    main()
