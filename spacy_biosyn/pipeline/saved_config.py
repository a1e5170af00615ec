"""A pipe's config.cfg against the engine state saved beside it. The pipe
records in the state the settings of its config block the state was made
under (`saved_record`), and a load checks, before the engine reads its
state (`checked_load`), that the pipe's block as its pipeline holds it
(spacy.load's overrides included) and the config.cfg written beside the
save agree with them. The editable settings (EDITABLE_SETTINGS) may differ;
the others made the saved names, vectors, tf-idf and lambda. The engine
keeps the record without reading it: it knows nothing of config.cfg."""
import hashlib
from dataclasses import fields
from pathlib import Path
from typing import Callable, Dict, List, Optional, Protocol, Tuple

import srsly

from ..checks import brief, same_value
from ..encoders.base import RUNTIME_SETTINGS
from ..errors import MismatchError, SavedStateError
from ..linking.data_sources import DataSources
from ..linking.linker_settings import EDITABLE_SETTINGS, SCISPACY_ALIASES, LinkerSettings
from ..parts import SAME_SAVED_STATE
from ..search.index import HOLDING_SETTINGS


class BoundEngine(Protocol):
    """What the checks read of an engine."""

    name: str
    settings: LinkerSettings
    sources: DataSources


def bound_settings(block: Optional[dict]) -> Optional[dict]:
    """The settings the saved state depends on: all but EDITABLE_SETTINGS
    and scispaCy's names for two of them."""
    return None if block is None else {
        key: value for key, value in block.items() if key not in EDITABLE_SETTINGS and key not in SCISPACY_ALIASES
    }


def settings_sha256(block: dict) -> str:
    return hashlib.sha256(srsly.json_dumps(block, sort_keys=True).encode("utf-8")).hexdigest()


def check_loaded_with(path: Path, engine: BoundEngine, saved_bound: Optional[dict], block: Optional[dict]) -> None:
    """Refuse a pipe built with other state-bound settings than the state
    was saved under, however they came (config.cfg, `spacy.load(path,
    config=...)`'s overrides, `spacy assemble`): the pipe would report one
    lambda and score with the saved one, or encode mentions otherwise than
    its names (an encoder's max_length). `block` is the pipe's config as
    its pipeline holds it; without one, the engine's settings are compared.
    The editable ones were checked by the factory like any setting."""
    if saved_bound is None:
        return
    now = bound_settings(block) if block is not None else {
        **engine.settings.model_dump(), "linker_name": engine.sources.linker_name
    }
    changed = [
        difference for key in sorted(now) if key not in _LOADED_NOT_GIVEN and key in saved_bound
        for difference in _differences(key, saved_bound[key], now[key])
    ]
    if changed:
        raise MismatchError(
            f"{engine.name}: {', '.join(f'{k} = {new!r}' for k, _, new in changed)} given on load, but {path} was built "
            f"with {', '.join(f'{k} = {old!r}' for k, old, _ in changed)}: the saved names, vectors, tf-idf and lambda "
            "were made with it. Load it as saved, or rebuild it (python -m spacy_biosyn build, or index); "
            f"{', '.join(EDITABLE_SETTINGS)}, the encoder's {', '.join(_ENCODER_CHOSEN_ON_LOAD)} and the index's "
            f"{', '.join(HOLDING_SETTINGS)} may change on load"
        )


# What a load may be given otherwise than saved: the editable settings;
# the sources initialize() reads, which the saved state replaces (an
# add_pipe with no dictionary, then from_disk); and the re-ranker, checked
# when it is read (the saved one, or none saved).
_LOADED_NOT_GIVEN = (*EDITABLE_SETTINGS, *(f.name for f in fields(DataSources) if f.name != "linker_name"), "reranker")


# An encoder's settings a load may choose: where and how it runs; int8
# weights, which move vectors by batch noise only (the load's probe judges
# it); and how names added later are encoded.
_ENCODER_CHOSEN_ON_LOAD = (*RUNTIME_SETTINGS, "quantize", "names_precision")


