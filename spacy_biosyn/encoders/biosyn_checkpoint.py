"""Checkpoints saved by BioSyn's own code (dmis-lab/BioSyn): a BERT folder
(config.json, vocab.txt, weights) beside `sparse_weight.pt` (lambda, a
one-element tensor) and `sparse_encoder.pk` (the fitted tf-idf, pickled).

BioSyn scores with the [CLS] vector and an inner product, and lambda is
read with `torch.load(weights_only=True)`. `sparse_encoder.pk` is never
read: unpickling a file runs whatever code it names. BioSyn fits that
vectorizer as `TfidfVectorizer(analyzer="char", ngram_range=(1, 2))` on the
dictionary's names, which is what the linker's tf-idf does with the same
names, so fitting it again on the dictionary gives the same vocabulary.
"""
from pathlib import Path
from typing import NamedTuple, Union

from ..errors import BiosynError
from .hub import import_torch
from ..parts import TRANSFORMER_ENCODER

SPARSE_WEIGHT_FILE = "sparse_weight.pt"
PICKLED_TFIDF_FILE = "sparse_encoder.pk"


class BiosynCheckpoint(NamedTuple):
    encoder: dict  # the encoder's config block
    sparse_weight: float
    skipped_pickle: bool  # whether the checkpoint holds a sparse_encoder.pk, left unread


def read_biosyn_checkpoint(source: Union[str, Path]) -> BiosynCheckpoint:
    """The encoder block and lambda of a BioSyn checkpoint: a local folder,
    or a Hugging Face name whose repository holds sparse_weight.pt."""
    torch = import_torch(f"reading the BioSyn checkpoint {str(source)!r}")

    folder = Path(source)
    if folder.is_dir():
        weight_file = folder / SPARSE_WEIGHT_FILE
        skipped = (folder / PICKLED_TFIDF_FILE).exists()
    else:
        weight_file, skipped = _hub_file(str(source)), False
    if not weight_file.is_file():
        raise BiosynError(f"{source}: no {SPARSE_WEIGHT_FILE}, so not a checkpoint saved by BioSyn (a BERT folder beside it)")
    try:
        weight = torch.as_tensor(torch.load(weight_file, map_location="cpu", weights_only=True)).detach()
    except Exception as error:  # noqa: BLE001: an unpickling refusal, a cut file, not a tensor
        raise BiosynError(f"{weight_file}: not BioSyn's lambda, a one-element tensor ({type(error).__name__}: {error})") from None
    if weight.numel() != 1 or not bool(torch.isfinite(weight).all()) or float(weight.reshape(-1)[0]) < 0:
        raise BiosynError(
            f"{weight_file}: BioSyn's lambda is one finite number >= 0; this holds {weight.numel()} value(s) "
            f"({weight.reshape(-1)[:3].tolist()}{'...' if weight.numel() > 3 else ''})"
        )
    sparse_weight = float(weight.reshape(-1)[0])
    if folder.is_dir() and not (folder / "config.json").is_file():
        raise BiosynError(f"{folder}: no config.json beside {SPARSE_WEIGHT_FILE}: the BERT folder of the checkpoint is incomplete")
    encoder = {"@misc": TRANSFORMER_ENCODER, "name": str(source), "pooling": "cls", "similarity": "dot"}
    return BiosynCheckpoint(encoder, sparse_weight, skipped)


def _hub_file(name: str) -> Path:
    try:
        from huggingface_hub import hf_hub_download

        return Path(hf_hub_download(name, SPARSE_WEIGHT_FILE))
    except Exception as error:  # noqa: BLE001: offline, no such repository, no such file
        raise BiosynError(f"{name}: no local folder, and its {SPARSE_WEIGHT_FILE} could not be fetched ({error})") from None
