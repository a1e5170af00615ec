"""Saved pipelines damaged file by file (benchmarks/stress/fuzz_saved.py,
which runs thousands of cases): the first damages of every file a linker
saves are refused in one line naming the file, or link as before; never a
traceback, a signal, a hang or memory past the harness's bound."""
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FILES_A_LINKER_SAVES = 17


def test_the_first_damages_of_every_saved_file_are_refused_or_link_as_before():
    cases = 3 * FILES_A_LINKER_SAVES
    done = subprocess.run([sys.executable, "-m", "benchmarks.stress.fuzz_saved", "--cases", str(cases)],
                          cwd=REPO, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{cases} cases in" in done.stdout and "findings" not in done.stdout, done.stdout
