"""The semantic view for linking without PyTorch: a Hugging Face encoder
exported to ONNX and run by ONNX Runtime, tokenized by the tokenizers library.

Importing torch and transformers' model classes took 5-7 s of every
spacy.load on a 2-core machine; ONNX Runtime and a tokenizer load in half a
second. The graph is exported once from the PyTorch model (TransformerEncoder
.to_onnx) by `initialize()` or `python -m spacy_biosyn onnx`, and a saved
pipeline holds model.onnx and tokenizer.json. A graph read from a file is
run from that file, held open (GraphFile), not from a copy of its bytes:
86 MB less resident for all-MiniLM-L6-v2. `weights` says how the graph
stores its weights (graph_weights.py): "compact" (fp16, the embeddings
int8, computed in fp32; 34 MB instead of 90 for all-MiniLM-L6-v2), "fp32"
as exported, or "int8" (ONNX Runtime's dynamic quantization: faster, less
exact); None, the default, exports compact and runs a saved graph as it
was saved. Names are encoded with the graph that encodes mentions, so the
vectors move together. `names_precision` says how a build encodes names:
"auto" in bf16 with PyTorch where the CPU has bf16 in hardware
(bf16_names.py), with the graph in fp32 elsewhere. Training uses
TransformerEncoder.
"""
import hashlib
import shutil
import warnings
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Union

import numpy as np

from ..files.storage import cache_folder
from ..files.storage import replaced_atomically
from ..parts import ONNX_ENCODER, ONNX_ENCODER_V1, ONNX_ENCODER_V2, registry
from .base import EncoderBase, encode_in_batches, hub_snapshot, offline_copy, read_saved, tokenizer_digest, unit_rows
from .bf16_names import NAMES_PRECISIONS, bf16_encoding, names_precision_used
from .graph_weights import WEIGHTS, in_float32, marked_weights
from .graph_weights import stored_as as weights_stored_as
from .hub import import_torch
from .onnx_session import GraphFile, OnnxSession, check_threads, graph_bytes, write_graph

# A batch's bound on padding, in tokens: about what one more run costs
# (all-MiniLM-L6-v2 on 2 cores: 2 ms a run, 85 us a token), so a batch is
# split where its padding would cost more. PyTorch's encoder keeps whole
# batches: its oneDNN kernels are made per batch shape, and the many shapes
# of split batches cost a bf16 MEDIC build 0.6 GiB more and 10% more time.
PADDING_TOKENS = 32
# A run's bound on tokens, padding included: ONNX Runtime's arena keeps
# what the largest run needed (all-MiniLM-L6-v2: 28 MiB for 512 tokens, 50
# for 1,000, 112 for 128 mentions of 25 tokens), and runs of 512 tokens
# encode as fast as longer ones on 2 cores (docs/record.md).
RUN_TOKENS = 512
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"

