"""The GPU recipe's check (benchmarks/gpu_check.py), run end to end on the
CPU with the tiny encoder and tiny inputs, so that the script a lent GPU
machine runs cannot rot between the calls that use it."""
import subprocess
import sys
from pathlib import Path

from helpers import DISEASES, NER_ABSTRACTS

from spacy_biosyn.encoders.tiny import make_tiny_encoder

ROOT = Path(__file__).resolve().parents[1]
CONCEPTS = {
    "train/1.concept": "1||0|13||Disease||breast cancer||D001943\n1||18|32||Disease||ovarian cancer||D010051\n",
    "train/2.concept": "2||0|17||Disease||type 2 diabetes||D003924\n2||22|40||Disease||huntington chorea||D006816\n",
    "dev/3.concept": "3||0|16||Disease||mammary carcinoma||D001943\n3||21|38||Disease||paralysis agitans||D010300\n",
}


def test_the_check_runs_every_step_and_tables_them(tmp_path):
    # 512 positions, as a real BERT has: the NER recipe's windows are a real encoder's
    tiny_encoder = make_tiny_encoder(tmp_path / "encoder", max_position_embeddings=512)
    for name, text in CONCEPTS.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "diseases.txt").write_text(DISEASES)
    (tmp_path / "abstracts.txt").write_text(NER_ABSTRACTS)
    table = tmp_path / "table.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.gpu_check", "--workdir", str(tmp_path / "work"), "--device", "cpu",
         "--dictionary", str(tmp_path / "diseases.txt"), "--train", str(tmp_path / "train"), "--dev", str(tmp_path / "dev"),
         "--abstracts", str(tmp_path / "abstracts.txt"), str(tmp_path / "abstracts.txt"),
         "--encoder", f"tiny={tiny_encoder}", "--links", "2", "--ner-steps", "3",
         "--candidates", "4", "--output", str(table)],
        cwd=ROOT, capture_output=True, text=True, env={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line.split(" | ") for line in table.read_text().splitlines() if line.startswith("| tiny")]
    assert [row[1] for row in rows] == ["build, 17 names", "link 2 mentions", "train, 1 epoch", "train-ner, 3 steps"]
    assert "device against CPU: 2/2 IDs the same, largest score difference 0.00e+00" in rows[1][5]
    assert "dev Acc@1" in rows[2][5] and "dev ents F" in rows[3][5]
    assert table.read_text().startswith("Device: CPU (cpu)")
