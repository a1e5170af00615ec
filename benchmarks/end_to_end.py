"""Raw text in, IDs out: text pipelines (NER + linker) scored on a dataset's
raw dev abstracts, one row each, and the spans one changes against another.

    python -m benchmarks.end_to_end DATASET NAME=PIPELINE [NAME=PIPELINE ...] [--label Disease [--label Chemical]] [--changes 10]

For each pipeline: NER P/R/F strict (exact span and type) and lenient (a
predicted span overlapping a gold one of its type), linking P/R/F (strict,
span._.cui a gold ID), document-level ID P/R/F (BioCreative V CDR's
measure), and abstracts/s of nlp.pipe over the dev abstracts (load
excluded). With two or more pipelines, the first is the baseline: the gold
spans the last one finds with a gold ID that the baseline did not (fixed)
and the other way round (broken), with --changes examples each.
"""
import time

from benchmarks.common import RAW_ABSTRACTS, parser, print_table


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("pipelines", nargs="+", help="NAME=PIPELINE, the baseline first")
    p.add_argument("--label", action="append", default=None,
                   help="score this entity label only (default: all); repeated, a row per label from one run")
    p.add_argument("--changes", type=int, default=10)
    args = p.parse_args()

    import spacy
    from spacy.training import Example

    from spacy_biosyn.corpora.docs import pubtator_to_doc
    from spacy_biosyn.corpora.readers import NCBI_LABELS, read_pubtator
    from spacy_biosyn.evaluation.end_to_end import END_TO_END_TASKS, end_to_end_scores
    from spacy_biosyn.kb.namespaces import ConceptKeys
    from spacy_biosyn.names import PIPE_NAME
    from spacy_biosyn.kb.namespaces import cui_is_gold

    documents = read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"])
    rows, right = [], {}
    for name, _, path in (spec.partition("=") for spec in args.pipelines):
        nlp = spacy.load(path)
        start = time.perf_counter()
        docs = list(nlp.pipe(document.text for document in documents))
        rate = len(docs) / (time.perf_counter() - start)
        examples = [Example(doc, pubtator_to_doc(nlp, d, label_map=NCBI_LABELS)) for doc, d in zip(docs, documents)]
        namespaces = nlp.get_pipe(PIPE_NAME).engine.score_namespaces()
        keys = ConceptKeys(namespaces)
        for label in args.label or [None]:
            scores = end_to_end_scores(examples, None if label is None else [label], id_namespaces=namespaces)
            rows.append((name, label or "all", *(f"{100 * scores[f'{task}_{m}']:.2f}" for task in END_TO_END_TASKS for m in "prf"),
                         f"{rate:.1f}"))
        # gold spans (doc, start, end) linked to a gold ID, for fixed/broken
        right[name] = {
            (i, a.start, a.end): (d.text[a.start:a.end], a.cui)
            for i, (doc, d) in enumerate(zip(docs, documents))
            for a in d.annotations
            if (args.label is None or NCBI_LABELS.get(a.label, a.label) in args.label)
            and any(e.start_char == a.start and e.end_char == a.end and cui_is_gold(e._.cui, a.cui, keys) for e in doc.ents)
        }
    header = ("pipeline", "label", *(f"{task} {m.upper()}" for task in END_TO_END_TASKS for m in "prf"), "abstracts/s")
    print(f"{args.dataset} dev, {len(documents)} abstracts\n")
    print_table(header, rows)
    if len(right) > 1:
        (base, base_right), (last, last_right) = list(right.items())[0], list(right.items())[-1]
        for title, keys in (("fixed", last_right.keys() - base_right.keys()), ("broken", base_right.keys() - last_right.keys())):
            print(f"\n{last} against {base}, {title}: {len(keys)} gold spans, e.g.")
            for key in sorted(keys)[: args.changes]:
                mention, cui = (last_right if title == "fixed" else base_right)[key]
                print(f"  {documents[key[0]].doc_id} {mention!r} {cui}")


if __name__ == "__main__":
    main()
