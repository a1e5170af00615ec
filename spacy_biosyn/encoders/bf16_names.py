"""A vocabulary's names encoded in bf16 where the CPU multiplies bf16 in
hardware: the ONNX encoder's `names_precision`.

A build's wait is encoding every name. ONNX Runtime's CPU provider runs
the exported graph in fp32 (or int8, too far from fp32 to keep IDs);
PyTorch's oneDNN runs bf16 products on AMX and AVX512-BF16. So
where `names_precision` resolves to bf16, a build's names go through the
PyTorch model that the ONNX graph was exported from, under bf16 autocast
(products in bf16, sums, layer norms and softmax in fp32), while mentions
stay with the graph in fp32. On a 2-core Xeon with AMX, all-MiniLM-L6-v2
encoded 4,000 MEDIC names at 1,717 names/s against ONNX Runtime's 817, each
vector at cosine >= 0.99997 of fp32's (docs/record.md). A CPU without bf16
in hardware (AVX2 only) emulates it several times slower than fp32, so
"auto" keeps fp32 there.
"""
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

import numpy as np

from ..errors import BiosynError
from .hub import has_native_bf16, import_torch, missing_from_torch_extra

NAMES_PRECISIONS = ("auto", "bf16", "fp32")


def names_precision_used(setting: str, weights: Optional[Union[str, Path]], quantize: bool) -> str:
    """"bf16" or "fp32": how a build encodes names under `setting` on this
    machine, for an encoder exported from the PyTorch weights at `weights`
    (None: loaded from a saved graph, without them)."""
    if setting == "bf16":
        import_torch("names_precision = 'bf16'", "set names_precision to 'auto' or 'fp32'")
        if quantize:
            raise BiosynError("names_precision = 'bf16' and int8 weights (weights = 'int8'; quantize = true in v2): "
                              "int8 weights encode the names "
                              "with their own graph, as the mentions; set names_precision to 'auto' or 'fp32'")
        if weights is None:
            raise BiosynError(
                "names_precision = 'bf16' encodes names with the PyTorch weights the ONNX graph was exported "
                "from, and this encoder was loaded from a saved model.onnx without them; set names_precision to "
                "'auto' or 'fp32', or load the encoder from its Hugging Face name or folder"
            )
        return "bf16"
    if setting == "auto" and weights is not None and not quantize and cpu_has_bf16():
        return "bf16"
    return "fp32"


def cpu_has_bf16() -> bool:
    """Whether this CPU runs bf16 products in hardware, as oneDNN judges
    its flags; False without the torch extra, whose model runs them."""
    if missing_from_torch_extra():
        return False
    import torch

    return has_native_bf16(torch.device("cpu"))


def bf16_encoding(settings: dict, weights: Union[str, Path]) -> Callable[[Sequence[str]], np.ndarray]:
    """`encode(texts)` by the PyTorch model at `weights` with the encoder's
    `settings`, on the CPU under bf16 autocast; float32 vectors out."""
    import torch

    from .transformer import TransformerEncoder

    encoder = TransformerEncoder(**settings, device="cpu").load(weights)

    def encode(texts: Sequence[str]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return encoder.encode(texts)

    return encode
