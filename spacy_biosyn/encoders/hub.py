"""One way to load, place and save a Hugging Face model, for the bi-encoder
(transformer.py) and the cross-encoder re-ranker (strategies/reranker.py)
alike: a hub name or a local folder (an offline copy first, where a package
ships one), its device chosen once, and safetensors only when saving.

torch and transformers are imported inside the functions, so a pipeline
whose config names no PyTorch model never imports them, and an install
without the torch extra (a server's) links with ONNX Runtime alone.
"""
import importlib.util
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Tuple, Union

from ..checks import brief, is_whole_number
from ..errors import BiosynError, MissingExtraError
from ..files.storage import read_saved_json
from .base import offline_copy

if TYPE_CHECKING:
    import torch


# What the torch extra installs, by module.
TORCH_EXTRA = ("torch", "transformers", "pytorch_metric_learning")


def missing_from_torch_extra() -> List[str]:
    """The modules of the torch extra that are not installed."""
    return [module for module in TORCH_EXTRA if importlib.util.find_spec(module) is None]


def import_torch(needed_by: str, otherwise: str = ""):
    """The torch module, or an error saying that `needed_by` needs the torch
    extra (torch, transformers and pytorch-metric-learning, each checked),
    and what to do `otherwise` where there is one. An installed torch that
    fails to import says why itself."""
    missing = missing_from_torch_extra()
    if missing:
        raise MissingExtraError(
            f'{needed_by} needs {", ".join(missing)}, which spacy-biosyn installs with its torch extra: '
            f'pip install "spacy-biosyn[torch]"{"; or " + otherwise if otherwise else ""}'
        )
    import torch

    return torch


def choose_device(setting: str, needed_by: str) -> "torch.device":
    """"auto": the first GPU where there is one, else the CPU; else as named
    (cpu, cuda, cuda:1). `needed_by` names what runs there, for an install without torch."""
    torch = import_torch(needed_by)
    return torch.device(("cuda" if torch.cuda.is_available() else "cpu") if setting == "auto" else setting)


def has_native_bf16(device: "torch.device") -> bool:
    """Whether bf16 runs in hardware: a bf16-capable GPU, or a CPU with
    AVX512-BF16 or AMX (oneDNN's own test of the CPU's flags)."""
    import torch

    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    check = getattr(torch.ops.mkldnn, "_is_mkldnn_bf16_supported", None)
    return bool(check is not None and check())


def load_pretrained(
    model_class: Any, source: Union[str, Path], device: "torch.device", *, use_safetensors: Optional[bool] = None,
    quiet: bool = False, **kwargs: Any,
) -> Tuple[Any, Any, dict]:
    """(tokenizer, model on `device` in eval mode, loading info) of a hub
    name or folder. use_safetensors None takes either format, as hub models
    come in both; `quiet` keeps transformers' expected warnings (a new
    classification head) out of the log."""
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    source = offline_copy(str(source))
    hf_logging.disable_progress_bar()  # one bar per load is noise inside a pipeline
    verbosity = hf_logging.get_verbosity()
    if quiet:
        hf_logging.set_verbosity_error()
    if Path(source).is_dir():
        _check_sizes(Path(source) / "config.json")
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        model, info = model_class.from_pretrained(
            source, use_safetensors=use_safetensors, output_loading_info=True, **kwargs
        )
    except OSError as error:  # not on disk and no hub to fetch it from, or not a model's folder
        offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0")
        raise BiosynError(
            f"encoder {source!r} cannot be loaded ({str(error).splitlines()[0][:200]}); "
            + ("the hub is off (HF_HUB_OFFLINE): download it once where there is internet "
               f"(huggingface-cli download {source} --local-dir DIR) and give DIR" if offline and not Path(source).exists()
               else "give a Hugging Face model name or the folder of a saved model (config.json, weights, tokenizer)")
        ) from None
    finally:
        hf_logging.set_verbosity(verbosity)
    if tokenizer.pad_token is None:  # a batch of mentions is padded: every encode would fail
        raise BiosynError(f"encoder {source!r}: its tokenizer has no pad_token (tokenizer_config.json)")
    return tokenizer, model.to(device).eval(), info


# What a transformer's config may declare: far past any model's, short of
# what would build for hours or fill memory before a weight is read (a
# saved pipeline's config.json is a stranger's file).
_MAX_SIZES = {"num_hidden_layers": 512, "num_attention_heads": 1024, "hidden_size": 1 << 16,
              "intermediate_size": 1 << 18, "vocab_size": 1 << 22, "max_position_embeddings": 1 << 20,
              "type_vocab_size": 1 << 10}


def _check_sizes(config: Path) -> None:
    """BiosynError naming `config` where a size it declares is no whole number in range."""
    if not config.is_file():
        return
    settings = read_saved_json(config, expect=dict)
    for key, most in _MAX_SIZES.items():
        value = settings.get(key)
        if value is not None and not (is_whole_number(value, 1) and value <= most):
            raise BiosynError(f"{config}: {key} must be a whole number from 1 to {most:,}, found {brief(value)}")


def save_pretrained(model: Any, tokenizer: Any, path: Union[str, Path]) -> None:
    """Weights as safetensors (never a pickle) and the tokenizer, in `path`."""
    path = Path(path)
    model.save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
