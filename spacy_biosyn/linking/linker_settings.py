"""The linker's settings: declared, defaulted and checked here, and held
by one LinkerSettings per engine.

The factory's `default_config` is built from these defaults; the factory,
`configure_linker` and an assignment such as `pipe.top_k = 10` all check
through this model (strict: spaCy's config validation lets "5" through as a
number). Settings marked `editable` decide how spans are annotated and may
change on a built engine; the others made its saved names, vectors, tf-idf
and lambda. The pipe's parts (encoder, index, scorers) are checked against
the Protocols of ty.py.
"""
from typing import Any, Dict, List, Literal, Mapping, Optional, Union

from confection import Config
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from typing_extensions import Annotated

from .. import parts
from ..kb.namespaces import IdNamespaces
from ..search.scoring import is_on_unit_scale
from ..ty import ConceptScorer, Encoder, Reranker, SearchIndex, Sieve, check_part

AUTO = "auto"
# The most names or concepts a mention may be given.
MAX_RANKED = 10_000


def _not_blank(label: str) -> str:
    if not label.strip():
        raise ValueError("should hold entity labels, not a blank one")
    return label


def _a_type(pattern: str) -> str:
    if not pattern.strip():
        raise ValueError("should hold types or their prefixes (\"C\", \"C04\", \"T047\"), not a blank one")
    return pattern


def _written_as_given(value: Any) -> Any:
    """Refuse a value a config.cfg cannot hold: it would be saved, and the
    pipeline would then load with another value (`{"A=B": ...}` comes back
    as `{"A": "B = ..."}`) or not at all (a line break, `${`)."""
    try:
        back = Config().from_str(Config({"block": {"value": value}}).to_str())["block"]["value"]
    except Exception:  # noqa: BLE001: any config error means the same here
        back = None
    if back != value:
        raise ValueError("cannot be written in a config.cfg and read back as given: leave out '${', line breaks, "
                         "and '=', ':' or '.' in keys")
    return value


Label = Annotated[str, AfterValidator(_not_blank)]
TypePattern = Annotated[str, AfterValidator(_a_type)]
Finite = Annotated[float, Field(allow_inf_nan=False)]


def editable(default: Any, **constraints) -> Any:
    """A setting a saved pipeline's config.cfg may change: it decides how
    spans are annotated, not the saved names, vectors, tf-idf or lambda."""
    return Field(default, json_schema_extra={"editable": True}, **constraints)


def bound(default: Any, rebuilt_by: str, **constraints) -> Any:
    """A setting the saved names, vectors, tf-idf or lambda were made with:
    refused when changed on a built pipe, saying how it is `rebuilt_by`."""
    return Field(default, json_schema_extra={"rebuilt_by": rebuilt_by}, **constraints)


