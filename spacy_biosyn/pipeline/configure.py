"""How a built pipe's settings are written: `configure_linker`, and an
assignment such as `pipe.top_k = 10`, which goes through it.

The settings themselves are declared and checked in linking/linker_settings.py and
held by the pipe's engine alone; what is written here changes the engine and
the pipe's block of `nlp.config` together, so that what is set is what is
saved (spacy.load builds the pipe from its config).
"""
import warnings
import weakref
from typing import Any, Dict, Mapping, Optional, Tuple

from spacy.language import Language
from spacy.pipeline import Pipe

from ..linking.linker_settings import (
    KEEP,
    REBUILT_BY,
    SCISPACY_ALIASES,
    SCISPACY_REFUSALS,
    SWAPPABLE_PARTS,
    check_parts,
    in_our_names,
)
from ..names import PIPE_NAME


def configure_linker(nlp: Language, name: str = PIPE_NAME, *, reencode: bool = False, **changes) -> Pipe:
    """Change settings of the pipeline's built linker `name`
    (EDITABLE_SETTINGS) and its swappable parts: the pipe and its block of
    `nlp.config` together, so that a saved pipeline links as the pipe does
    now (spacy.load builds the pipe from its config). A part is an object
    whose `config_block` names it in a config: a `reranker`
    (CrossEncoderReranker, or None to remove it) or an `encoder` (the same
    model in another runtime keeps the stored name vectors; `reencode`
    encodes every name with it). Nothing changes unless every change is valid."""
    pipe = nlp.get_pipe(name)
    parts = {part: changes.pop(part) for part in SWAPPABLE_PARTS if part in changes}
    check_parts(name, parts)
    for part, value in parts.items():
        if value is not None and not hasattr(value, "config_block"):
            raise ValueError(f"{name}: the {part} has no config_block to name it in the pipeline's config")
    if "encoder" in parts and parts["encoder"] is None:
        raise ValueError(f"{name}: a linker needs an encoder")
    pipe.engine.configure(changes, reranker=parts.get("reranker", KEEP))
    if "encoder" in parts:
        pipe.engine.set_encoder(parts["encoder"], reencode)
    # A scispaCy name for a changed setting would set it back when the pipeline loads.
    aliases = {alias: None for alias, ours in SCISPACY_ALIASES.items() if ours in changes}
    nlp.get_pipe_config(name).update({**_as_config({**changes, **parts}), **aliases})
    return pipe


def _as_config(values: Mapping[str, Any]) -> Dict[str, Any]:
    """Settings as a config block writes them: a part by its config_block."""
    return {key: value.config_block if key in SWAPPABLE_PARTS and value is not None else value
            for key, value in values.items()}


# Each built pipe's pipeline (the nlp its factory was given), weakly held:
# an attribute changed on the pipe is changed in that nlp.config too.
_PIPELINES: "weakref.WeakKeyDictionary[Pipe, weakref.ref]" = weakref.WeakKeyDictionary()


def remember_pipeline(pipe: Pipe, nlp: Language) -> None:
    """Keep `nlp` as the pipeline an attribute set on `pipe` is written into."""
    _PIPELINES[pipe] = weakref.ref(nlp)


def _pipeline_of(pipe: Pipe) -> Optional[Tuple[Language, str]]:
    """The pipeline that built `pipe` and the name it has there now, while
    the pipe is still in it."""
    owner = _PIPELINES.get(pipe)
    nlp = owner() if owner is not None else None
    name = None if nlp is None else next((n for n, component in nlp.components if component is pipe), None)
    return None if name is None else (nlp, name)


class _BlocksInOurNames(dict):
    """A pipeline's config blocks by pipe (spaCy's Language._pipe_configs),
    each biosyn_linker block stored with scispaCy's names written as ours
    (linking.linker_settings.in_our_names). spaCy stores a pipe's block only after
    its factory returns, so the factory cannot rewrite it itself."""

    def __setitem__(self, name: str, block) -> None:
        if isinstance(block, dict) and block.get("factory") == PIPE_NAME:
            block.update(in_our_names(block))
        super().__setitem__(name, block)


def store_blocks_in_our_names(nlp: Language) -> None:
    """From now on `nlp` keeps every biosyn_linker's config block in this
    package's names (`k` saved as names_searched), the one being built included."""
    if not isinstance(nlp._pipe_configs, _BlocksInOurNames):
        nlp._pipe_configs = _BlocksInOurNames(nlp._pipe_configs)


def config_block_of(pipe: Pipe) -> Optional[Dict[str, Any]]:
    """The pipe's block of its pipeline's config as it is now (spacy.load's
    overrides included), or None for a pipe outside the pipeline that built it."""
    located = _pipeline_of(pipe)
    return None if located is None else dict(located[0].get_pipe_config(located[1]))


def record_loaded(pipe: Pipe, changes: Mapping[str, Any]) -> None:
    """Write into the pipe's block of its pipeline's config what loading its
    state changed (the saved lambda; a nil_threshold or re-ranker read on
    the [0, 1] scale), so that the config says what the engine holds and a
    save keeps it."""
    located = _pipeline_of(pipe)
    if located is None or not changes:
        return
    nlp, name = located
    nlp.get_pipe_config(name).update(_as_config(changes))


def change_setting(pipe: Pipe, setting: str, value: Any) -> None:
    """`pipe.<setting> = value`, checked as the config would be, and kept in
    its pipeline's config so that `to_disk` saves it; a pipe outside the
    pipeline that built it changes alone, and says so."""
    located = _pipeline_of(pipe)
    if located is not None:
        configure_linker(located[0], located[1], **{setting: value})
        return
    if setting == "reranker":
        pipe.engine.configure({}, reranker=value)
    else:
        pipe.engine.configure({setting: value})
    warnings.warn(
        f"{pipe.name}: {setting} is changed on a pipe outside the pipeline that built it, whose config keeps the "
        f"old value: a pipeline saved now would not have it; use configure_linker(nlp, {pipe.name!r}, {setting}=...)",
        UserWarning, stacklevel=3,
    )


class Setting:
    """A pipe attribute that reads and changes one of its editable
    LinkerSettings (`pipe.top_k = 10`), or, with `ours`, a scispaCy name
    for one (`pipe.k` is names_searched)."""

    def __init__(self, ours: Optional[str] = None):
        self.ours = ours

    def __set_name__(self, owner: type, name: str) -> None:
        self.setting = self.ours or name

    def __get__(self, pipe: Optional[Pipe], owner: type):
        return self if pipe is None else getattr(pipe.engine.settings, self.setting)

    def __set__(self, pipe: Pipe, value) -> None:
        change_setting(pipe, self.setting, value)


class BoundSetting(Setting):
    """A setting bound to the saved names, vectors and tf-idf: read as any
    setting, and refused when assigned, naming what rebuilds it."""

    def __set__(self, pipe: Pipe, value) -> None:
        raise AttributeError(
            f"{pipe.name}: {self.setting} cannot be changed on a built pipe ({REBUILT_BY[self.setting]})"
        )


class RefusedName:
    """A scispaCy setting with no equivalent here: refused when assigned,
    as the factory refuses it in a config."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, pipe: Optional[Pipe], owner: type):
        if pipe is None:
            return self
        raise AttributeError(f"{pipe.name}: {SCISPACY_REFUSALS[self.name]}")

    def __set__(self, pipe: Pipe, value) -> None:
        raise AttributeError(f"{pipe.name}: {SCISPACY_REFUSALS[self.name]} (got {self.name} = {value!r})")


