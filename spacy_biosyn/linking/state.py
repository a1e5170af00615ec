"""What a linking engine (engine.py) saves and loads, field by field, and
the checks on what it loads.

Fields, in the order they are read back (cfg first: it says what else there
is; the encoder before the linkers, which check their vectors against it):
cfg, encoder, linker, routes, corrections, id_usage, reranker; `exclude`
names them.
A save goes into a fresh folder swapped in whole (files/storage.py); bytes are the
same files packed with msgpack.
"""
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, NamedTuple, Optional, Protocol, Union

import srsly

from .. import __version__
from ..checks import brief, is_weight, same_value
from ..errors import MismatchError, SavedStateError
from ..files.manifest import MANIFEST, check_manifest, write_manifest
from ..files.storage import read_consistently, read_saved_json, remove_stale_staging, replaced_atomically
from ..preprocess.readings import MentionPreprocessor
from ..search.scoring import UNIT_SCALE, old_scale_factor, unit_from_old_scale
from ..ty import Reranker
from .data_sources import DataSources
from .linker_settings import LinkerSettings
from .routes import Routes

# The layout of what the component saves: 2 ends with a manifest
# (files/manifest.py) of every file; 1 (or no "format" in cfg) has none, and its
# linkers' files are checked by the checksums their index.json lists.
SAVE_FORMAT = 2
_READ_FORMATS = (1, SAVE_FORMAT)
# from_bytes writes a file per name it was given: names as save_state
# writes them, no deeper than its folders go.
_SAVED_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
_MAX_DEPTH = 8


# What a caller checks a save's cfg with, before its state is read.
CfgCheck = Callable[[Path, dict], None]


class SavedEngine(Protocol):
    """What a save holds of a LinkingEngine (engine.py), so that this module
    need not import the engine."""

    name: str
    settings: LinkerSettings
    sources: DataSources
    routes: Routes
    preprocessor: MentionPreprocessor
    reranker: Optional[Reranker]

    def configure(self, changes: Dict[str, Any], *, saved_state: bool = False) -> None: ...


def _writers(engine: SavedEngine, record: Dict[str, Any]) -> Dict[str, Callable[[Path], None]]:
    routes = engine.routes

    def write_routes(path: Path) -> None:
        for i, label in enumerate(routes.labels):
            routes.linkers[label].to_disk(path / "routes" / str(i), exclude=["encoder"])

    return {
        "encoder": lambda path: routes.encoder.to_disk(path / "encoder"),
        "linker": lambda path: routes.default.to_disk(path, exclude=["encoder"]) if routes.default.is_ready else None,
        "routes": write_routes,
        # lambda is learned by training, so it is state, not just config.
        "cfg": lambda path: srsly.write_json(path / "cfg", {
            "format": SAVE_FORMAT,
            "score_scale": UNIT_SCALE,
            "saved_by": f"spacy-biosyn {__version__}",
            "sparse_weight": engine.settings.sparse_weight,
            "routes": routes.labels,
            "has_dictionary": routes.default.is_ready,
            **record,
        }),
        "corrections": lambda path: srsly.write_json(path / "corrections.json", engine.preprocessor.corrections),
        "id_usage": lambda path: srsly.write_json(path / "id_usage.json", routes.id_usage),
        "reranker": lambda path: engine.reranker.to_disk(path / "reranker") if engine.reranker is not None else None,
    }


class _AsGiven(NamedTuple):
    """The engine as the config made it, before a load: a read that
    read_consistently repeats starts from it again, not from the first read."""

    settings: LinkerSettings
    first_stage_weight: Optional[float]


