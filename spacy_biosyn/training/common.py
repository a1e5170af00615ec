"""What both trainers share: the paths a config must give, the output
folder, and the run log of dev checks that picks model-best."""
import json
from pathlib import Path
from typing import Any, Dict, List, Optional

from thinc.api import Config


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
    the best is the first with the highest dev Acc@1."""

    def __init__(self, output_dir: Path):
        self.path = Path(output_dir) / "log.jsonl"
        self.records: List[Dict[str, Any]] = []
        self.best: Optional[Dict[str, Any]] = None

    def add(self, record: Dict[str, Any]) -> bool:
        """Log a check; whether it is the best so far."""
        self.records.append(record)
        self.path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        if self.best is None or record["dev_link_acc_1"] > self.best["dev_link_acc_1"]:
            self.best = record
            return True
        return False
