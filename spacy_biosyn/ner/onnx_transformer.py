"""The transformer NER without PyTorch: `biosyn_onnx_transformer` runs the
NER's fine-tuned BERT from an ONNX graph and puts each doc's token vectors
in `doc.tensor`, where the NER's `spacy_biosyn.DocTensor.v1` reads them.

spacy-curated-transformers runs the BERT in PyTorch, and where PyTorch is
installed thinc imports it with spaCy: 1.2-1.8 s of every `import spacy`
on 2 cores, and transformers' second more (docs/record.md). `python -m
spacy_biosyn onnx` exports the BERT (ner/onnx_export.py) and puts this
component in the transformer's place. It computes what the NER's listener
(LastTransformerLayerListener, reduce_mean) received from it:
- the doc's word pieces, [CLS] first and [SEP] last (wordpieces.py);
- the last layer over windows of `window` pieces, one every `stride`, each
  row of two neighbouring windows' overlap the mean of the two
  (spacy-curated-transformers' WithStridedSpans);
- each token's vector the mean of its pieces' rows, [CLS] and [SEP]
  dropped; a whitespace token has no piece and a row of zeros (in a doc of
  whitespace alone each has an [UNK] piece, as wordpieces.py says).
The graph runs in fp32 from weights stored compact (fp16, the piece
embeddings in int8: encoders/graph_weights.py), as the linker's default
encoder stores its own; PyTorch ran it in bf16 where the CPU has it, so
vectors agree to that precision, not to the bit (docs/record.md gives the
NER's F each way).
"""
import json
from pathlib import Path
from typing import Iterable, Iterator, List, Union

import numpy as np
import srsly
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.util import minibatch, registry
from thinc.api import Model, NumpyOps

from ..checks import MOST_IN_A_BATCH, brief, is_whole_number
from ..encoders.onnx import MODEL_FILE
from ..encoders.onnx_session import GraphFile, OnnxSession, check_threads, graph_bytes, write_graph
from ..errors import SavedStateError
from ..files.storage import read_saved_json
from ..files.manifest import check_manifest, write_manifest
from ..parts import DOC_TENSOR, ONNX_TRANSFORMER
from .wordpieces import doc_pieces

PIECES_FILE = "wordpieces.txt"
SETTINGS_FILE = "settings.json"
# What the export says of the BERT and its word pieces, each checked on load.
SETTINGS = {"window": int, "stride": int, "width": int, "padding": int, "lowercase": bool, "strip_accents": bool,
            "marks": list}


@Language.factory(ONNX_TRANSFORMER, default_config={"threads": 0, "batch_size": 64})
def make_onnx_transformer(nlp: Language, name: str, threads: int, batch_size: int) -> "OnnxTransformer":
    return OnnxTransformer(name, threads, batch_size)


