"""A saved pipeline's linking engine and its block of config.cfg, read
without spaCy (by confection, as spaCy reads it). What needs no Doc (`link
--mentions`) opens the linker folder's engine.cfg, then applies the
editable settings of the pipeline's config.cfg, since a user may edit them
there (docs/saving-and-processes.md), and `tune-nil --gold-spans` saves
what it chose by such an edit; the pipe checks a load against the same
block."""
import shutil
from pathlib import Path
from typing import Any, Dict, Optional, Union

from confection import Config

from ..errors import SavedStateError
from ..files.storage import replaced_atomically
from ..linking.engine import LinkingEngine
from ..linking.engine_config import ENGINE_CFG
from ..linking.linker_settings import EDITABLE_SETTINGS, from_scispacy
from ..names import PIPE_NAME


def has_saved_engine(pipeline_dir: Path, name: str = PIPE_NAME) -> bool:
    """Whether the pipeline's linker `name` was saved with its engine.cfg."""
    return (Path(pipeline_dir) / name / ENGINE_CFG).is_file()


def open_saved_engine(pipeline_dir: Path, name: str = PIPE_NAME) -> LinkingEngine:
    """The engine of the pipeline's linker `name`, with config.cfg's edits."""
    pipeline_dir = Path(pipeline_dir)
    engine = LinkingEngine.from_disk(pipeline_dir / name)
    engine.configure(_edited_settings(pipeline_dir, name))
    return engine


def save_with_edited_settings(pipeline_dir: Path, output_dir: Path, settings: Dict[str, Any],
                              name: str = PIPE_NAME) -> None:
    """A copy of the pipeline in `output_dir` (replaced whole) whose
    config.cfg gives `name` these editable settings, as a user may edit
    them: the saved state is copied as it is, and loads as it did."""
    refused = [key for key in settings if key not in EDITABLE_SETTINGS]
    if refused:
        raise ValueError(f"{', '.join(refused)}: only {', '.join(EDITABLE_SETTINGS)} may be edited in a saved pipeline")
    pipeline_dir = Path(pipeline_dir)
    config = Config().from_disk(pipeline_dir / "config.cfg", interpolate=False)
    config["components"][name].update(settings)
    with replaced_atomically(output_dir) as staging:
        shutil.copytree(pipeline_dir, staging, dirs_exist_ok=True)
        config.to_disk(staging / "config.cfg")


def _edited_settings(pipeline_dir: Path, name: str) -> Dict[str, Any]:
    """The editable settings config.cfg's block of `name` gives, scispaCy's names read as ours."""
    block = saved_config_block(pipeline_dir / name, name)
    if block is None:
        if (pipeline_dir / "config.cfg").is_file():
            raise SavedStateError(f"{pipeline_dir / 'config.cfg'} is not a config file spaCy reads, "
                                  f"or has no [components.{name}] block")
        return {}
    given = from_scispacy(name, block)
    return {key: given[key] for key in EDITABLE_SETTINGS if key in given}


def saved_config_block(component_path: Union[str, Path], name: str) -> Optional[Dict[str, Any]]:
    """The component's block of the config.cfg of the pipeline saved beside
    `component_path`, as the file says it; None where there is none (a
    component saved on its own) or spaCy's config reader refuses the file
    (spacy.load then reports it)."""
    config_file = Path(component_path).parent / "config.cfg"
    if not config_file.is_file():
        return None
    try:
        return Config().from_disk(config_file, interpolate=False).get("components", {}).get(name)
    except Exception:  # noqa: BLE001: not a config this check can read
        return None