def _differences(key: str, saved: object, now: object) -> List[Tuple[str, object, object]]:
    """Each setting below `key` whose value differs, as (dotted name, saved,
    now); an encoder's runtime settings and how an index holds its state
    may differ, and so may an index's version that only added the latter."""
    if isinstance(saved, dict) and isinstance(now, dict):
        # What the save holds: a setting added since has its default, which the save could not name.
        return [
            difference for sub in sorted(saved)
            if not (key == "encoder" and sub in _ENCODER_CHOSEN_ON_LOAD)
            and not (key == "index" and sub in HOLDING_SETTINGS)
            for difference in _differences(f"{key}.{sub}", saved[sub], now.get(sub))
        ]
    if key == "index.@misc" and SAME_SAVED_STATE.get(saved) == now:
        return []
    return [] if same_value(saved, now) else [(key, saved, now)]


def check_config_file(
    path: Path, name: str, saved: Optional[str], saved_bound: Optional[dict], block: Optional[dict]
) -> None:
    """Refuse a config.cfg (its component `block`) whose state-bound
    settings are not those the state was saved under, naming them; the
    editable ones may differ. Saves before the split hashed the whole
    block, which still matches."""
    config_file = path.parent / "config.cfg"
    bound = bound_settings(block)
    if saved is None or block is None or saved in (settings_sha256(bound), settings_sha256(block)):
        return
    # Saves from before scispaCy's names were editable hashed them among the bound settings.
    changed = [difference for key in sorted(set(bound) | set(saved_bound or {})) if key not in SCISPACY_ALIASES
               for difference in _differences(key, (saved_bound or {}).get(key), bound.get(key))]
    if saved_bound is not None and not changed:
        return
    if saved_bound is not None:
        raise MismatchError(
            f"{config_file}: [components.{name}] {', '.join(k for k, _, _ in changed)} "
            f"({'; '.join(f'{old!r} -> {new!r}' for _, old, new in changed)}) "
            "cannot change in a saved pipeline: the saved names, vectors, tf-idf and lambda were made with them. "
            "Rebuild the pipeline (python -m spacy_biosyn build, or index for another dictionary), or put them back; "
            f"{', '.join(EDITABLE_SETTINGS)} may be edited"
        )
    raise MismatchError(
        f"{config_file}'s [components.{name}] is not the block {path} was saved under: a save was "
        "killed after nlp.to_disk wrote config.cfg (spacy_biosyn.save_pipeline saves all or nothing), "
        "or the file was edited. Load the pipeline as saved and change settings with "
        "spacy.load(path, config={...}), then save it again"
    )


def saved_record(block: Optional[dict]) -> Dict[str, object]:
    """What the state keeps of the pipe's block of the config.cfg written
    beside it (None: saved on its own, nothing). nlp.to_disk writes
    config.cfg before the components: a save killed in between leaves new
    settings over the old state, so the state records the settings it was
    saved under, and a load refuses any other."""
    bound = bound_settings(block)
    return {} if bound is None else {"settings_sha256": settings_sha256(bound), "bound_settings": bound}


def checked_load(engine: BoundEngine, block: Optional[dict], file_block: Optional[dict]) -> Callable[[Path, dict], None]:
    """The check a pipe's load runs on the saved state's record (its cfg)
    before the engine reads the state: `block` is the pipe's config block
    as its pipeline now holds it, `file_block` its block of the config.cfg
    beside the save, as the file says it (None: none)."""

    def check(path: Path, cfg: dict) -> None:
        bound = cfg.get("bound_settings")
        if bound is not None and not isinstance(bound, dict):
            raise SavedStateError(f"{path / 'cfg'}: bound_settings must be an object, found {brief(bound)}")
        check_config_file(path, engine.name, cfg.get("settings_sha256"), bound, file_block)
        check_loaded_with(path, engine, bound, block)

    return check