class OnnxTransformer(Pipe):
    """A transformer NER's BERT run by ONNX Runtime; made from a trained
    pipeline by `python -m spacy_biosyn onnx`, not trained."""

    def __init__(self, name: str, threads: int = 0, batch_size: int = 64):
        check_threads(threads)
        if not is_whole_number(batch_size, 1, MOST_IN_A_BATCH):
            raise ValueError(f"{name}: batch_size (windows per run) must be a whole number from 1 to "
                             f"{MOST_IN_A_BATCH:,}, got {brief(batch_size)}")
        self.name, self.threads, self.batch_size = name, threads, batch_size
        self.settings: dict = {}
        self._graph: Union[bytes, GraphFile, None] = None
        self._pieces: List[str] = []
        self._processor = self._session = None
        self._source = ""

    def take(self, graph: bytes, pieces: List[str], settings: dict, source: str = "the export") -> "OnnxTransformer":
        """Run `graph` (an export with input_ids in, last_layer out), its
        word pieces `pieces`, as `settings` (SETTINGS) say; `source` names
        where they came from in an error."""
        self.settings = _checked(settings, f"{source}'s settings")
        self._start(graph, pieces, source)
        self._require_session()
        return self

    def set_threads(self, threads: int) -> None:
        """Run on `threads` threads from now on (0: every core), the loaded
        session started again with them (a link-corpus worker's share)."""
        check_threads(threads)
        self.threads = threads
        if self._graph is not None:
            self._start(self._graph, self._pieces, self._source)

    def initialize(self, get_examples=None, *, nlp=None) -> None:
        if self._graph is None:
            raise ValueError(
                f"{self.name} is made from a trained transformer NER by `python -m spacy_biosyn onnx`, "
                "not initialized: train configs/ner-transformer.cfg, then convert the pipeline"
            )

    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        # A batch's windows run together, `batch_size` windows at a time.
        for docs in minibatch(stream, size=batch_size):
            self.set_annotations(docs, self.predict(docs))
            yield from docs

    def predict(self, docs: List[Doc]) -> List[np.ndarray]:
        """Each doc's token vectors: float32 (len(doc), width)."""
        window, stride = self.settings["window"], self.settings["stride"]
        pieces = [doc_pieces(doc, self._require_processor(), lowercase=self.settings["lowercase"],
                             strip_accents=self.settings["strip_accents"], marks=tuple(self.settings["marks"]))
                  for doc in docs]
        spans = [ids[start:start + window] for ids, _ in pieces for start in range(0, len(ids), stride)]
        rows = iter(self._last_layer(spans))
        tensors = []
        for ids, lengths in pieces:
            windows = [next(rows) for _ in range(0, len(ids), stride)]
            token_rows = stitched(windows, len(ids), window, stride)[1:-1]
            tensors.append(_OPS.reduce_mean(np.ascontiguousarray(token_rows), _OPS.asarray1i(lengths[1:-1])))
        return tensors

    def set_annotations(self, docs: List[Doc], tensors: List[np.ndarray]) -> None:
        for doc, tensor in zip(docs, tensors):
            doc.tensor = tensor

    def _last_layer(self, spans: List[List[int]]) -> Iterator[np.ndarray]:
        session = self._require_session()
        for start in range(0, len(spans), self.batch_size):
            batch = spans[start:start + self.batch_size]
            ids = np.full((len(batch), max(map(len, batch))), self.settings["padding"], dtype=np.int64)
            for row, span in zip(ids, batch):
                row[:len(span)] = span
            (output,) = session.run(None, {"input_ids": ids})
            yield from (output[i, :len(span)] for i, span in enumerate(batch))

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return srsly.msgpack_dumps({"graph": graph_bytes(self._require_graph()),
                                    "pieces": self._pieces, "settings": self.settings})

    def from_bytes(self, data: bytes, *, exclude=tuple()) -> "OnnxTransformer":
        try:
            state = srsly.msgpack_loads(data)
        except Exception as error:  # noqa: BLE001: msgpack raises its own types for every malformation
            raise SavedStateError(f"{self.name}: from_bytes was given bytes that are no saved {ONNX_TRANSFORMER} "
                                  f"({type(error).__name__})") from None
        if not (isinstance(state, dict) and isinstance(state.get("graph"), bytes)
                and isinstance(state.get("pieces"), list) and all(isinstance(p, str) for p in state["pieces"])):
            raise SavedStateError(f"{self.name}: from_bytes was given no saved {ONNX_TRANSFORMER} (a graph, its "
                                  "word pieces and settings)")
        return self.take(state["graph"], state["pieces"], state.get("settings"), f"{self.name}'s bytes")

    def to_disk(self, path: Union[str, Path], *, exclude=tuple()) -> None:
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        write_graph(self._require_graph(), path / MODEL_FILE)
        (path / PIECES_FILE).write_text("\n".join(self._pieces), encoding="utf8", newline="")
        (path / SETTINGS_FILE).write_text(json.dumps(self.settings, indent=1), encoding="utf8")
        write_manifest(path)

    def from_disk(self, path: Union[str, Path], *, exclude=tuple()) -> "OnnxTransformer":
        path = Path(path)
        check_manifest(path)  # every file as it was saved
        self.settings = _checked(read_saved_json(path / SETTINGS_FILE, expect=dict), str(path / SETTINGS_FILE))
        with open(path / PIECES_FILE, encoding="utf8", newline="") as f:  # a piece may hold a \r
            pieces = f.read().split("\n")
        # The session is made while the rest of the pipeline loads, and checked where it is first used.
        return self._start(GraphFile(path / MODEL_FILE), pieces, str(path))

    def _start(self, graph: Union[bytes, GraphFile], pieces: List[str], source: str):
        from curated_tokenizers import WordPieceProcessor

        processor = WordPieceProcessor(pieces)
        for mark in self.settings["marks"]:
            try:
                processor.get_initial(mark)
            except RuntimeError:
                raise SavedStateError(f"{source}: the word pieces have no {mark!r}") from None
        self._graph, self._pieces, self._processor, self._source = graph, pieces, processor, source
        self._session = OnnxSession(graph, self.threads, f"{self.name} (the NER's BERT)", f"{source}: the NER's graph",
                                    self._check_graph)
        return self

    def _check_graph(self, session) -> None:
        inputs, width = [i.name for i in session.get_inputs()], session.get_outputs()[0].shape[-1]
        if inputs != ["input_ids"] or width != self.settings["width"]:
            raise SavedStateError(f"{self._source}: the graph takes {inputs} and gives {width}-wide rows, where "
                                  f"its settings say ['input_ids'] and {self.settings['width']}")

    def _require_session(self):
        self._require_graph()
        return self._session.get()

    def _require_processor(self):
        self._require_graph()
        return self._processor

    def _require_graph(self) -> Union[bytes, GraphFile]:
        if self._graph is None:
            self.initialize()
        return self._graph


