"""The README runs as written: its use snippet (on a small MEDIC excerpt in
place of the whole dictionary, with the default encoder), and its links."""
import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"
MEDIC_EXCERPT = """\
114480|D001943||breast cancer
D001943||breast neoplasms
D010051|167000||ovarian cancer
D010051||ovarian neoplasms
D061325||hereditary breast and ovarian cancer syndrome
C567755|613097||tooth agenesis selective 6
"""


def python_block(section: str) -> str:
    text = README.read_text(encoding="utf-8")
    body = text[text.index(f"\n## {section}\n"):]
    return re.search(r"```python\n(.*?)```", body, re.S).group(1)


def test_the_use_snippet_links_a_composite_and_looks_its_concepts_up(tmp_path):
    snippet = python_block("Use")
    dictionary = '"../shared/data/ncbi-disease/train_dictionary.txt"'
    assert dictionary in snippet
    (tmp_path / "medic.txt").write_text(MEDIC_EXCERPT)
    (tmp_path / "snippet.py").write_text(snippet.replace(dictionary, '"medic.txt"'))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("breast and ovarian cancer -> D001943|D010051 [('D001943',")
    assert [line.split()[:2] for line in lines[1:3]] == [["D001943", "breast"], ["D010051", "ovarian"]]
    assert (tmp_path / "linker" / "config.cfg").exists()


def test_every_link_to_the_docs_leads_to_a_page():
    pages = [README, *sorted((README.parent / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not target.startswith("http"):
                assert (page.parent / target).is_file(), f"{page.name} links to {target}"
