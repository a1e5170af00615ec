"""The project's data step: what `spacy project assets` downloads is enough to run on."""
import hashlib
import shutil
import subprocess
import sys
import tarfile
from collections import Counter
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.tokens import DocBin

from spacy_biosyn.corpora.readers import read_pubtator
from spacy_biosyn.ner.guidelines import GUIDELINE_KEY

ROOT = Path(__file__).parents[1]


def test_every_asset_with_a_url_lands_where_the_data_step_reads(tmp_path):
    assets = srsly.read_yaml(ROOT / "project.yml")["assets"]
    assert assets and all(asset["url"].startswith("https://") for asset in assets)
    assert all(asset["dest"].startswith("assets/downloads/") for asset in assets)
    # Every plain file is checksummed; the archives are unpacked by the data step.
    assert all("checksum" in asset for asset in assets if not asset["dest"].endswith(".tar.gz"))


def test_the_data_step_unpacks_a_downloaded_archive(tmp_path):
    dataset = tmp_path / "build" / "ncbi-disease"
    for folder in ("processed_train", "processed_dev"):
        (dataset / folder).mkdir(parents=True)
        (dataset / folder / "1.concept").write_text("1||0|5||Disease||tumor||D009369\n")
    for dictionary in ("train_dictionary.txt", "dev_dictionary.txt"):
        (dataset / dictionary).write_text("D009369||tumor\n")
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    with tarfile.open(downloads / "ncbi-disease.tar.gz", "w:gz") as tar:
        tar.add(dataset, arcname="ncbi-disease")
    dest = tmp_path / "assets"
    subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "fetch_data.py"), "ncbi-disease", str(dest), "--source", str(downloads)],
        check=True, capture_output=True,
    )
    assert (dest / "processed_dev" / "1.concept").read_text() == "1||0|5||Disease||tumor||D009369\n"
    assert (dest / "train_dictionary.txt").exists()


# What each asset of project.yml is, in the data folder: the archives are
# BioSyn's dataset folders packed, the plain files copies of the same bytes.
ARCHIVED = {"assets/downloads/ncbi-disease.tar.gz": "ncbi-disease", "assets/downloads/bc5cdr-disease.tar.gz": "bc5cdr-disease"}
PARTS = ("processed_train", "processed_dev", "train_dictionary.txt", "dev_dictionary.txt")


def lay_out_assets(project: Path, data: Path) -> None:
    """Every asset of project.yml at its dest, as `spacy project assets` writes
    it (downloads into assets/downloads/...), from the local copies."""
    for asset in srsly.read_yaml(ROOT / "project.yml")["assets"]:
        dest = project / asset["dest"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        if asset["dest"] in ARCHIVED:
            name = ARCHIVED[asset["dest"]]
            with tarfile.open(dest, "w:gz") as tar:
                for part in PARTS:
                    tar.add(data / name / part, arcname=f"{name}/{part}")
        else:
            local = data / asset["dest"].removeprefix("assets/downloads/")
            shutil.copy2(local, dest)
            assert hashlib.md5(dest.read_bytes()).hexdigest() == asset["checksum"], asset["dest"]


@pytest.mark.parametrize("dataset, pool", [("ncbi-disease", ""), ("bc5cdr-disease", "ncbi-disease")])
def test_the_project_runs_from_its_own_assets(tmp_path, shared_data, dataset, pool):
    project = tmp_path / "project"
    project.mkdir()
    for part in ("project.yml", "scripts", "configs"):
        (shutil.copytree if (ROOT / part).is_dir() else shutil.copy2)(ROOT / part, project / part)
    lay_out_assets(project, shared_data)
    for command in ("data", "convert-ner"):
        result = subprocess.run(
            [sys.executable, "-m", "spacy", "project", "run", command, str(project),
             "--vars.dataset", dataset, "--vars.data_source", "assets/downloads", *(["--vars.ner_pool", pool] if pool else [])],
            capture_output=True, text=True, timeout=600,
        )
        assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    # the downloads now have the data folder's layout, which the example's --data reads
    downloads = project / "assets" / "downloads" / dataset
    assert (downloads / "train_dictionary.txt").exists() and (downloads / "processed_train").is_dir()
    assets = project / "assets" / dataset
    assert len(list((assets / "processed_dev").glob("*.concept"))) == len(list((shared_data / dataset / "processed_dev").glob("*.concept")))
    assert (assets / "raw_train.PubTator.txt").stat().st_size > 0
    assert (project / "corpus" / dataset / "ner-dev.spacy").stat().st_size > 0
    # The pooled dataset's abstracts are copied beside the dataset's and trained on too.
    pooled = sorted(path.name for path in (assets / "pool" / "train").iterdir())
    assert pooled == ([f"{pool}.PubTator.txt"] if pool else [])
    docs = DocBin().from_disk(project / "corpus" / dataset / "ner-train.spacy")
    assert len(docs) == sum(len(read_pubtator(path)) for path in [assets / "raw_train.PubTator.txt", *(assets / "pool" / "train").iterdir()])
    # each document keeps its corpus, for the guideline heads (--vars.ner_recipe guidelines)
    guidelines = Counter(doc.user_data[GUIDELINE_KEY] for doc in docs.get_docs(spacy.blank("en").vocab))
    assert set(guidelines) == {dataset, *([pool] if pool else [])}
    routes = sorted(path.name for path in (assets / "routes").iterdir())
    if dataset == "bc5cdr-disease":
        assert routes == ["Chemical.txt"]
        assert "d004317||doxorubicin" in (assets / "routes" / "Chemical.txt").read_text().lower()
    else:
        assert routes == []
