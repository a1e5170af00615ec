"""BioSyn training: synonym marginalization over iteratively refreshed candidates.

One epoch: the current encoder's candidates for every training mention, then
mini-batches scored with S = dense + lambda * sparse over those candidates,
the objective on S / temperature, and an AdamW step on the encoder and lambda.
Before the first step, after every epoch and every `eval_every` steps, one
"snapshot" encodes the dictionary once: it scores dev (the log line, the
best check) and, at an epoch's end, gives the next epoch its dense
candidates.

The output folder holds two spaCy pipelines, `model-best` (by dev Acc@1, the
untrained start included) and `model-last`, the config as run (`config.cfg`)
and one JSON line per dev check (`log.jsonl`).
"""
import copy
import shutil
import time
from contextlib import nullcontext
from itertools import chain
from pathlib import Path
from typing import Any, Dict, List, NamedTuple, Optional

import numpy as np
import spacy
import torch
from pydantic import BaseModel, ConfigDict, Field
from spacy.language import Language
from spacy.util import fix_random_seed, registry
from thinc.api import Config
from tqdm import tqdm
from wasabi import msg

from ..corpora.readers import read_concept_queries
from ..encoders.hub import has_native_bf16
from ..encoders.transformer import TransformerEncoder
from ..files.storage import replaced_atomically, save_pipeline
from ..kb.dictionary import Dictionary
from ..linking.routes import VocabularyView
from ..names import PIPE_NAME
from ..preprocess.text import normalize
from ..search.scoring import biosyn_scores, pooled_sparse_scores
from ..search.tfidf import SparseEncoder
from ..ty import Candidate
from .candidates import (
    dense_top_k,
    mix_candidates,
    own_rows,
    positive_mask,
    sparse_top_k,
    training_pairs,
)
from .common import RunLog, required_path, start_output
from .dev_check import dev_engine, dev_scores
from .objectives import Objective


class TrainingSettings(BaseModel):
    """The [training] block of a config; unknown or ill-typed keys are errors."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    epochs: int = Field(10, ge=1)
    batch_size: int = Field(16, ge=1)
    learning_rate: float = Field(1e-5, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    sparse_weight: float = 0.0  # lambda's initial value
    sparse_weight_learning_rate: float = Field(0.01, ge=0)
    temperature: float = Field(1.0, gt=0)
    k: int = Field(20, ge=2)
    dense_ratio: float = Field(0.5, ge=0, le=1)
    add_train_mentions: bool = True
    mixed_precision: bool = True
    # Steps between dev checks inside an epoch (each re-encodes the
    # dictionary); null checks once an epoch.
    eval_every: Optional[int] = Field(None, ge=1)
    objective: Objective


class Snapshot(NamedTuple):
    """The model's state as seen by the dictionary, taken between epochs."""

    train_vectors: np.ndarray
    dev: Dict[str, float]  # link_acc_1, link_acc_5, candidate recall@k (fractions)


def train(config: Config, output_dir: Path, gpu_id: int = -1) -> Dict[str, Any]:
    """Train as the config says; returns the best epoch's log record."""
    resolved = registry.resolve(config)
    settings = TrainingSettings(**resolved["training"])
    return Trainer(config, resolved, settings, output_dir, gpu_id).run()


