"""What both trainers share: the paths a config must give, the output
folder, and the run log of dev checks that picks model-best and keeps its
state."""
import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from thinc.api import Config
from wasabi import msg


def required_path(paths: dict, key: str) -> str:
    """paths.KEY of a resolved config, or an error saying how to give it."""
    if not paths.get(key):
        raise ValueError(f"paths.{key} is not set: give it in the config or as --paths.{key} PATH")
    return paths[key]


def start_output(config: Config, output_dir: Path) -> Path:
    """The output folder, holding the config as run (overrides applied)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    config.to_disk(output_dir / "config.cfg")
    return output_dir


class RunLog:
    """The dev checks of a run, one record each, written whole to
    OUTPUT/log.jsonl after every check (a killed run leaves whole lines);
    the best is the first with the highest dev Acc@1, and the model's state
    at that check is kept for model-best. Both trainers log through it."""

    def __init__(self, output_dir: Path):
        self.path = Path(output_dir) / "log.jsonl"
        self.records: List[Dict[str, Any]] = []
        self.best: Optional[Dict[str, Any]] = None
        self.best_state: Any = None
        self.since = time.perf_counter()

    def check(self, record: Dict[str, Any], line: str, state: Callable[[], Any]) -> bool:
        """Log a dev check, its record timed from the end of the last one (the
        run's time is their sum), and print `line` with that time; when it
        is the best so far, keep `state()`, the model as it is now. Whether
        it is the best."""
        record = {**record, "seconds": round(time.perf_counter() - self.since, 1)}
        self.records.append(record)
        self.path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        msg.text(f"{line} | {record['seconds']:.0f}s")
        is_best = self.best is None or record["dev_link_acc_1"] > self.best["dev_link_acc_1"]
        if is_best:
            self.best, self.best_state = record, state()
        self.since = time.perf_counter()
        return is_best

    @property
    def last_is_best(self) -> bool:
        return self.best is self.records[-1]
