"""The semantic view: any Hugging Face encoder, one vector per name or mention.

Construction only records settings; weights are read by `load()` (at
`initialize()`) or `from_disk()`, so building a pipeline from its config never
reaches out to a model hub. torch is imported when one is made (pooling.py
holds the torch module), so that the registry lists this encoder in an
install without the torch extra.
"""
import copy
import hashlib
import io
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, Union

import numpy as np

from ..errors import SavedStateError
from ..parts import TRANSFORMER_ENCODER, registry
from .base import EncoderBase, encode_in_batches, read_saved, tokenizer_digest
from .hub import choose_device, load_pretrained, save_pretrained

if TYPE_CHECKING:
    import torch


@registry.misc(TRANSFORMER_ENCODER)
class TransformerEncoder(EncoderBase):
    registered_name = TRANSFORMER_ENCODER

    @property
    def config_block(self) -> dict:
        # "auto": the device this build ran on says nothing of the machine that loads it.
        return {**super().config_block, "device": "auto"}

    def __init__(
        self,
        name: str,
        pooling: str = "cls",
        similarity: str = "cosine",
        max_length: int = 25,
        batch_size: int = 128,
        device: str = "auto",
    ):
        super().__init__(name, pooling, similarity, max_length, batch_size)
        self.device = choose_device(device, f"the encoder {name!r} ({TRANSFORMER_ENCODER})")
        self.model: Optional["torch.nn.Module"] = None
        self.tokenizer = None

    @property
    def is_loaded(self) -> bool:
        return self.model is not None

    @property
    def dim(self) -> int:
        return self._require_model().config.hidden_size

    def load(self, name_or_path: Optional[Union[str, Path]] = None, safetensors_only: bool = False) -> "TransformerEncoder":
        """Read tokenizer and weights from a hub name or a local folder."""
        from transformers import AutoModel

        self.tokenizer, self.model, _ = load_pretrained(
            AutoModel, name_or_path or self.name, self.device, use_safetensors=True if safetensors_only else None
        )
        return self

    def move_to(self, device: str) -> None:
        """Encode on `device` from now on (auto, cpu, cuda, cuda:1); a saved
        config keeps its own."""
        self.device = choose_device(device, f"the encoder {self.name!r} ({TRANSFORMER_ENCODER})")
        if self.model is not None:
            self.model.to(self.device)

    @property
    def tokenizer_digest(self) -> Optional[str]:
        """sha256 of the (fast) tokenizer; None for a Python-only one."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        return None if backend is None else tokenizer_digest(backend.to_str())

    @property
    def weights_digest(self) -> str:
        """sha256 of the weights as they are now (every parameter, in the
        model's order, as float32): the same model has the same digest
        whatever hub name, folder or file format it came from, and a
        fine-tuned copy another. Computed when asked, as training changes
        the weights in place."""
        import torch

        digest = hashlib.sha256()
        for parameter in self._require_model().parameters():
            digest.update(parameter.detach().to("cpu", torch.float32).contiguous().numpy().tobytes())
        return digest.hexdigest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dim); unit rows when similarity is cosine."""
        import torch

        self._require_model()
        with torch.inference_mode():
            return encode_in_batches(texts, self.dim, self.batch_size, lambda batch: self.embed(batch).float().cpu().numpy(),
                                     self._count_tokens, source=self.name)

    def _count_tokens(self, texts: Sequence[str]) -> List[int]:
        return [len(ids) for ids in self.tokenizer(list(texts), truncation=True, max_length=self.max_length)["input_ids"]]

    def embed(self, texts: Sequence[str]) -> "torch.Tensor":
        """One pooled vector per text as a tensor on the encoder's device,
        differentiable unless called under no_grad: the trainer and `encode`
        share this, so training optimises exactly what inference computes."""
        import torch

        from .pooling import Pooled

        batch = self.tokenizer(
            list(texts),
            padding=True,
            truncation=True,
            max_length=self.max_length,
            return_tensors="pt",
        ).to(self.device)
        vectors = Pooled(self._require_model(), self.pooling)(**batch)
        if self.similarity == "cosine":
            vectors = torch.nn.functional.normalize(vectors.float(), dim=-1)
        return vectors

    def to_onnx(self) -> bytes:
        """The model and its pooling as an ONNX graph (unnormalized vectors),
        for OnnxEncoder: batch and sequence length stay dynamic."""
        # A copy: tracing leaves the traced model computing different vectors.
        import torch

        from .pooling import Pooled

        model = Pooled(copy.deepcopy(self._require_model()), self.pooling).cpu()
        sample = self.tokenizer(["a sample", "another sample name"], padding=True, return_tensors="pt")
        inputs = [name for name in ("input_ids", "attention_mask", "token_type_ids") if name in sample]
        buffer = io.BytesIO()
        # The tracer warns about Python-level branches on shapes in the
        # model's code; the exported graph is checked against PyTorch in tests.
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(
                model,
                tuple(sample[name] for name in inputs),
                buffer,
                input_names=inputs,
                output_names=["vectors"],
                dynamic_axes={**{name: {0: "batch", 1: "length"} for name in inputs}, "vectors": {0: "batch"}},
                opset_version=17,
                dynamo=False,
            )
        return buffer.getvalue()

    def to_disk(self, path: Union[str, Path]) -> None:
        save_pretrained(self._require_model(), self.tokenizer, path)

    def from_disk(self, path: Union[str, Path]) -> "TransformerEncoder":
        path = Path(path)
        pickled = path / "pytorch_model.bin"
        if pickled.exists() and not (path / "model.safetensors").exists():
            raise SavedStateError(
                f"{pickled} is a pickled PyTorch checkpoint, which can run code as it loads; spacy-biosyn "
                "saves and loads model.safetensors only: save the pipeline again with spacy-biosyn"
            )
        # What this package saved is safetensors: a pickle put in its place is never read.
        return read_saved(path, lambda: self.load(path, safetensors_only=True))

    def _require_model(self) -> "torch.nn.Module":
        if self.model is None:
            raise RuntimeError(
                f"the encoder {self.name!r} has no weights yet: call nlp.initialize() "
                "or load a saved pipeline"
            )
        return self.model