def _threshold_to_unit_scale(
    path: Path, engine: SavedEngine, given: _AsGiven, sparse_weight: float, changes: Dict[str, Any]
) -> None:
    """A nil_threshold saved when scores were S, moved to the [0, 1] scale
    (S / (1 + lambda), exact for cosine scores), in the engine and
    `changes`, and said once. A re-ranker's scores stay its own:
    its first_stage_weight grows by 1 + lambda, so that first_stage_weight
    x S + logit, and a threshold on it, are what they were."""
    reranker = engine.reranker
    if reranker is not None:
        weight = given.first_stage_weight
        reranker.first_stage_weight = weight * old_scale_factor(sparse_weight)
        changes["reranker"] = reranker
        warnings.warn(
            f"{path}: saved when first-stage scores were S; they are now on [0, 1], and its re-ranker's "
            f"first_stage_weight {weight} is read as {reranker.first_stage_weight}, which scores as before. "
            "Save the pipeline to keep it so", UserWarning, stacklevel=2,
        )
        return
    threshold = given.settings.nil_threshold
    if not isinstance(threshold, (int, float)) or isinstance(threshold, bool):
        return
    converted = unit_from_old_scale(threshold, sparse_weight)
    engine.configure({"nil_threshold": converted})
    changes["nil_threshold"] = converted
    warnings.warn(
        f"{path}: saved when scores were S = dense + lambda x tf-idf; scores are now on [0, 1] (1.0 for a name "
        f"written as the mention), and its nil_threshold {threshold} is read as {converted} (S / (1 + {sparse_weight}); "
        "with dot-product scores, choose one again with tune-nil). Save the pipeline to keep it so",
        UserWarning, stacklevel=2,
    )


def _readers(
    engine: SavedEngine, given: _AsGiven, changes: Dict[str, Any], check: Optional[CfgCheck]
) -> Dict[str, Callable[[Path], None]]:
    routes = engine.routes
    cfg = {}

    def read_cfg(path: Path) -> None:
        cfg.update(_checked_cfg(path / "cfg"))
        if check is not None:
            check(path, cfg)
        unsaved = [label for label in routes.labels if label not in cfg["routes"]]
        if unsaved:
            raise MismatchError(
                f"{path} holds no route for {unsaved}, which the config names (it holds "
                f"{cfg['routes']}): load it with the config it was saved with, or initialize it with this one"
            )
        # Routes added by add_route() after initialize() are in the saved
        # state only, like the synonyms add_synonyms() adds.
        routes.use_labels(cfg["routes"])
        # lambda is what the state was saved with, wherever it is read.
        if not same_value(float(cfg["sparse_weight"]), given.settings.sparse_weight):
            changes["sparse_weight"] = float(cfg["sparse_weight"])
        engine.configure({"sparse_weight": float(cfg["sparse_weight"])}, saved_state=True)
        if cfg.get("score_scale") != UNIT_SCALE:
            _threshold_to_unit_scale(path, engine, given, cfg["sparse_weight"], changes)

    def read_linker(path: Path) -> None:
        if cfg.get("has_dictionary", True):  # else a pipeline of routes only
            routes.default.from_disk(path, exclude=["encoder"])

    def read_routes(path: Path) -> None:
        for i, label in enumerate(routes.labels):
            routes.linkers[label].from_disk(path / "routes" / str(i), exclude=["encoder"])

    def read_corrections(path: Path) -> None:
        engine.preprocessor.corrections = _checked_mapping(path / "corrections.json", str)

    def read_id_usage(path: Path) -> None:
        routes.id_usage = _checked_mapping(path / "id_usage.json", int)

    def read_reranker(path: Path) -> None:
        if engine.reranker is None:
            return
        if not (path / "reranker").is_dir():
            raise MismatchError(
                f"{path} holds no re-ranker, which the config names: load it with the config it "
                "was saved with, or train one (python -m spacy_biosyn train-reranker)"
            )
        engine.reranker.from_disk(path / "reranker")

    return {
        "cfg": read_cfg,
        "encoder": lambda path: routes.encoder.from_disk(path / "encoder"),
        "linker": read_linker,
        "routes": read_routes,
        "corrections": read_corrections,
        "id_usage": read_id_usage,
        "reranker": read_reranker,
    }


def save_state(
    engine: SavedEngine, path: Union[str, Path], exclude: Iterable[str], record: Optional[Dict[str, Any]] = None,
    describe: Optional[Callable[[Path], None]] = None,
) -> None:
    """Save `engine` into `path`, replaced whole. `record`: what whoever
    saves it keeps in its cfg, to check on load (a pipe: the settings of
    its config the state was made under). `describe` writes what names the
    engine's parts (engine.cfg) into the folder, under the same manifest."""
    with replaced_atomically(path) as staging:
        for field, write in _writers(engine, record or {}).items():
            if field not in exclude:
                write(staging)
        if describe is not None:
            describe(staging)
        write_manifest(staging)


