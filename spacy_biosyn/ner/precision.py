"""bf16 where the hardware runs it, fp32 elsewhere.

A CPU with AMX or AVX512-BF16 (Sapphire Rapids and later) multiplies bf16
matrices several times faster than fp32; one without (an AVX2-only AMD
EPYC) emulates bf16 and runs it several times slower. So every bf16 switch
of the package is "auto": bf16 autocast where `has_native_bf16`
(encoders/hub.py) says the hardware has it, fp32 elsewhere, decided on the
machine that runs the model, not the one that trained it.

`spacy_biosyn.BertTransformer.v1` is spacy-curated-transformers' BERT with
such a switch: thinc's PyTorch shim only knows CUDA's fp16 autocast, so on
a CPU its `mixed_precision` does nothing. The weights stay fp32 (the saved
pipeline is the same either way) and the backward pass runs outside the
autocast, as PyTorch asks.

Its shape (width, heads, layers, vocabulary, positions) is the encoder's:
`with_encoder_shape` reads it from the encoder folder's config.json, so the
NER recipe switches to SapBERT or PubMedBERT with paths.encoder alone
(`python -m spacy_biosyn train-ner`, or `train_ner` here).
"""
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterable, Literal, Optional, Tuple, Union

from spacy.util import SimpleFrozenDict, registry
from thinc.api import Config, Model, PyTorchShim

from ..encoders.hub import has_native_bf16
from ..errors import BiosynError
from ..parts import BERT_TRANSFORMER

if TYPE_CHECKING:
    import torch

Precision = Literal["auto", "bf16", "fp32"]


def uses_bf16(precision: Precision, device: "torch.device") -> bool:
    return precision == "bf16" or (precision == "auto" and has_native_bf16(device))


class AutocastShim(PyTorchShim):
    """thinc's PyTorch shim with the forward pass under bf16 autocast on the
    model's own device, where `uses_bf16(precision)` holds there."""

    def __init__(self, *args, precision: Precision = "auto", **kwargs):
        super().__init__(*args, **kwargs)
        self.precision = precision

    @classmethod
    def of(cls, shim: PyTorchShim, precision: Precision) -> "AutocastShim":
        return cls(shim._model, config=shim.cfg, optimizer=shim._optimizer, mixed_precision=shim._mixed_precision,
                   grad_scaler=shim._grad_scaler, serialize_model=shim._serialize_model,
                   deserialize_model=shim._deserialize_model, precision=precision)

    def _autocast(self):
        import torch  # here, so that the registry lists BertTransformer without PyTorch

        enabled = uses_bf16(self.precision, self.device)
        return torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=enabled)

    def predict(self, inputs):
        with self._autocast():
            return super().predict(inputs)

    def begin_update(self, inputs):
        # The autocast covers the forward pass only: the backprop callback
        # it returns runs later, outside it.
        with self._autocast():
            return super().begin_update(inputs)


@registry.architectures(BERT_TRANSFORMER)
def build_bert_transformer(
    *,
    vocab_size: int,
    with_spans: Callable,
    piece_encoder: Model,
    attention_probs_dropout_prob: float = 0.1,
    hidden_act: str = "gelu",
    hidden_dropout_prob: float = 0.1,
    hidden_width: int = 768,
    intermediate_width: int = 3072,
    layer_norm_eps: float = 1e-12,
    max_position_embeddings: int = 512,
    model_max_length: int = 512,
    num_attention_heads: int = 12,
    num_hidden_layers: int = 12,
    padding_idx: int = 0,
    type_vocab_size: int = 2,
    torchscript: bool = False,
    mixed_precision: bool = False,
    grad_scaler_config: dict = SimpleFrozenDict(),
    wrapped_listener: Optional[Model] = None,
    precision: Precision = "auto",
) -> Model:
    """spacy-curated-transformers.BertTransformer.v1 (its arguments and
    defaults, so a saved pipeline's block loads under this name too) with
    `precision`: "auto" (bf16 where the hardware has it), "bf16" or "fp32".
    `mixed_precision` stays CUDA's fp16 with a gradient scaler, and a
    TorchScript model runs as it was compiled."""
    bert = dict(locals())  # curated-transformers' own arguments, taken before anything else is bound
    del bert["precision"]
    from spacy_curated_transformers.models.architectures import build_bert_transformer_model_v1

    model = build_bert_transformer_model_v1(**bert)
    for node in model.walk():
        node.shims[:] = [AutocastShim.of(shim, precision) if type(shim) is PyTorchShim else shim
                         for shim in node.shims]
    return model


