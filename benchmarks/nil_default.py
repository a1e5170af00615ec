"""Should a linker come with a nil_threshold? Dev scores at fixed thresholds,
on gold spans and end to end, for each dataset's linker.

    python benchmarks/nil_default.py --ner NER_PIPELINE \
        --linker ncbi-disease=PIPELINE --linker bc5cdr-disease=PIPELINE [--thresholds 0.8,0.9,1.0]

Each linker links its dataset's raw dev abstracts twice, once on the gold
Disease spans and once behind the NER (its components, then the linker), with
no threshold; every threshold then re-reads the same links, as tune-nil does:
a span whose best score is below it gets no ID. Gold spans: cui_acc (the
share of gold spans whose span._.cui is gold; a NIL gold span is a miss) and
the share left NIL. End to end: strict linking P/R/F and document-level F
with the unlinked spans kept, and NER F with them dropped (drop_nil).
"""
from common import RAW_ABSTRACTS, parser, pct, print_table

LABELS = ["Disease"]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--ner", required=True, help="a pipeline whose components find Disease entities")
    p.add_argument("--linker", action="append", required=True, help="DATASET=PIPELINE with a biosyn_linker")
    p.add_argument("--thresholds", default="0.7,0.8,0.9,0.95,1.0,1.05")
    args = p.parse_args()

    import spacy

    from spacy_biosyn.accuracy import link_scores
    from spacy_biosyn.corpus import NCBI_LABELS, pubtator_to_examples, read_pubtator
    from spacy_biosyn.evaluation.end_to_end import end_to_end_scores, linked_examples
    from spacy_biosyn.pipeline.annotate import link_score

    thresholds = [None, *(float(t) for t in args.thresholds.split(","))]
    rows = []
    for dataset, _, linker_path in (spec.partition("=") for spec in args.linker):
        documents = read_pubtator(args.data / RAW_ABSTRACTS[dataset]["dev"])
        linker = spacy.load(linker_path)
        linker.get_pipe("biosyn_linker").nil_threshold = None  # every threshold is applied below, "auto"'s too
        gold = pubtator_to_examples(linker, documents, {*LABELS, *NCBI_LABELS})  # NCBI's four types are diseases
        for _ in linker.get_pipe("biosyn_linker").pipe(eg.predicted for eg in gold):
            pass
        text = spacy.load(args.ner)
        text.add_pipe("biosyn_linker", source=linker)
        ended = linked_examples(text, documents, NCBI_LABELS)
        for threshold in thresholds:
            with _thresholded([gold, ended], threshold, link_score):
                on_gold = link_scores(gold)
                nil = sum(e._.cui is None for eg in gold for e in eg.predicted.ents) / on_gold["n"]
                kept = end_to_end_scores(ended, LABELS)
                dropped = end_to_end_scores(ended, LABELS, drop_below=threshold)
            rows.append((dataset, "none" if threshold is None else threshold, pct(on_gold["link_cui_acc"]), pct(nil),
                         pct(kept["link_p"]), pct(kept["link_r"]), pct(kept["link_f"]), pct(kept["doc_f"]),
                         pct(kept["ents_f"]), pct(dropped["ents_f"])))
    print(f"raw dev abstracts, Disease; NER: {args.ner}\n")
    print_table(("dataset", "nil_threshold", "gold cui_acc", "gold NIL %", "link P", "link R", "link F", "doc F",
                 "NER F", "NER F, NIL dropped"), rows)


class _thresholded:
    """Within the block, every linked span scoring under `threshold` has no cui."""

    def __init__(self, example_lists, threshold, link_score):
        self.spans = [
            (span, span._.cui, link_score(span._.parts))
            for examples in example_lists for eg in examples for span in eg.predicted.ents if span._.parts
        ]
        self.threshold = threshold

    def __enter__(self):
        for span, cui, score in self.spans:
            if self.threshold is not None and (score is None or score < self.threshold):
                span._.cui = None

    def __exit__(self, *exc):
        for span, cui, _ in self.spans:
            span._.cui = cui


if __name__ == "__main__":
    main()
