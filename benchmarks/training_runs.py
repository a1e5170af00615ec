"""Tables of finished training runs, from their config.cfg and log.jsonl.

    python -m benchmarks.training_runs training/ncbi-s0 training/ncbi-s1 ... [--epochs]

One row per run (setting, dev Acc@1/Acc@5 at the start, at the best dev
check and at the last, time per epoch), the mean and spread over the runs
given of the best and of the last Acc@1, and with --epochs every dev check
of every run (loss, candidate recall@k on dev, Acc@1/Acc@5, lambda, seconds).
A check is named by its epoch, and its step where a run checked inside epochs.
"""
import argparse
import json
import statistics
from pathlib import Path

from spacy.util import load_config

from benchmarks.common import pct, print_table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", type=Path, help="training output folders")
    p.add_argument("--epochs", action="store_true", help="also print every epoch")
    args = p.parse_args()
    rows, best_scores, last_scores = [], [], []
    for run in args.runs:
        log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
        config = load_config(run / "config.cfg", interpolate=False)
        training = config["training"]
        # The earliest of equal checks, as the trainer keeps it.
        best = max(log, key=lambda r: r["dev_link_acc_1"])
        last = log[-1]
        best_scores.append(best["dev_link_acc_1"])
        last_scores.append(last["dev_link_acc_1"])
        rows.append(
            (
                run.name,
                training["objective"]["@losses"].split(".")[1],
                training["dense_ratio"],
                config["system"]["seed"],
                f"{pct(log[0]['dev_link_acc_1'])}/{pct(log[0]['dev_link_acc_5'])}",
                _check(best),
                f"{pct(best['dev_link_acc_1'])}/{pct(best['dev_link_acc_5'])}",
                _check(last),
                f"{pct(last['dev_link_acc_1'])}/{pct(last['dev_link_acc_5'])}",
                f"{sum(r['seconds'] for r in log[1:]) / max(1, last['epoch']):.0f}",
                f"{sum(r['seconds'] for r in log) / 60:.0f}",
            )
        )
    print_table(
        ("run", "objective", "alpha", "seed", "start acc@1/5", "best check", "best acc@1/5",
         "last check", "last acc@1/5", "s/epoch", "total min"),
        rows,
    )
    if len(args.runs) > 1:
        for label, scores in (("best", best_scores), ("last", last_scores)):
            print(f"\n{label} dev Acc@1 over {len(scores)} runs: mean {statistics.mean(scores):.2f}, "
                  f"sd {statistics.stdev(scores):.2f}, min {min(scores):.2f}, max {max(scores):.2f}")
    if args.epochs:
        for run in args.runs:
            print(f"\n{run}")
            log = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
            recall = next(key for key in log[0] if key.startswith("dev_recall@"))
            print_table(
                ("check", "loss", recall, "acc@1", "acc@5", "lambda", "seconds"),
                [
                    (
                        _check(r),
                        "-" if r["loss"] is None else f"{r['loss']:.4f}",
                        pct(r[recall], 1),
                        pct(r['dev_link_acc_1']),
                        pct(r['dev_link_acc_5']),
                        f"{r['sparse_weight']:.3f}",
                        r["seconds"],
                    )
                    for r in log
                ],
            )


def _check(record: dict) -> str:
    """A dev check's name: its epoch, and its step if the run logged steps."""
    return f"{record['epoch']}" if "step" not in record else f"{record['epoch']} (step {record['step']})"


if __name__ == "__main__":
    main()