# BertTransformer.v1's shape arguments and the config.json keys of a Hugging
# Face BERT folder that say them.
_SHAPE = {
    "vocab_size": "vocab_size", "hidden_width": "hidden_size", "intermediate_width": "intermediate_size",
    "num_attention_heads": "num_attention_heads", "num_hidden_layers": "num_hidden_layers",
    "max_position_embeddings": "max_position_embeddings", "type_vocab_size": "type_vocab_size",
    "layer_norm_eps": "layer_norm_eps", "hidden_act": "hidden_act", "padding_idx": "pad_token_id",
}


def encoder_shape(name_or_path: Union[str, Path]) -> Dict[str, object]:
    """BertTransformer.v1's shape arguments as the BERT at `name_or_path` (a
    Hugging Face folder or name: SapBERT, PubMedBERT, MiniLM) has them, from
    its config.json; BiosynError where there is no BERT config to read."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(str(name_or_path)).to_dict()
    except (OSError, ValueError) as error:
        reason = (str(error).strip().splitlines() or [""])[0][:200]
        raise BiosynError(f"{name_or_path}: no readable config.json of a Hugging Face model ({reason})") from None
    if config.get("model_type") != "bert":
        raise BiosynError(
            f"{name_or_path}: the NER recipe's transformer is a BERT, and this model is a "
            f"{config.get('model_type')!r}; give a BERT (SapBERT, PubMedBERT, BioBERT, MiniLM) as the encoder"
        )
    shape = {argument: config[key] for argument, key in _SHAPE.items() if key in config}
    shape["model_max_length"] = config["max_position_embeddings"]
    return shape


def with_encoder_shape(config: Config, keep: Iterable[str] = ()) -> Tuple[Config, Dict[str, Dict[str, object]]]:
    """`config` with each spacy_biosyn.BertTransformer.v1 block shaped as the
    encoder its initializer loads weights from (`encoder_loader.name`, the
    recipe's paths.encoder), except the `keep` keys (overrides the user gave,
    as "components.transformer.model.hidden_width"); and the shape given to
    each component. Written into the config, the shape is saved with the
    trained pipeline, which then loads anywhere."""
    config = Config(config)
    resolved = config.interpolate()
    filled = {}
    for name, block in config.get("components", {}).items():
        model = block.get("model", {})
        loader = resolved.get("initialize", {}).get("components", {}).get(name, {}).get("encoder_loader", {})
        if model.get("@architectures") != BERT_TRANSFORMER or not loader.get("name"):
            continue
        shape = {key: value for key, value in encoder_shape(loader["name"]).items()
                 if f"components.{name}.model.{key}" not in keep}
        model.update(shape)
        filled[name] = shape
    return config, filled


def train_ner(
    config: Config, output_dir: Path, gpu_id: int = -1, keep: Iterable[str] = (),
    announce: Callable[[str], None] = print,
) -> None:
    """Train an NER recipe with spaCy's trainer into `output_dir`, shaped as
    its encoder (`with_encoder_shape`, but for the `keep` keys the user
    set), which `announce` is told; the config trained, shape included, is
    saved beside the model as train.cfg."""
    from spacy.cli.train import train as spacy_train

    config, filled = with_encoder_shape(config, keep=keep)
    for name, shape in filled.items():
        announce(f"{name}: the encoder's shape, " + ", ".join(f"{key} {value}" for key, value in shape.items()))
    output_dir.mkdir(parents=True, exist_ok=True)
    config.to_disk(output_dir / "train.cfg")
    spacy_train(output_dir / "train.cfg", output_dir, use_gpu=gpu_id)