def load_state(
    engine: SavedEngine, path: Union[str, Path], exclude: Iterable[str], check: Optional[CfgCheck] = None,
) -> Dict[str, Any]:
    """Read a save into `engine`, every file checked against its manifest
    first; returns the settings reading changed. `check` is called with the
    folder and its cfg before anything is read into the engine, and raises
    to refuse the save (a pipe's: its config agrees with the record)."""
    path = Path(path)
    remove_stale_staging(path)
    changes: Dict[str, Any] = {}
    given = _AsGiven(engine.settings, None if engine.reranker is None else engine.reranker.first_stage_weight)

    def read() -> None:
        changes.clear()  # read_consistently may read twice
        if (path / MANIFEST).exists():
            check_manifest(path)
        for field, read_field in _readers(engine, given, changes, check).items():
            if field not in exclude:
                read_field(path)

    read_consistently(path, read)
    return changes


def pack_state(engine: SavedEngine, exclude: Iterable[str]) -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "component"
        save_state(engine, folder, exclude)
        files = {f.relative_to(folder).as_posix(): f.read_bytes() for f in sorted(folder.rglob("*")) if f.is_file()}
    return srsly.msgpack_dumps(files)


def unpack_state(
    engine: SavedEngine, data: bytes, exclude: Iterable[str], check: Optional[CfgCheck] = None
) -> Dict[str, Any]:
    try:
        files = srsly.msgpack_loads(data)
    except Exception as error:  # noqa: BLE001: msgpack raises its own types for every malformation
        files, reason = None, f"{type(error).__name__}: {error}"[:120]
    else:
        reason = "not a mapping of file names to bytes"
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, bytes) for k, v in files.items()):
        raise SavedStateError(f"{engine.name}: from_bytes was given {len(data)} bytes that are not a saved {engine.name} "
                              f"({reason}); pass what its to_bytes() returned")
    for name in files:
        parts = name.split("/")
        if len(parts) > _MAX_DEPTH or not all(_SAVED_NAME.fullmatch(part) for part in parts) or any(
            other.startswith(name + "/") for other in files
        ):
            raise SavedStateError(
                f"{engine.name}: from_bytes refuses the file name {name[:60]!r}: not one a save writes "
                "(relative, at most 8 folders deep, of letters, digits, '.', '_' and '-', and not also a folder)"
            )
    if "encoder" not in exclude and not any(name.startswith("encoder/") for name in files):
        raise SavedStateError(
            f"{engine.name}: these bytes hold no encoder (made with to_bytes(exclude=['encoder'])): pass the "
            "same exclude to from_bytes, into a pipe whose encoder is loaded"
        )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name, content in files.items():
            relative = Path(name)
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_bytes(content)
        return load_state(engine, folder, exclude, check)


def _checked_cfg(path: Path) -> dict:
    cfg = read_saved_json(path)
    if isinstance(cfg, dict) and cfg.get("format", 1) not in _READ_FORMATS:
        raise SavedStateError(
            f"{path}: saved in format {cfg.get('format')!r} by {cfg.get('saved_by', 'another version')}; "
            f"spacy-biosyn {__version__} reads format {SAVE_FORMAT}: install the version that saved it, "
            "or build the pipeline again"
        )
    if not isinstance(cfg, dict) or not is_weight(cfg.get("sparse_weight")):
        raise SavedStateError(f"{path}: sparse_weight must be a finite number >= 0, found {brief(cfg)}")
    routes = cfg.get("routes")
    if not isinstance(routes, list) or not all(isinstance(label, str) for label in routes):
        raise SavedStateError(f"{path}: routes must be a list of labels, found {brief(routes)}")
    if not isinstance(cfg.get("has_dictionary", True), bool):
        raise SavedStateError(f"{path}: has_dictionary must be true or false, found {cfg['has_dictionary']!r}")
    if cfg.get("format", 1) >= 2 and not (path.parent / MANIFEST).is_file():
        raise SavedStateError(f"{path.parent / MANIFEST} is missing: the save is incomplete; save or build it again")
    return cfg


def _checked_mapping(path: Path, value_type: type) -> dict:
    mapping = read_saved_json(path)
    if not isinstance(mapping, dict) or not all(
        isinstance(v, value_type) and not isinstance(v, bool) for v in mapping.values()
    ):
        raise SavedStateError(f"{path}: expected an object of {value_type.__name__} values, found {brief(mapping)}")
    return mapping
