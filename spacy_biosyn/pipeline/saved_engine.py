"""A saved pipeline's linking engine opened without spaCy: what needs no Doc
(`link --mentions`) opens the linker folder's engine.cfg, then applies the
editable settings of the pipeline's config.cfg (read by confection, as
spaCy reads it), since a user may edit them there (docs/saving-and-processes.md)."""
from pathlib import Path
from typing import Any, Dict

from confection import Config

from ..errors import SavedStateError
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
    engine.configure(_edited_settings(pipeline_dir / "config.cfg", name))
    return engine


def _edited_settings(config_file: Path, name: str) -> Dict[str, Any]:
    """The editable settings config.cfg's block of `name` gives, scispaCy's names read as ours."""
    if not config_file.is_file():
        return {}
    try:
        block = Config().from_disk(config_file).get("components", {}).get(name)
    except Exception as error:  # noqa: BLE001: confection raises configparser's many errors
        raise SavedStateError(f"{config_file} is not a config file spaCy reads: {error}") from None
    if not isinstance(block, dict):
        raise SavedStateError(f"{config_file} has no [components.{name}] block")
    given = from_scispacy(name, block)
    return {key: given[key] for key in EDITABLE_SETTINGS if key in given}