_OPS = NumpyOps()


def stitched(windows: List[np.ndarray], length: int, window: int, stride: int) -> np.ndarray:
    """The rows of a sequence of `length` from its windows (one every
    `stride`, `window` long), as spacy-curated-transformers' WithStridedSpans
    joins them: each window's first `stride` rows, those it shares with the
    window before it the mean of the two."""
    kept, previous = [], None
    for start, current in zip(range(0, length, stride), windows):
        overlap = min(window - stride, length - start)
        if previous is not None and overlap:
            current[:overlap] = (previous[-overlap:] + current[:overlap]) / np.float32(2)
        kept.append(current[:stride])
        previous = current
    return np.concatenate(kept)


def _checked(settings: object, source: str) -> dict:
    if not isinstance(settings, dict) or set(settings) != set(SETTINGS) or not all(
            isinstance(settings[key], kind) and (kind is bool or not isinstance(settings[key], bool))
            for key, kind in SETTINGS.items()):
        raise SavedStateError(f"{source}: expected {', '.join(SETTINGS)} ({dict((k, v.__name__) for k, v in SETTINGS.items())}), "
                              f"got {settings!r}")
    if not 1 <= settings["window"] // 2 <= settings["stride"] <= settings["window"] or len(settings["marks"]) != 3 \
            or not all(isinstance(mark, str) for mark in settings["marks"]):
        raise SavedStateError(f"{source}: stride must lie in [window / 2, window], window be 2 or more, and marks be "
                              f"[CLS], [SEP] and [UNK]'s pieces, got {settings!r}")
    return settings


@registry.architectures(DOC_TENSOR)
def build_doc_tensor(width: int) -> Model:
    """The token vectors a component before the NER set in doc.tensor
    (biosyn_onnx_transformer): for prediction, not training."""
    return Model("doc_tensor", _doc_tensor_forward, dims={"nO": width})


def _doc_tensor_forward(model: Model, docs: List[Doc], is_train: bool):
    width = model.get_dim("nO")
    for doc in docs:
        if doc.tensor.shape != (len(doc), width):
            raise ValueError(
                f"the NER reads {width}-wide token vectors from doc.tensor, and this doc's is {doc.tensor.shape} for "
                f"{len(doc)} tokens: run the pipeline's {ONNX_TRANSFORMER} before it"
            )

    def backprop(d_tensors):
        raise ValueError(f"{DOC_TENSOR} does not train: train the transformer recipe, then convert the pipeline")

    return [model.ops.asarray2f(doc.tensor) for doc in docs], backprop
