"""engine.cfg: what a saved linking engine is made of, so that it opens
without spaCy (`LinkingEngine.from_disk`).

It names the engine, its settings and its parts (encoder, index,
abbreviation detector, sieve, concept scorer, re-ranker) as config blocks
of the registered functions that make them, which confection resolves
through the package's catalogue registries (parts.py), as spaCy resolves a
pipeline's config.cfg. The function words of everyday English that alone
link to nothing are saved beside it (stop_words.json). Both files lie in
the save's folder under its manifest (files/manifest.py), which is checked
before either is read.
"""
from pathlib import Path
from typing import Any, Callable, Collection, Dict, NamedTuple, Optional

import srsly
from confection import Config, ConfigValidationError
from confection import registry as confection_registry

from ..checks import brief
from ..errors import SavedStateError
from ..files.storage import read_saved_json
from ..files.manifest import MANIFEST, check_manifest
from ..parts import registry

ENGINE_CFG = "engine.cfg"
STOP_WORDS = "stop_words.json"
# The engine's swappable parts, as LinkingEngine's constructor names them.
PARTS = ("encoder", "index", "abbreviations", "sieve", "concept_scorer", "reranker")


class _PartRegistries(confection_registry):
    """The registries a part's block may name, without spaCy's."""

    misc = registry.misc
    readers = registry.readers


class SavedEngineParts(NamedTuple):
    """What engine.cfg and stop_words.json say, the parts made."""

    name: str
    settings: Dict[str, Any]
    parts: Dict[str, Any]  # each of PARTS, made from its block (None where the engine has none)
    blocks: Dict[str, Optional[dict]]  # the blocks, to save again
    stop_words: Collection[str]


def write_engine_cfg(path: Path, name: str, settings: Dict[str, Any], blocks: Dict[str, Optional[dict]],
                     stop_words: Collection[str]) -> None:
    """Write engine.cfg and stop_words.json into the save's folder `path`."""
    config = Config({"engine": {"name": name}, "settings": settings, "parts": {p: blocks.get(p) for p in PARTS}})
    config.to_disk(path / ENGINE_CFG, interpolate=False)
    srsly.write_json(path / STOP_WORDS, sorted(stop_words))


def engine_cfg_writer(name: str, settings: Dict[str, Any], parts: Dict[str, Any], given: Optional[Dict[str, Any]],
                      own: Dict[str, Optional[dict]], stop_words: Collection[str]) -> Optional[Callable[[Path], None]]:
    """What writes engine.cfg into a save: each part's block is one that
    names itself, else `given`'s (a pipe's config block), else the engine's
    `own` (read from its engine.cfg). Where a part has none, no engine.cfg
    is written where `given` (a pipe's save, which its config.cfg names),
    and ValueError is raised otherwise."""
    blocks = {}
    for part in PARTS:
        live = parts[part]
        block = getattr(live, "config_block", None) or (given or {}).get(part) or own.get(part)
        blocks[part] = block if live is not None and isinstance(block, dict) else None
    missing = [part for part in PARTS if blocks[part] is None and parts[part] is not None]
    if missing and given is None:
        raise ValueError(
            f"{name}: no config block names its {', '.join(missing)}: give them as "
            f"to_disk(path, parts={{{missing[0]!r}: {{'@misc': ...}}}}) for engine.cfg"
        )
    return None if missing else (lambda folder: write_engine_cfg(folder, name, settings, blocks, stop_words))


def read_engine_cfg(path: Path) -> SavedEngineParts:
    """engine.cfg's parts made, its settings as saved (the engine checks
    them), and the stop words; SavedStateError names what is missing or
    not as a save writes it."""
    if not (path / ENGINE_CFG).is_file():
        raise SavedStateError(
            f"{path / ENGINE_CFG} is missing: {path} is not a saved linking engine, or was saved before engines "
            "named their parts. Open it with spaCy (spacy.load of its pipeline) and save it again"
        )
    if (path / MANIFEST).is_file():
        check_manifest(path)
    try:
        config = Config().from_disk(path / ENGINE_CFG, interpolate=False)
    except Exception as error:  # noqa: BLE001: confection raises configparser's many errors
        raise SavedStateError(f"{path / ENGINE_CFG} is not a config file: {brief(str(error))}") from None
    name = config.get("engine", {}).get("name")
    if not isinstance(name, str) or not name:
        raise SavedStateError(f"{path / ENGINE_CFG}: [engine] name must be the engine's name, found {brief(name)}")
    blocks = dict(config.get("parts", {}))
    unknown = sorted(set(blocks) - set(PARTS))
    if unknown or not isinstance(config.get("settings"), dict):
        raise SavedStateError(f"{path / ENGINE_CFG}: [parts] names {', '.join(PARTS)} only, and [settings] "
                              f"the settings; found parts {unknown}")
    try:
        parts = _PartRegistries.resolve(Config({"parts": blocks}))["parts"]
    except (ConfigValidationError, ValueError, TypeError) as error:
        raise SavedStateError(f"{path / ENGINE_CFG}: its [parts] cannot be made: {brief(str(error))}") from None
    stop_words = read_saved_json(path / STOP_WORDS)
    if not isinstance(stop_words, list) or not all(isinstance(word, str) for word in stop_words):
        raise SavedStateError(f"{path / STOP_WORDS}: expected a list of words, found {brief(stop_words)}")
    return SavedEngineParts(name, dict(config["settings"]), {p: parts.get(p) for p in PARTS},
                            {p: blocks.get(p) for p in PARTS}, frozenset(stop_words))
