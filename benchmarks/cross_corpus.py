"""Text pipelines on both disease corpora: each scored on NCBI Disease's and
BC5CDR's raw dev abstracts (Disease spans only), in-corpus and across, and
the gold spans each one misses, by kind.

    python -m benchmarks.cross_corpus NAME=PIPELINE[@DECODE] [...] [--home ncbi-disease=NAME bc5cdr-disease=NAME]

A row per (pipeline, dataset): NER P/R/F (strict) and lenient F, linking
F and document F (benchmarks.end_to_end's measures). Then each missed gold
span (no predicted Disease span at its exact offsets), and each extra
predicted span (no gold one at its offsets), by kind:
- edge: a span of the other side overlaps it: it lies "inside" a longer
  one (a missed "breast cancer" where "hereditary breast cancer" was
  found: a modifier or a coordinated span taken in), lies "around" a
  shorter one ("cancer" found), or the two are "shifted";
- abbreviation: no overlap, and written as one (short, with capitals);
- alone: any other (for a missed span: a mention the NER did not see as a
  disease at all; for an extra one: a mention the corpus does not mark).
With --home DATASET=NAME (the pipeline trained on that dataset's own
guideline), a span another pipeline misses is "guideline" where the home
pipeline finds it, and "model" where it misses it too: what a model
trained the other corpus's way could not learn, against what neither
learned. @DECODE sets a pipeline of guideline heads' `entities.decode`
(configs/ner-guidelines.cfg): "own" decodes each dataset under its own
guideline (GUIDELINES), "union" or a guideline name every dataset alike;
without it, the pipeline's saved setting.
"""
import re
from collections import Counter

from benchmarks.common import RAW_ABSTRACTS, cpu_description, parser, pct, print_table, progress

DATASETS = ("ncbi-disease", "bc5cdr-disease")
# The guideline heads' names of the datasets (convert --guideline).
GUIDELINES = {"ncbi-disease": "ncbi-disease", "bc5cdr-disease": "bc5cdr-disease"}
LABEL = "Disease"
_ABBREVIATION = re.compile(r"^(?=.*[A-Z])[A-Za-z0-9-]{2,8}s?$")


KINDS = ("edge: inside", "edge: around", "edge: shifted", "abbreviation", "alone")


def kind_of(start: int, end: int, text: str, others) -> str:
    """Why a span (start, end) of `text` has no span of the other side
    (`others`: (start, end) pairs) at its offsets (KINDS)."""
    overlapping = [(s, e) for s, e in others if s < end and start < e]
    if overlapping:
        if any(s <= start and end <= e for s, e in overlapping):
            return "edge: inside"
        if any(start <= s and e <= end for s, e in overlapping):
            return "edge: around"
        return "edge: shifted"
    return "abbreviation" if _ABBREVIATION.match(text[start:end]) else "alone"


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipelines", nargs="+", help="NAME=PIPELINE[@DECODE]")
    p.add_argument("--home", nargs="*", default=[], help="DATASET=NAME: the pipeline of that dataset's guideline")
    args = p.parse_args()

    import spacy
    from spacy.training import Example

    from spacy_biosyn.corpora.docs import pubtator_to_doc
    from spacy_biosyn.corpora.readers import NCBI_LABELS, read_pubtator
    from spacy_biosyn.evaluation.end_to_end import end_to_end_scores
    from spacy_biosyn.names import PIPE_NAME

    home = dict(spec.split("=", 1) for spec in args.home)
    print(f"CPU: {cpu_description()}; Disease spans of the raw dev abstracts\n")
    rows, missed, extras, found = [], {}, {}, {}
    for name, _, spec in (spec.partition("=") for spec in args.pipelines):
        path, _, decode = spec.partition("@")
        for dataset in DATASETS:
            documents = read_pubtator(args.data / RAW_ABSTRACTS[dataset]["dev"])
            nlp = spacy.load(path)
            if decode:
                nlp.get_pipe("entities").decode = GUIDELINES[dataset] if decode == "own" else decode
            progress(f"{name} on {dataset}: {len(documents)} abstracts")
            docs = list(nlp.pipe(d.text for d in documents))
            examples = [Example(doc, pubtator_to_doc(nlp, d, label_map=NCBI_LABELS)) for doc, d in zip(docs, documents)]
            scores = end_to_end_scores(examples, [LABEL], id_namespaces=nlp.get_pipe(PIPE_NAME).engine.score_namespaces())
            rows.append((name, dataset, *(pct(scores[f"ents_{m}"]) for m in "prf"), pct(scores["ents_lenient_f"]),
                         pct(scores["link_f"]), pct(scores["doc_f"])))
            kinds, extra = {}, Counter()
            found[name, dataset] = set()
            for i, (doc, document) in enumerate(zip(docs, documents)):
                predicted = {(e.start_char, e.end_char) for e in doc.ents if e.label_ == LABEL}
                gold = {(a.start, a.end) for a in document.annotations if NCBI_LABELS.get(a.label, a.label) == LABEL}
                for start, end in gold:
                    if (start, end) in predicted:
                        found[name, dataset].add((i, start, end))
                    else:
                        kinds[(i, start, end)] = kind_of(start, end, document.text, predicted)
                extra.update(kind_of(start, end, document.text, gold) for start, end in predicted - gold)
            missed[name, dataset] = kinds
            extras[name, dataset] = extra
    print_table(("pipeline", "dev set", "NER P", "NER R", "NER F", "lenient F", "link F", "doc F"), rows)

    table = []
    for (name, dataset), spans in missed.items():
        counts = Counter(spans.values())
        row = [name, dataset, len(spans), *(counts[kind] for kind in KINDS)]
        home_name = home.get(dataset)
        if home_name is not None and home_name != name:
            guideline = sum(1 for span in spans if span in found[home_name, dataset])
            row += [guideline, len(spans) - guideline]
        else:
            row += ["", ""]
        table.append(row)
    print("\nGold spans missed, by kind (edge: inside / around a found span, ...)")
    print_table(("pipeline", "dev set", "missed", *KINDS, "guideline (home finds it)", "model (home misses it too)"),
                table)
    print("\nExtra spans found, by kind (edge: inside / around a gold span, ...)")
    print_table(("pipeline", "dev set", "extra", *KINDS),
                [[name, dataset, sum(counts.values()), *(counts[kind] for kind in KINDS)]
                 for (name, dataset), counts in extras.items()])


if __name__ == "__main__":
    main()
