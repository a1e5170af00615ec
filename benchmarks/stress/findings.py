"""The adversarial review's findings (issue 64), each replayed as a user
meets it, in a process of its own and a fresh folder, and printed as one
table: what it does now, and with --checkout what another checkout of
spacy-biosyn (an older commit in a git worktree) did.

    python -m benchmarks.stress.findings [--checkout DIR] [--group state|cache|inputs] [--only WORD] [--timeout 180]

The cases live in findings_state.py (saved pipelines, settings, runs,
scores), findings_cache.py (downloads and the named-linker cache) and
findings_inputs.py (inputs and outputs of the command line); each is
`(finding, run)`, `run(workdir)` returning (held, what it did).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Tuple

from benchmarks.common import print_table

REPO = Path(__file__).resolve().parents[2]
Case = Tuple[str, Callable[[Path], Tuple[bool, str]]]


GROUPS = ("state", "cache", "inputs")


def all_cases() -> List[Tuple[str, Case]]:
    """(group, case) of every finding, the groups in GROUPS' order."""
    from benchmarks.stress import findings_cache, findings_inputs, findings_state

    modules = {"state": findings_state, "cache": findings_cache, "inputs": findings_inputs}
    return [(group, case) for group in GROUPS for case in modules[group].CASES]


def run_one(index: int) -> None:
    """Run case `index` here and print its outcome as JSON (the child's job)."""
    _, (finding, run) = all_cases()[index]
    with tempfile.TemporaryDirectory(prefix="finding-") as work:
        try:
            held, what = run(Path(work))
        except Exception as error:  # noqa: BLE001: a case that fails is an outcome to report
            held, what = False, f"the case itself failed: {type(error).__name__}: {str(error)[:120]}"
    print(json.dumps({"held": bool(held), "what": what}))


def outcome(index: int, package: Path, timeout: float) -> Tuple[bool, str]:
    """Case `index` in a child process whose spacy_biosyn is `package`'s
    and whose benchmarks are this checkout's."""
    with tempfile.TemporaryDirectory(prefix="findings-runner-") as here:
        (Path(here) / "benchmarks").symlink_to(REPO / "benchmarks")
        env = {**os.environ, "PYTHONPATH": str(package), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        try:
            done = subprocess.run([sys.executable, "-m", "benchmarks.stress.findings", "--case", str(index)],
                                  cwd=here, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return False, f"no answer in {timeout:.0f} s"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return False, f"the case's process ended with code {done.returncode}: {done.stderr.strip()[-120:]!r}"
    result = json.loads(lines[-1])
    return result["held"], result["what"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkout", type=Path, help="another spacy-biosyn checkout, for a 'before' column")
    p.add_argument("--only", help="only the findings whose name holds this word")
    p.add_argument("--group", choices=GROUPS, help="only this group's findings")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds a case may take")
    p.add_argument("--case", type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.case is not None:
        run_one(args.case)
        return
    cases = [(i, finding) for i, (group, (finding, _)) in enumerate(all_cases())
             if (not args.only or args.only in finding) and (not args.group or args.group == group)]
    rows, held_now, started = [], 0, time.perf_counter()
    for number, (index, finding) in enumerate(cases, 1):
        print(f"[{number}/{len(cases)}] {finding}", file=sys.stderr, flush=True)
        held, what = outcome(index, REPO, args.timeout)
        held_now += held
        row = [finding, "held" if held else "NOT HELD", what]
        if args.checkout:
            _, before = outcome(index, args.checkout.resolve(), args.timeout)
            row.insert(1, before)
        rows.append(row)
    headers = ["finding", *(["before"] if args.checkout else []), "now", "what it does now"]
    print_table(headers, rows)
    print(f"\n{held_now} of {len(cases)} held, in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