class Trainer:
    def __init__(self, config: Config, resolved: dict, settings: TrainingSettings, output_dir: Path, gpu_id: int):
        self.config, self.settings, self.output_dir = config, settings, Path(output_dir)
        fix_random_seed(resolved["system"]["seed"])
        paths = resolved["paths"]
        base = Dictionary.from_file(required_path(paths, "dictionary"))
        self.pairs = training_pairs(read_concept_queries(required_path(paths, "train")))
        if not self.pairs:
            raise ValueError(f"no training mention with a single CUI in {paths['train']}")
        self.gold = [cui for _, cui in self.pairs]
        self.texts = [text for text, _ in self.pairs]
        self.dictionary = base.with_synonyms((c, t) for t, c in self.pairs) if settings.add_train_mentions else base
        self.exclude = own_rows(base, self.dictionary, self.pairs)
        self.dev_queries = read_concept_queries(required_path(paths, "dev"))
        # BioSyn scores dev against train names + train mentions: the default.
        dev_path = paths.get("dev_dictionary")
        self.dev_dictionary = Dictionary.from_file(dev_path) if dev_path else self.dictionary
        if settings.k >= len(self.dictionary):
            raise ValueError(f"training.k = {settings.k} needs a dictionary of more than {settings.k} names")

        self.device = torch.device(f"cuda:{gpu_id}" if gpu_id >= 0 else "cpu")
        self.encoder: TransformerEncoder = resolved["encoder"]
        self.encoder.device = self.device
        self.encoder.load()
        self.sparse = SparseEncoder().fit(self.dictionary.names)
        self.name_sparse = self.sparse.transform(self.dictionary.names)
        self.query_sparse = self.sparse.transform(self.texts)
        self.sparse_ids = sparse_top_k(self.query_sparse, self.name_sparse, settings.k, self.exclude)

        self.sparse_weight = torch.nn.Parameter(torch.tensor(settings.sparse_weight, device=self.device))
        self.optimizer = torch.optim.AdamW(
            [
                {"params": self.encoder.model.parameters()},
                {"params": [self.sparse_weight], "lr": settings.sparse_weight_learning_rate, "weight_decay": 0.0},
            ],
            lr=settings.learning_rate,
            weight_decay=settings.weight_decay,
        )
        self.shuffle = torch.Generator().manual_seed(resolved["system"]["seed"])
        self.log = RunLog(self.output_dir)
        self.step = 0

    def run(self) -> Dict[str, Any]:
        start_output(self.config, self.output_dir)
        msg.info(
            f"{len(self.pairs)} training mentions, {len(self.dictionary)} names, "
            f"{len(self.dev_queries)} dev queries; {self.device}, "
            f"{'bf16 autocast' if self._autocast_dtype() else 'fp32'}"
        )
        start = self.log.since = time.perf_counter()
        snapshot = self.check(0, None)
        for epoch in range(1, self.settings.epochs + 1):
            snapshot = self.train_epoch(epoch, snapshot.train_vectors)
        msg.good(
            f"Trained {self.settings.epochs} epochs in {time.perf_counter() - start:.0f}s; "
            f"best check: epoch {self.log.best['epoch']}, step {self.log.best['step']}"
        )
        self._save()
        return self.log.best

    def check(self, epoch: int, loss: Optional[float]) -> Snapshot:
        """Score dev with the model as it is now; keep its state if best."""
        snapshot = self.snapshot()
        self._record(epoch, loss, snapshot)
        return snapshot

    def train_epoch(self, epoch: int, name_vectors: np.ndarray) -> Snapshot:
        """One epoch over candidates drawn with `name_vectors`; returns the
        snapshot taken at its end."""
        k = self.settings.k
        dense_ids = dense_top_k(self._encode(self.texts), name_vectors, k, self.exclude)
        candidates = mix_candidates(self.sparse_ids, dense_ids, k, self.settings.dense_ratio)
        positives = positive_mask(candidates, self.gold, self.dictionary)
        order = torch.randperm(len(self.pairs), generator=self.shuffle).numpy()
        batches = np.array_split(order, max(1, -(-len(order) // self.settings.batch_size)))
        self.encoder.model.train()
        losses = []
        for i, rows in enumerate(tqdm(batches, desc=f"epoch {epoch}", leave=False, unit="batch"), 1):
            loss = self._loss(rows, candidates[rows], positives[rows])
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()
            losses.append(loss.item())
            self.step += 1
            if i < len(batches) and self.settings.eval_every and self.step % self.settings.eval_every == 0:
                self.encoder.model.eval()
                self.check(epoch, float(np.mean(losses)))
                self.encoder.model.train()
        self.encoder.model.eval()
        return self.check(epoch, float(np.mean(losses)))

    def _loss(self, rows: np.ndarray, candidates: np.ndarray, positives: np.ndarray) -> torch.Tensor:
        b, k = candidates.shape
        # Each distinct string is encoded once per step, queries and names alike.
        strings = [self.texts[i] for i in rows] + [self.dictionary.names[i] for i in candidates.ravel()]
        unique = {s: i for i, s in enumerate(dict.fromkeys(strings))}
        with self._autocast():
            vectors = self.encoder.embed(list(unique)).float()
        index = torch.tensor([unique[s] for s in strings], device=self.device)
        queries, names = vectors[index[:b]], vectors[index[b:]].view(b, k, -1)
        dense = torch.einsum("bd,bkd->bk", queries, names)
        sparse = torch.from_numpy(pooled_sparse_scores(self.name_sparse, self.query_sparse[rows], candidates))
        scores = biosyn_scores(dense, sparse.to(self.device), self.sparse_weight)
        return self.settings.objective(scores / self.settings.temperature, torch.from_numpy(positives).to(self.device))

    def snapshot(self) -> Snapshot:
        """Encode the names once; score dev with them, and with the
        candidates the next epoch would draw from the dev dictionary."""
        names = list(dict.fromkeys(chain(self.dictionary.names, self.dev_dictionary.names)))
        vectors = self._encode(names)
        row = {name: i for i, name in enumerate(names)}
        train_vectors = vectors[[row[n] for n in self.dictionary.names]]
        dev_vectors = vectors[[row[n] for n in self.dev_dictionary.names]]
        # Dev is ranked by the engine of the pipe that would be saved now, as users would rank.
        engine = dev_engine(self.encoder, self.sparse_weight.item(), self.dev_dictionary, self.sparse, dev_vectors)
        with self._autocast():
            dev = dev_scores(engine, self.dev_queries, lambda texts: self._candidates(engine.vocabulary(), dev_vectors, texts),
                             self.settings.k)
        return Snapshot(train_vectors, dev)

    def _candidates(self, linker: VocabularyView, name_vectors: np.ndarray, texts: List[str]) -> List[List[Candidate]]:
        """The k training candidates a text would get from the linker's
        dictionary, whose names' vectors are `name_vectors`."""
        texts = [normalize(t) for t in texts]
        k = self.settings.k
        sparse_ids = sparse_top_k(self.sparse.transform(texts), linker.index.sparse_vectors, k)
        dense_ids = dense_top_k(self.encoder.encode(texts), name_vectors, k)
        mixed = mix_candidates(sparse_ids, dense_ids, k, self.settings.dense_ratio)
        d = linker.dictionary
        return [[Candidate(d.names[i], d.concepts[i], 0.0) for i in row] for row in mixed.tolist()]

    def _record(self, epoch, loss, snapshot: Snapshot) -> bool:
        """Log a dev check; whether it is the best so far (its state kept)."""
        record = {
            "epoch": epoch,
            "step": self.step,
            "loss": loss,
            "dev_link_acc_1": snapshot.dev["link_acc_1"],
            "dev_link_acc_5": snapshot.dev["link_acc_5"],
            f"dev_recall@{self.settings.k}": snapshot.dev["recall"],
            "sparse_weight": self.sparse_weight.item(),
        }
        loss_text = "-" if loss is None else f"{loss:.4f}"
        return self.log.check(record, (
            f"epoch {epoch:>2} step {self.step:>5} | loss {loss_text} | dev recall@{self.settings.k} {100 * snapshot.dev['recall']:.1f} "
            f"| dev acc@1 {100 * snapshot.dev['link_acc_1']:.2f} acc@5 {100 * snapshot.dev['link_acc_5']:.2f} "
            f"| lambda {record['sparse_weight']:.3f}"
        ), self._state)

    def _state(self) -> Dict[str, Any]:
        return {
            "model": copy.deepcopy(self.encoder.model.state_dict()),
            "sparse_weight": self.sparse_weight.item(),
        }

    def _save(self) -> None:
        """model-last, and model-best (a copy when the last check was best).
        Names are re-encoded at full precision: the saved index must hold
        what inference computes."""
        last = self.output_dir / "model-last"
        self._save_pipeline(last, self.sparse_weight.item(), self.log.records[-1])
        target = self.output_dir / "model-best"
        best = self.log.best
        if self.log.last_is_best:
            with replaced_atomically(target) as staging:
                shutil.copytree(last, staging, dirs_exist_ok=True)
        else:
            self.encoder.model.load_state_dict(self.log.best_state["model"])
            self._save_pipeline(target, self.log.best_state["sparse_weight"], best)
        msg.good(f"Saved {target} (epoch {best['epoch']}, step {best['step']}) and {last}")

    def _pipeline(self, sparse_weight: float) -> Language:
        """The encoder as it is now, with this lambda, indexing the dev
        dictionary, as a spaCy pipeline to save."""
        nlp = spacy.blank(self.config["nlp"]["lang"])
        pipe = nlp.add_pipe(
            PIPE_NAME,
            config={"encoder": dict(self.config["encoder"]), "sparse_weight": sparse_weight},
        )
        pipe.engine.set_encoder(self.encoder, reencode=False)
        pipe.engine.set_dictionary(self.dev_dictionary, sparse=self.sparse)
        return nlp

    def _save_pipeline(self, path: Path, sparse_weight: float, record: Dict[str, Any]) -> None:
        nlp = self._pipeline(sparse_weight)
        nlp.meta["spacy_biosyn"] = {
            "epoch": record["epoch"], "step": record["step"], "training": dict(self.config["training"].items())
        }
        save_pipeline(nlp, path)  # all or nothing: a run killed while saving leaves the last save

    def _encode(self, texts: List[str]) -> np.ndarray:
        with self._autocast():
            return self.encoder.encode(texts)

    def _autocast_dtype(self) -> Optional[torch.dtype]:
        # bf16 needs no loss scaling; hardware without it trains in fp32.
        if self.settings.mixed_precision and has_native_bf16(self.device):
            return torch.bfloat16
        return None

    def _autocast(self):
        dtype = self._autocast_dtype()
        return torch.autocast(self.device.type, dtype=dtype) if dtype else nullcontext()