class LinkerSettings(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", validate_assignment=True)

    # Chosen on NCBI and BC5CDR-Disease dev with MiniLM (benchmarks/zero_shot.py):
    # with cosine scores in [-1, 1], a larger lambda lets tf-idf overrule meaning.
    sparse_weight: Finite = bound(
        0.125, "lambda is trained with the encoder and saved with its index: train, or build again with "
        "--sparse-weight", ge=0,
    )
    # Concepts in span._.kb_ents (per part of a composite), and names in
    # span._.candidates; at most MAX_RANKED (a huge one ranked every name for every mention).
    top_k: int = editable(5, ge=1, le=MAX_RANKED)
    # Names ranked to fill kb_ents with distinct concepts (scispaCy's k: MEDIC
    # lists several names per concept). A re-ranker's candidates or a concept
    # scorer's pool take its place. At most MAX_RANKED.
    names_searched: int = editable(30, ge=1, le=MAX_RANKED)
    split_composites: bool = bound(True, "the saved tf-idf was fitted on the names as split: build the pipeline again")
    # The labels (any case) linked against `dictionary`; null: every label
    # without a route. ["Disease"] keeps a scispaCy NER's GENE spans unlinked.
    dictionary_labels: Optional[List[Label]] = bound(
        None, "the saved routes were made for them: build again with --dictionary-labels"
    )
    # Below this score span._.cui is None (NIL) and kb_ents is empty; the names
    # stay in span._.candidates. Scores lie on [0, 1]: S = dense + lambda x
    # tf-idf over the S of a name written as the mention (which scores 1.0),
    # yet how far a wrong name falls below 1 differs by encoder, so a
    # threshold holds for one encoder: tune-nil chooses one. "auto": the one
    # measured for the encoder (known by its weights) and lambda, else one
    # derived from the vocabulary at build (search/nil_default.py); none with a re-ranker.
    nil_threshold: Union[Finite, Literal["auto"], None] = editable(AUTO)
    # The encoder (its name's last part) nil_threshold was chosen with;
    # tune-nil fills it in, and the pipe warns when it encodes with another.
    nil_threshold_encoder: Optional[str] = editable(None)
    # Candidate concepts kept: those with a type that starts with one of these
    # (strategies/type_filter.py): MeSH or CTD tree numbers ("C" keeps diseases),
    # UMLS semantic types from MRSTY or a scispaCy KB ("T047"), OBO namespaces. null: all.
    # An empty list would keep nothing: refused, as null keeps all.
    types: Optional[List[TypePattern]] = editable(None, min_length=1)
    # Candidate concepts dropped: those with a type that starts with one of these.
    exclude_types: List[TypePattern] = editable([])
    # Entities left without an ID (below nil_threshold, or nothing to link)
    # are removed from doc.ents: in a text pipeline they are mostly the NER's
    # false positives. false keeps them with span._.cui None.
    drop_nil: bool = editable(False)
    # A name that several concepts share ("dm": diabetes mellitus and myotonic
    # dystrophy), or readings of a mention that score alike ("breast and
    # ovarian cancer": a syndrome, or two cancers), mean what the doc's other
    # mentions name; false: the dictionary's order (preferred_ids_from's
    # prior) and the likeliest reading decide.
    resolve_shared_names: bool = editable(True)
    # Ranked strings remembered per linker across batches and docs (a corpus
    # repeats its mentions); 0 turns it off.
    cache_size: int = editable(10000, ge=0)
    # span.kb_id_ mirrors span._.cui, for displaCy and spaCy's scorers.
    set_kb_id: bool = editable(True)
    # Namespace -> the pattern its bare IDs match ({"MESH": "[CD]\\d{6}(\\d{3})?",
    # "OMIM": "\\d{6}"}): cui, kb_id_, kb_ents and concept_ids then read
    # MESH:D001943; IDs that have a namespace keep it. null: IDs as the vocabulary writes them.
    id_namespaces: Optional[Dict[str, str]] = editable(None)

    @field_validator("id_namespaces")
    @classmethod
    def _patterns(cls, namespaces: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        if namespaces is not None:
            IdNamespaces(namespaces)  # raises, naming what is wrong
        return namespaces

    # After the checks of what a value means, which say more.
    @field_validator("dictionary_labels", "nil_threshold_encoder", "types", "exclude_types", "id_namespaces")
    @classmethod
    def _fits_a_config(cls, value: Any) -> Any:
        return value if value is None else _written_as_given(value)

    def check_threshold_scale(self, name: str, reranked: bool) -> None:
        """Refuse a number nil_threshold that no score reaches or every score
        does: scores lie on [0, 1] (a name written as the mention scores
        1.0), except a re-ranker's (first_stage_weight x S + a logit). Checked
        by the engine once it knows whether it re-ranks, and after a load
        has moved a threshold saved on the old scale (S) onto this one."""
        threshold = self.nil_threshold
        if reranked or not isinstance(threshold, (int, float)) or is_on_unit_scale(threshold):
            return
        raise ValueError(
            f"{name}: nil_threshold {threshold} lies outside [0, 1], where scores lie (a name written as the mention "
            "scores 1.0), so it would make every span NIL or none; choose one with python -m spacy_biosyn tune-nil, "
            "or leave it \"auto\""
        )

    @classmethod
    def checked(cls, name: str, values: Mapping[str, Any]) -> "LinkerSettings":
        """The settings among `values` (other keys are ignored), or a
        ValueError that names the pipe, each setting at fault and its value."""
        try:
            return cls(**{key: value for key, value in values.items() if key in cls.model_fields})
        except ValidationError as error:
            raise ValueError(f"{name}: {readable(error)}") from None

    def updated(self, name: str, changes: Mapping[str, Any]) -> "LinkerSettings":
        """A copy with `changes` to EDITABLE_SETTINGS, checked as the factory
        checks them; the others were used to build the saved state."""
        fixed = sorted(set(changes) - set(EDITABLE_SETTINGS))
        if fixed:
            raise ValueError(
                f"{name}: {', '.join(fixed)} cannot be changed on a built pipe (the saved names, vectors and "
                f"tf-idf were made with them); these can: {', '.join((*EDITABLE_SETTINGS, *SWAPPABLE_PARTS))}"
            )
        return self.checked(name, {**self.model_dump(), **changes})


# Settings a built pipe may change: how spans are annotated.
EDITABLE_SETTINGS = tuple(
    name for name, field in LinkerSettings.model_fields.items() if (field.json_schema_extra or {}).get("editable")
)
# The others, each with how it is given a new value.
REBUILT_BY = {
    name: field.json_schema_extra["rebuilt_by"] for name, field in LinkerSettings.model_fields.items()
    if name not in EDITABLE_SETTINGS
}


def readable(error: ValidationError) -> str:
    """pydantic's errors, one clause per setting: `top_k should be greater
    than or equal to 1, got 0`. The alternatives of a union join with 'or'."""
    by_setting: Dict[str, List[str]] = {}
    inputs: Dict[str, Any] = {}
    for detail in error.errors():
        setting = str(detail["loc"][0]) if detail["loc"] else "settings"
        message = detail["msg"].removeprefix("Value error, ").removeprefix("Input ").removeprefix(f"{setting}")
        messages = by_setting.setdefault(setting, [])
        messages.append(message.lstrip(": ") if not messages else message.removeprefix("should be "))
        inputs.setdefault(setting, detail.get("input"))
    return "; ".join(
        f"{setting} {' or '.join(dict.fromkeys(messages))}" + ("" if ", got " in messages[0] else f", got {inputs[setting]!r}")
        for setting, messages in by_setting.items()
    )


# scispaCy's EntityLinker settings that mean one of ours: accepted under
# their scispaCy name (`k`, `max_entities_per_mention`) or as their effect
# (`resolve_abbreviations`); `threshold` is refused, naming ours.
SCISPACY_ALIASES = {"k": "names_searched", "max_entities_per_mention": "top_k"}


# scispaCy's names that have no equivalent here, with what to do instead.
SCISPACY_REFUSALS = {
    "threshold": "threshold is scispaCy's setting, for its char-3-gram scores; here it is nil_threshold: scores lie "
    "on [0, 1] too, but a wrong name scores higher with a transformer encoder (\"auto\" is 0.8 for MiniLM): "
    "leave it \"auto\" or choose one with python -m spacy_biosyn tune-nil",
    "filter_for_definitions": "filter_for_definitions is scispaCy's filter of concepts without a definition, which "
    "this linker does not apply: every concept of the vocabulary is linked (restrict the vocabulary when it is "
    "built, or keep concepts by type with types and exclude_types)",
    "resolve_abbreviations": "resolve_abbreviations is read when the pipe is built: "
    "add_pipe(..., config={\"resolve_abbreviations\": false}), or \"abbreviations\": null",
}


def in_our_names(block: Mapping[str, Any]) -> Dict[str, Any]:
    """The changes that write a config block's scispaCy settings (given,
    not None) under this package's names, each alias then null, so that a
    saved config.cfg holds one name per setting and an edit of ours is
    the one read on load."""
    changes: Dict[str, Any] = {}
    for alias, ours in SCISPACY_ALIASES.items():
        if block.get(alias) is not None:
            changes.update({ours: block[alias], alias: None})
    if block.get("resolve_abbreviations") is not None:
        changes["resolve_abbreviations"] = None
        if block["resolve_abbreviations"] is False:
            changes["abbreviations"] = None
    return changes


def from_scispacy(name: str, values: Mapping[str, Any]) -> Dict[str, Any]:
    """`values` with scispaCy's settings given (not None) read as ours:
    `k` is names_searched and `max_entities_per_mention` top_k;
    `resolve_abbreviations` false turns `abbreviations` off. `threshold`
    raises: scispaCy's scores are char-3gram cosines, under which a wrong
    name scores lower, so its 0.7 would mean something else here; so does
    `filter_for_definitions`, which has no equivalent."""
    values = dict(values)
    refused = {"threshold": values.get("threshold") is not None,
               # false is what this linker does anyway
               "filter_for_definitions": values.get("filter_for_definitions") not in (None, False)}
    for setting, given in refused.items():
        if given:
            raise ValueError(f"{name}: {SCISPACY_REFUSALS[setting]} (got {setting} = {values[setting]!r})")
    for alias, ours in SCISPACY_ALIASES.items():
        if values.get(alias) is not None:
            values[ours] = values[alias]
    resolve = values.get("resolve_abbreviations")
    if resolve is not None and not isinstance(resolve, bool):
        raise ValueError(f"{name}: resolve_abbreviations should be true or false, got {resolve!r}")
    if resolve is False:
        values["abbreviations"] = None
    return values


# Each part a config swaps: the Protocol of ty.py it must fulfil, and the
# registered parts that do, for the error that refuses another.
PART_CONTRACTS = {
    "encoder": (Encoder, f"{parts.TRANSFORMER_ENCODER} or {parts.ONNX_ENCODER}"),
    "index": (SearchIndex, f"{parts.SIZED_INDEX}, {parts.EXACT_INDEX} or {parts.FAISS_INDEX}"),
    "sieve": (Sieve, f"{parts.SIEVE} or null"),
    "concept_scorer": (ConceptScorer, f"{parts.ALIAS_COUNT_RERANKER}, {parts.CONCEPT_CENTROIDS} or null"),
    "reranker": (Reranker, f"{parts.CROSS_ENCODER_RERANKER} or null"),
}


def check_parts(name: str, parts: Mapping[str, Any]) -> None:
    """Refuse a part (None passes) that lacks what its Protocol asks for."""
    for setting, part in parts.items():
        contract, examples = PART_CONTRACTS[setting]
        check_part(name, setting, part, contract, examples)


# The parts a built pipe may change, each named in the config by its config_block.
SWAPPABLE_PARTS = ("reranker", "encoder")
# LinkingEngine.configure's "leave the re-ranker as it is".
KEEP = object()
