"""Copy one BioSyn dataset (queries and dictionaries) and its raw train and
dev abstracts (PubTator) into assets/.

The data is public (BioSyn's archives, linked from
https://github.com/dmis-lab/BioSyn#datasets, and the corpora's releases:
`spacy project assets` downloads them to assets/downloads); this environment
keeps a copy in ../shared/data, which is the default source. A source that
holds the dataset's archive (<dataset>.tar.gz) rather than its folder has it
unpacked first. Test splits are not copied.
"""
import shutil
import sys
import tarfile
from pathlib import Path

import typer

PARTS = ("processed_train", "processed_dev", "train_dictionary.txt", "dev_dictionary.txt")
# The raw abstracts (the corpora's own releases): dev for linking whole
# documents, train and dev for the NER.
RAW = {
    "ncbi-disease": {"train": "ncbi-disease/raw/NCBItrainset_corpus.txt", "dev": "ncbi-disease/raw/NCBIdevelopset_corpus.txt"},
    "bc5cdr-disease": {"train": "bc5cdr/raw/CDR_TrainingSet.PubTator.txt", "dev": "bc5cdr/raw/CDR_DevelopmentSet.PubTator.txt"},
}
# Vocabularies for the other entity types the corpus annotates, copied to
# <dest>/routes/<label> for `index --routes-dir`. No chemical vocabulary is
# public offline: BC5CDR's training chemicals (BioSyn's un-preprocessed
# queries) stand in for one.
ROUTES = {"bc5cdr-disease": {"Chemical": "bc5cdr-chemical/train"}}


def main(
    dataset: str = typer.Argument(..., help="e.g. ncbi-disease, bc5cdr-disease"),
    dest: Path = typer.Argument(..., help="Folder to create, e.g. assets/ncbi-disease"),
    source: Path = typer.Option(Path("../shared/data"), help="Folder holding <dataset>/"),
) -> None:
    origin = source / dataset
    archive = source / f"{dataset}.tar.gz"
    if not origin.exists() and archive.exists():
        with tarfile.open(archive) as tar:
            tar.extractall(source, filter="data")  # no paths outside source, no devices
        print(f"Unpacked {archive}")
    missing = [part for part in PARTS if not (origin / part).exists()]
    if missing:
        sys.exit(
            f"{origin} lacks {', '.join(missing)}. Download the {dataset} archive linked from "
            "https://github.com/dmis-lab/BioSyn#datasets, unpack it, and pass its parent folder "
            "as --source."
        )
    dest.mkdir(parents=True, exist_ok=True)
    for part in PARTS:
        target = dest / part
        if (origin / part).is_dir():
            shutil.copytree(origin / part, target, dirs_exist_ok=True)
        else:
            shutil.copy2(origin / part, target)
    print(f"Copied {', '.join(PARTS)} from {origin} to {dest}")
    (dest / "routes").mkdir(exist_ok=True)  # empty: every label links against the dictionary
    for label, part in ROUTES.get(dataset, {}).items():
        shutil.copytree(source / part, dest / "routes" / label, dirs_exist_ok=True)
        print(f"Copied {source / part} to {dest / 'routes' / label}")
    for split in ("train", "dev"):
        raw = source / RAW.get(dataset, {}).get(split, f"{dataset}/raw_{split}.PubTator.txt")
        target = dest / f"raw_{split}.PubTator.txt"
        if raw.exists():
            shutil.copy2(raw, target)
            print(f"Copied {raw} to {target}")
        else:
            print(f"No raw {split} abstracts at {raw}: the steps that need {target.name} will not run")


if __name__ == "__main__":
    typer.run(main)
