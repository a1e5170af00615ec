"""Copy one BioSyn dataset (queries and dictionaries) and its raw train and
dev abstracts (PubTator) into assets/, with the vocabularies of the other
entity types the corpus annotates.

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
from typing import List, Tuple

import typer

PARTS = ("processed_train", "processed_dev", "train_dictionary.txt", "dev_dictionary.txt")
# The raw abstracts (the corpora's own releases): dev for linking whole
# documents, train and dev for the NER.
RAW = {
    "ncbi-disease": {"train": "ncbi-disease/raw/NCBItrainset_corpus.txt", "dev": "ncbi-disease/raw/NCBIdevelopset_corpus.txt"},
    "bc5cdr-disease": {"train": "bc5cdr/raw/CDR_TrainingSet.PubTator.txt", "dev": "bc5cdr/raw/CDR_DevelopmentSet.PubTator.txt"},
}
# Vocabularies for the other entity types the corpus annotates, written to
# <dest>/routes/<label>.txt for `index --routes-dir`. No chemical vocabulary is
# public offline: the chemicals BC5CDR's training abstracts annotate (every
# mention with its MeSH ID, from an asset project.yml declares) stand in.
ROUTES = {"bc5cdr-disease": {"Chemical": "train"}}


def main(
    dataset: str = typer.Argument(..., help="e.g. ncbi-disease, bc5cdr-disease"),
    dest: Path = typer.Argument(..., help="Folder to create, e.g. assets/ncbi-disease"),
    source: Path = typer.Option(Path("../shared/data"), help="Folder holding <dataset>/ or <dataset>.tar.gz"),
    pool: str = typer.Option(
        "", help="Comma-separated datasets whose raw train and dev abstracts the NER trains on as well "
        "(copied to <dest>/pool/<split>/); the dataset itself is skipped"
    ),
) -> None:
    origin = dataset_folder(source, dataset)
    missing = [part for part in PARTS if not (origin / part).exists()]
    if missing:
        sys.exit(
            f"{origin} lacks {', '.join(missing)}. Download the {dataset} archive linked from "
            "https://github.com/dmis-lab/BioSyn#datasets (`spacy project assets` does), and pass the "
            "folder holding it as --source."
        )
    dest.mkdir(parents=True, exist_ok=True)
    for part in PARTS:
        target = dest / part
        if (origin / part).is_dir():
            shutil.copytree(origin / part, target, dirs_exist_ok=True)
        else:
            shutil.copy2(origin / part, target)
    print(f"Copied {', '.join(PARTS)} from {origin} to {dest}")
    raw = {split: raw_path(source, dataset, split) for split in ("train", "dev")}
    for split, path in raw.items():
        target = dest / f"raw_{split}.PubTator.txt"
        if path.exists():
            shutil.copy2(path, target)
            print(f"Copied {path} to {target}")
        else:
            print(f"No raw {split} abstracts at {path}: the steps that need {target.name} will not run")
    copy_pool(source, dataset, [name.strip() for name in pool.split(",") if name.strip()], dest / "pool")
    (dest / "routes").mkdir(exist_ok=True)  # empty: every label links against the dictionary
    for label, split in ROUTES.get(dataset, {}).items():
        target = dest / "routes" / f"{label}.txt"
        names = annotated_names(raw[split], label)
        target.write_text("".join(f"{cui}||{name}\n" for cui, name in names), encoding="utf-8")
        print(f"Wrote the {len(names)} {label} names of {raw[split]} to {target}")


def raw_path(source: Path, dataset: str, split: str) -> Path:
    return source / RAW.get(dataset, {}).get(split, f"{dataset}/raw_{split}.PubTator.txt")


def copy_pool(source: Path, dataset: str, pooled: List[str], dest: Path) -> None:
    """The other datasets' raw abstracts as <dest>/<split>/<dataset>.PubTator.txt
    (the folders exist, empty, when nothing is pooled: convert reads them all)."""
    for split in ("train", "dev"):
        folder = dest / split
        if folder.exists():
            shutil.rmtree(folder)  # a dataset no longer pooled must not linger
        folder.mkdir(parents=True)
        for other in pooled:
            if other == dataset:
                continue
            path = raw_path(source, other, split)
            if not path.exists():
                sys.exit(f"--pool {other}: no raw {split} abstracts at {path}")
            shutil.copy2(path, folder / f"{other}.PubTator.txt")
            print(f"Copied {path} to {folder} (pooled for the NER)")


def dataset_folder(source: Path, dataset: str) -> Path:
    """The folder holding the dataset's PARTS: <source>/<dataset>, once
    <source>/<dataset>.tar.gz is unpacked into <source> when they are
    missing there (`spacy project assets` puts the raw abstracts in
    <source>/<dataset>/raw/ first, so that folder alone says nothing). The
    source then has the layout of the shared data folder, which the example's
    --data reads; an archive with another top folder is searched."""
    origin = source / dataset
    archive = source / f"{dataset}.tar.gz"
    if all((origin / part).exists() for part in PARTS) or not archive.exists():
        return origin
    with tarfile.open(archive) as tar:
        tops = sorted({Path(member.name).parts[0] for member in tar.getmembers() if Path(member.name).parts})
        tar.extractall(source, filter="data")  # no paths outside the folder, no devices
    print(f"Unpacked {archive} into {source}")
    if all((origin / part).exists() for part in PARTS):
        return origin
    found = sorted(path.parent for top in tops for path in (source / top).rglob(PARTS[0]) if path.is_dir())
    return found[0] if found else origin


def annotated_names(pubtator: Path, label: str) -> List[Tuple[str, str]]:
    """(MeSH ID, mention) of every `label` annotation with an ID, once each."""
    from spacy_biosyn.corpora.readers import read_pubtator

    names = {
        (annotation.cui, " ".join(annotation.text.split()))
        for document in read_pubtator(pubtator) for annotation in document.annotations
        if annotation.label == label and annotation.cui not in ("", "-1")
    }
    return sorted(names)


if __name__ == "__main__":
    typer.run(main)