@registry.misc(ONNX_ENCODER)
class OnnxEncoder(EncoderBase):
    registered_name = ONNX_ENCODER

    def __init__(
        self,
        name: str,
        pooling: str = "cls",
        similarity: str = "cosine",
        max_length: int = 25,
        batch_size: int = 128,
        weights: Optional[str] = None,
        threads: int = 0,
        names_precision: str = "auto",
    ):
        super().__init__(name, pooling, similarity, max_length, batch_size)
        if weights is not None and weights not in WEIGHTS:
            raise ValueError(f"weights must be one of {WEIGHTS} or null (compact when exported, as saved when "
                             f"read), got {weights!r}")
        check_threads(threads)
        if names_precision not in NAMES_PRECISIONS:
            raise ValueError(f"names_precision must be one of {NAMES_PRECISIONS}, got {names_precision!r}")
        self.weights = weights
        self.threads = threads
        self.names_precision = names_precision
        # The graph: the file it was read from, else its bytes (exported in this process).
        self._model: Union[bytes, GraphFile, None] = None
        # How the graph stores its weights, as its check found.
        self._stored: Optional[str] = None
        self._tokenizer_json: Optional[str] = None
        self._session = None
        self._tokenizer = None
        # The Hugging Face model (folder or hub name) the graph was exported
        # from; None when it was read from a saved model.onnx.
        self._weights: Optional[Union[str, Path]] = None

    @property
    def config_block(self) -> dict:
        return {**super().config_block, "weights": self.weights, "threads": self.threads,
                "names_precision": self.names_precision}

    @property
    def stored_weights(self) -> str:
        """How this encoder's graph stores its weights: as the loaded graph
        says, else as an export would store them."""
        if self._model is not None:
            self._require_session()  # its check finds them
            return self._stored
        return self._exported_as

    @property
    def _exported_as(self) -> str:
        """How an export stores the weights: as set, else compact."""
        return self.weights or "compact"

    @property
    def vectors_block(self) -> dict:
        """This encoder as the vector store and the named linkers' cache key
        its names' vectors. v2 added names_precision and v3 `weights` in
        place of `quantize`; an fp32 or int8 graph's fp32 names are v1's
        vectors (the graph's digest tells its weights apart), so they keep
        v1's key and what the caches hold from before is not encoded again."""
        block = {k: v for k, v in self.config_block.items() if k != "weights"}
        block.update({"@misc": ONNX_ENCODER_V1, "quantize": self.quantize})
        return {**block, "weights": "compact"} if self.stored_weights == "compact" else block

    @property
    def quantize(self) -> bool:
        """Whether activations are quantized too (int8 weights)."""
        return self.stored_weights == "int8"

    @property
    def probe_min_cosine(self) -> float:
        # int8 activations are scaled per batch, so a name's vector depends on
        # the batch it came in: all-MiniLM-L6-v2 re-encoded 600 MEDIC names at
        # cosine 0.987 to 0.999 of their saved vectors, which a 0.99 probe refused.
        return 0.97 if self.quantize else EncoderBase.probe_min_cosine

    @property
    def names_precision_used(self) -> str:
        """"bf16" or "fp32": how `names_encoding` encodes on this machine."""
        return names_precision_used(self.names_precision, self._weights, self.quantize)

    def names_encoding(self) -> Callable[[Sequence[str]], np.ndarray]:
        """What encodes a build's names: `encode`, or in bf16 the PyTorch
        model the graph was exported from, loaded once for the whole build."""
        if self.names_precision_used == "bf16":
            return bf16_encoding(self.settings, self._weights)
        return self.encode

    @property
    def is_loaded(self) -> bool:
        return self._model is not None

    @property
    def dim(self) -> int:
        return self._require_session().get_outputs()[0].shape[1]

    def load(self, name_or_path: Optional[Union[str, Path]] = None) -> "OnnxEncoder":
        """Read a saved model.onnx and tokenizer.json, or export the Hugging
        Face model at a hub name or local folder (this needs PyTorch)."""
        source = Path(offline_copy(str(name_or_path or self.name)))
        if (source / MODEL_FILE).is_file():
            self._weights = None
            # Made while the rest of the linker loads; a graph that does not run is said where it is first used.
            return self._start(GraphFile(source / MODEL_FILE), (source / TOKENIZER_FILE).read_text(encoding="utf8"),
                               wait=False)
        # A local model's export is kept, so the next load imports no PyTorch
        # (the named linkers' warm start); a hub model's, once it is downloaded.
        if not source.is_dir():
            source = hub_snapshot(str(source)) or source
        kept = self._kept_export(source) if source.is_dir() else None
        self._weights = source
        if kept is not None and (kept / MODEL_FILE).is_file() and (kept / TOKENIZER_FILE).is_file():
            try:
                return self._start(GraphFile(kept / MODEL_FILE), (kept / TOKENIZER_FILE).read_text(encoding="utf8"))
            except Exception as error:  # noqa: BLE001: a damaged copy, whatever ONNX Runtime says of it
                # Kept where it cannot be exported again: another install may share the cache.
                import_torch(f"{kept} cannot be run ({type(error).__name__}: {error}); exporting the encoder "
                             f"{str(source)!r} again")
                warnings.warn(f"{kept} is damaged and is exported again ({type(error).__name__})", UserWarning)
                shutil.rmtree(kept, ignore_errors=True)
        import_torch(f"exporting the encoder {str(source)!r} to ONNX",
                     f"name a folder that holds its {MODEL_FILE} and {TOKENIZER_FILE} (a saved pipeline's "
                     "biosyn_linker/encoder), which loads without PyTorch")
        from .transformer import TransformerEncoder

        encoder = TransformerEncoder(**self.settings, device="cpu")
        self.export(encoder.load(source))
        if kept is not None:
            try:
                with replaced_atomically(kept) as staging:
                    self.to_disk(staging)
            except OSError as error:  # a cache that cannot be written: the export is kept in memory only
                warnings.warn(f"the ONNX export could not be kept in {kept.parent} ({error})", UserWarning)
        return self

    def _kept_export(self, source: Path) -> Path:
        """Where the export of the model in the folder `source` is kept: keyed
        by its files (name, size, time) and what the graph holds (pooling, weights)."""
        files = sorted((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in source.iterdir() if f.is_file())
        # An fp32 or int8 export keeps the key it had before `weights` (quantize false or true).
        stored = self._exported_as
        key = repr((str(source.resolve()), files, self.pooling, stored if stored == "compact" else stored == "int8"))
        return cache_folder() / "onnx" / f"{source.name}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:20]}"

    def export(self, encoder) -> "OnnxEncoder":
        """Take over a loaded TransformerEncoder's model, exported with its
        weights stored as configured."""
        backend = getattr(encoder.tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise ValueError(
                f"{encoder.name}: OnnxEncoder needs a fast (Rust) tokenizer, and this model has only a Python one"
            )
        model = encoder.to_onnx()
        return self._start(weights_stored_as(model, self._exported_as), backend.to_str())

    def stored_as(self, weights: str) -> "OnnxEncoder":
        """The same model with its weights stored as `weights`, made from this
        graph: from fp32 any, from compact int8; rounded weights never come back."""
        stored = self.stored_weights
        if weights == stored:
            raise ValueError(f"its encoder already runs in ONNX Runtime with {weights} weights: nothing to convert")
        if stored == "int8" or (stored, weights) == ("compact", "fp32"):
            raise ValueError(f"its encoder's graph holds {stored} weights, which {weights} cannot be made from: "
                             "export the encoder again from its Hugging Face name or folder")
        model = graph_bytes(self._require_model())
        copy = OnnxEncoder(**self.settings, weights=weights, threads=self.threads, names_precision=self.names_precision)
        return copy._start(weights_stored_as(in_float32(model) if stored == "compact" else model, weights),
                           self._tokenizer_json)

    @property
    def tokenizer_digest(self) -> str:
        return tokenizer_digest(self._tokenizer_json)

    @property
    def weights_digest(self) -> str:
        """sha256 of the ONNX graph with its weights (int8 ones differ from
        the float model's, and so do their scores)."""
        if isinstance(self._require_model(), GraphFile):
            return self._model.sha256()
        return hashlib.sha256(self._model).hexdigest()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array (len(texts), dim); unit rows when similarity is cosine."""
        return encode_in_batches(texts, self.dim, self.batch_size, self._embed, self._count_tokens, PADDING_TOKENS,
                                 RUN_TOKENS, source=self.name)

    def _count_tokens(self, texts: List[str]) -> List[int]:
        return [sum(encoding.attention_mask) for encoding in self._tokenizer.encode_batch(texts)]

    def _embed(self, texts: List[str]) -> np.ndarray:
        session, encodings = self._require_session(), self._tokenizer.encode_batch(texts)
        inputs = {
            "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
            "attention_mask": np.array([e.attention_mask for e in encodings], dtype=np.int64),
            "token_type_ids": np.array([e.type_ids for e in encodings], dtype=np.int64),
        }
        wanted = {i.name for i in session.get_inputs()}
        vectors = session.run(None, {name: value for name, value in inputs.items() if name in wanted})[0]
        return unit_rows(vectors) if self.similarity == "cosine" else vectors

    def to_disk(self, path: Union[str, Path]) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        write_graph(self._require_model(), path / MODEL_FILE)
        (path / TOKENIZER_FILE).write_text(self._tokenizer_json, encoding="utf8")

    def from_disk(self, path: Union[str, Path]) -> "OnnxEncoder":
        path = Path(path)
        if path.is_dir() and not (path / MODEL_FILE).is_file():
            raise ValueError(
                f"{path} holds no {MODEL_FILE}: it was saved with spacy_biosyn.TransformerEncoder; "
                "configure that encoder, or convert the pipeline with `python -m spacy_biosyn onnx`"
            )
        return read_saved(path, lambda: self.load(path))

    def _start(self, model: Union[bytes, GraphFile], tokenizer_json: str, wait: bool = True) -> "OnnxEncoder":
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_str(tokenizer_json)
        tokenizer.enable_truncation(self.max_length)
        tokenizer.enable_padding()
        source = str(model.path) if isinstance(model, GraphFile) else None
        self._stored = None
        self._session = OnnxSession(model, self.threads, "this pipeline's linker's encoder", source,
                                    lambda session: self._check_weights(session, source or "the exported graph"))
        self._model, self._tokenizer_json, self._tokenizer = model, tokenizer_json, tokenizer
        if wait:
            self._require_session()
        return self

    def _check_weights(self, session, source: str) -> None:
        """Find how the graph stores its weights, and refuse one other than
        a `weights` set: its vectors are not those the setting promises."""
        marked = marked_weights(session.get_modelmeta().custom_metadata_map)
        # Unmarked: an fp32 graph, or an int8 one saved before int8 graphs said so.
        if self.weights is None or self.weights == (marked or "fp32") or (marked, self.weights) == (None, "int8"):
            self._stored = self.weights or marked or "fp32"
            return
        raise ValueError(
            f"{source} stores its weights as {marked or 'fp32'}, but the encoder's weights = {self.weights!r}: "
            "leave weights unset (null) to run it as saved, or export the encoder again from its Hugging Face "
            "name or folder with the weights wanted"
        )

    def set_threads(self, threads: int) -> None:
        """Run on `threads` threads from now on (0: ONNX Runtime's default,
        every core), the loaded session started again with them."""
        check_threads(threads)
        self.threads = threads
        if self._model is not None:
            self._start(self._model, self._tokenizer_json)

    def _require_session(self):
        self._require_model()
        return self._session.get()

    def _require_model(self) -> Union[bytes, GraphFile]:
        if self._model is None:
            raise RuntimeError(
                f"the encoder {self.name!r} has no model yet: call nlp.initialize() or load a saved pipeline"
            )
        return self._model


@registry.misc(ONNX_ENCODER_V2)
def onnx_encoder_v2(
    name: str, pooling: str = "cls", similarity: str = "cosine", max_length: int = 25, batch_size: int = 128,
    quantize: bool = False, threads: int = 0, names_precision: str = "auto",
) -> OnnxEncoder:
    """What pipelines saved before v3 name: a graph in fp32, or int8 with `quantize`."""
    return OnnxEncoder(name, pooling, similarity, max_length, batch_size, _weights_of(quantize), threads,
                       names_precision)


@registry.misc(ONNX_ENCODER_V1)
def onnx_encoder_v1(
    name: str, pooling: str = "cls", similarity: str = "cosine", max_length: int = 25, batch_size: int = 128,
    quantize: bool = False, threads: int = 0,
) -> OnnxEncoder:
    """What pipelines saved before v2 name: as v2, and a build encodes names with the graph, in fp32."""
    return onnx_encoder_v2(name, pooling, similarity, max_length, batch_size, quantize, threads, "fp32")


def _weights_of(quantize: bool) -> str:
    if not isinstance(quantize, bool):
        raise ValueError(f"quantize must be true or false, got {quantize!r}")
    return "int8" if quantize else "fp32"
