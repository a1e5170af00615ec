"""The project's data step: what `spacy project assets` downloads is enough to run on."""
import subprocess
import sys
import tarfile
from pathlib import Path

import srsly

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
