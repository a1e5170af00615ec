"""A trained transformer NER converted to run without PyTorch: its BERT
exported to ONNX into `biosyn_onnx_transformer` (onnx_transformer.py), in
the transformer's place and under its name, and each NER that listened to
it reading `doc.tensor` instead, its own weights kept. Exporting needs
PyTorch; the converted pipeline does not, and no longer trains.

Only what the project's transformer recipe (configs/ner-transformer.cfg)
builds is converted: a BERT with strided windows and BERT word pieces,
listened to by `ner` components through LastTransformerLayerListener with
reduce_mean. Anything else is named, not guessed at."""
import io
from typing import Dict, List

from spacy.language import Language

from ..encoders.graph_weights import stored_as
from ..encoders.hub import import_torch
from ..parts import BERT_TRANSFORMER, BERT_WORDPIECE_ENCODER, DOC_TENSOR, ONNX_TRANSFORMER

TRANSFORMER_FACTORY = "curated_transformer"
_BERTS = (BERT_TRANSFORMER, "spacy-curated-transformers.BertTransformer.v1")
_PIECE_ENCODERS = (BERT_WORDPIECE_ENCODER, "spacy-curated-transformers.BertWordpieceEncoder.v1")
_WINDOWS = "spacy-curated-transformers.WithStridedSpans.v1"
_LISTENER = "spacy-curated-transformers.LastTransformerLayerListener.v1"
_POOLING = "reduce_mean.v1"
# spaCy's ner, and the guideline heads (ner/guidelines.py), which are ner with a span group of their own.
_NERS = ("ner", "biosyn_guideline_ner")


def with_onnx_ner(nlp: Language) -> List[str]:
    """Convert each curated transformer of `nlp` and the NERs that listen
    to it, in place; the names of the transformers converted (none where
    the pipeline has no transformer)."""
    converted = []
    for name in [name for name in nlp.component_names if nlp.get_pipe_meta(name).factory == TRANSFORMER_FACTORY]:
        listeners = _listeners(nlp, name)
        transformer = nlp.get_pipe(name)
        graph, pieces, settings = _exported(nlp, name, transformer)
        for ner in listeners:
            _read_doc_tensor(nlp, ner, settings["width"])
        # replace_pipe also drops its [initialize] block, which loaded Hugging Face weights into PyTorch.
        nlp.replace_pipe(name, ONNX_TRANSFORMER).take(graph, pieces, settings)
        converted.append(name)
    return converted


def _listeners(nlp: Language, name: str) -> List[str]:
    """The components that listen to the transformer `name`, wherever in
    their model (spaCy links them at load): each must be an ner reading the
    last layer through reduce_mean."""
    found = []
    for other in nlp.get_pipe(name).listening_components:
        tok2vec = nlp.config["components"][other].get("model", {}).get("tok2vec", {})
        factory = nlp.get_pipe_meta(other).factory
        pooling = tok2vec.get("pooling", {}).get("@layers")
        if factory not in _NERS or tok2vec.get("@architectures") != _LISTENER or pooling != _POOLING:
            raise ValueError(
                f"{other!r} ({factory}) listens to {name!r}, and only an ner whose tok2vec is {_LISTENER} with "
                f"{_POOLING} (configs/ner-transformer.cfg) can be converted; its tok2vec: "
                f"{tok2vec.get('@architectures')} with {pooling}"
            )
        found.append(other)
    return found


def _exported(nlp: Language, name: str, transformer) -> tuple:
    """The BERT's graph (input_ids in, the last layer out), its word pieces
    and onnx_transformer.SETTINGS."""
    model_config = nlp.config["components"][name]["model"]
    used = {"model": model_config.get("@architectures"),
            "piece_encoder": model_config.get("piece_encoder", {}).get("@architectures"),
            "with_spans": model_config.get("with_spans", {}).get("@architectures")}
    allowed = {"model": _BERTS, "piece_encoder": _PIECE_ENCODERS, "with_spans": (_WINDOWS,)}
    for part, architecture in used.items():
        if architecture not in allowed[part]:
            raise ValueError(f"{name!r}'s {part} is {architecture}: only {' or '.join(allowed[part])} can be "
                             "exported to ONNX")
    pieces = transformer.model.get_ref("piece_encoder").attrs
    windows = next(node for node in transformer.model.walk() if node.name == "with_strided_spans").attrs
    settings = {
        "window": windows["window"], "stride": windows["stride"], "width": transformer.model.get_dim("nO"),
        "padding": model_config["padding_idx"], "lowercase": pieces["lowercase"],
        "strip_accents": pieces["strip_accents"], "marks": [pieces["bos_piece"], pieces["eos_piece"], pieces["unk_piece"]],
    }
    bert = transformer.model.get_ref("transformer").shims[0]._model
    unknown = pieces["wordpiece_processor"].get_initial(pieces["unk_piece"])
    # Stored compact, as the linker's default encoder stores its graph (encoders/graph_weights.py).
    return stored_as(_graph(bert, settings, unknown), "compact"), pieces["wordpiece_processor"].to_list(), settings


def _graph(bert, settings: Dict[str, object], piece: int) -> bytes:
    """The graph, traced on two windows of `piece`, one padded."""
    torch = import_torch("exporting the NER's transformer to ONNX")

    class LastLayer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids):
            return self.bert(input_ids).all_outputs[-1]

    was_training = bert.training
    bert.eval()
    example = torch.full((2, 8), piece, dtype=torch.long)
    example[1, 5:] = settings["padding"]
    buffer = io.BytesIO()
    try:
        with torch.no_grad():
            torch.onnx.export(
                LastLayer(), (example,), buffer, input_names=["input_ids"], output_names=["last_layer"],
                dynamic_axes={"input_ids": {0: "windows", 1: "pieces"}, "last_layer": {0: "windows", 1: "pieces"}},
                opset_version=17, dynamo=False,
            )
    finally:
        bert.train(was_training)
    return buffer.getvalue()


def _read_doc_tensor(nlp: Language, name: str, width: int) -> None:
    """The NER `name` with doc.tensor for its listener, its weights and
    actions those it had."""
    old = nlp.get_pipe(name)
    config = {key: value for key, value in nlp.config["components"][name].items() if key != "factory"}
    config["model"] = {**config["model"], "tok2vec": {"@architectures": DOC_TENSOR, "width": width}}
    new = nlp.replace_pipe(name, nlp.get_pipe_meta(name).factory, config=config)
    new.moves.from_bytes(old.moves.to_bytes(exclude=["strings"]), exclude=["strings"])
    new.cfg.update(old.cfg)
    for ref in ("lower", "upper"):
        new.model.get_ref(ref).from_bytes(old.model.get_ref(ref).to_bytes())
    # TransitionBasedParser's tok2vec: the listener, list2array, then a Linear of its own.
    new.model.get_ref("tok2vec").layers[-1].from_bytes(old.model.get_ref("tok2vec").layers[-1].to_bytes())
    for dim in ("nO", "nI"):
        if old.model.has_dim(dim) is True:
            new.model.set_dim(dim, old.model.get_dim(dim), force=True)
