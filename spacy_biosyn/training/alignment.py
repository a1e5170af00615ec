"""SapBERT's self-alignment pretraining: a name encoder aligned on the vocabulary.

Every name of a concept with two or more names is paired with another name
of that concept; a batch of pairs is encoded at once and the
multi-similarity loss over the batch's hard pairs (mined by a triplet-margin
miner) pulls each concept's names together and pushes apart the other
concepts' names that come too close. This is Liu et al. (NAACL 2021)'s
recipe: MS loss alpha 1, beta 60, base 0.5, miner margin 0.2, AdamW at 2e-5
with weight decay 0.01, one epoch. It runs on the encoder exactly as the
linker uses it (`TransformerEncoder.embed`: its pooling, similarity and
max_length), on the CPU or a GPU.

The output folder holds `encoder/` (a Hugging Face folder every later step
reads as it reads assets/encoder), the config as run (`config.cfg`) and one
JSON line of mean loss per `log_every` steps (`log.jsonl`).
"""
import json
import random
import time
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import torch
from pydantic import BaseModel, ConfigDict, Field
from pytorch_metric_learning import losses, miners
from spacy.util import fix_random_seed, registry
from thinc.api import Config
from tqdm import tqdm
from wasabi import msg

from ..corpora.readers import read_concept_queries
from ..encoders.hub import has_native_bf16
from ..encoders.transformer import TransformerEncoder
from ..errors import DictionaryError
from ..kb.dictionary import Dictionary
from ..kb.ids import bare_id
from ..ty import Concept
from ..vocabularies.formats import read_vocabulary_file
from .candidates import training_pairs
from .common import required_path, start_output


class AlignmentSettings(BaseModel):
    """The [pretraining] block of a config; unknown or ill-typed keys are errors."""

    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(1, ge=1)
    batch_size: int = Field(128, ge=2)  # positive pairs a step: twice as many names
    learning_rate: float = Field(2e-5, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    miner_margin: float = Field(0.2, ge=0)
    alpha: float = Field(1.0, gt=0)
    beta: float = Field(60.0, gt=0)
    base: float = 0.5
    # Stop early (a smoke test, a time budget); null runs every epoch whole.
    max_steps: Optional[int] = Field(None, ge=1)
    log_every: int = Field(20, ge=1)
    mixed_precision: bool = True


def concept_groups(dictionary: Dictionary, mentions: Iterable[Tuple[str, str]] = ()) -> List[List[str]]:
    """The names of each of the vocabulary's concepts (a name several
    concepts share is in each), with the (normalized mention, ID) pairs of
    `mentions` under the concept that lists the ID, in any namespace (an
    NCBI mention filed under OMIM joins the MEDIC concept that lists that
    OMIM ID beside its MeSH one), else under a concept of their own.
    Concepts are never merged with each other: MEDIC concepts that share a
    secondary ID are still different diseases."""
    groups: Dict[Concept, List[str]] = {}
    for name, concepts in zip(dictionary.names, dictionary.concepts):
        for ids in concepts:
            groups.setdefault(ids, []).append(name)
    owner: Dict[str, Concept] = {}
    for ids in groups:
        for cui in ids:
            owner.setdefault(bare_id(cui), ids)
    for text, cui in mentions:
        names = groups.setdefault(owner.get(bare_id(cui), (cui,)), [])
        if text not in names:
            names.append(text)
    return list(groups.values())


def positive_pairs(groups: Sequence[Sequence[str]], rng: random.Random) -> List[Tuple[str, str, int]]:
    """(name, another name of its concept, concept number) for every name of
    a concept with two or more, shuffled: one epoch's pairs."""
    pairs = []
    for number, names in enumerate(groups):
        if len(names) < 2:
            continue
        for i, name in enumerate(names):
            j = rng.randrange(len(names) - 1)  # any index but i
            pairs.append((name, names[j + (j >= i)], number))
    rng.shuffle(pairs)
    return pairs


def pretrain_encoder(config: Config, output_dir: Path, gpu_id: int = -1) -> List[Dict[str, float]]:
    """Align the config's encoder on its vocabulary; returns the loss log."""
    resolved = registry.resolve(config)
    settings = AlignmentSettings(**resolved["pretraining"])
    seed = resolved["system"]["seed"]
    fix_random_seed(seed)
    paths = resolved["paths"]
    dictionary, _ = read_vocabulary_file(required_path(paths, "dictionary"))
    # As BioSyn trains: composite mentions ("breast and ovarian cancer") and CUI-less ones left out.
    mentions = training_pairs(read_concept_queries(paths["mentions"])) if paths.get("mentions") else []
    groups = concept_groups(dictionary, mentions)
    if not any(len(names) > 1 for names in groups):
        raise DictionaryError(f"{paths['dictionary']}: no concept has two names, so there is nothing to align")

    encoder: TransformerEncoder = resolved["encoder"]
    encoder.device = torch.device(f"cuda:{gpu_id}" if gpu_id >= 0 else "cpu")
    encoder.load()
    output_dir = start_output(config, output_dir)
    run, rng = _Alignment(encoder, settings), random.Random(seed)
    msg.info(
        f"{len(dictionary)} names and {len(mentions)} training mentions in {len(groups)} concepts, "
        f"{sum(len(g) > 1 for g in groups)} with synonyms; "
        f"{encoder.device}, {'bf16 autocast' if run.autocast else 'fp32'}"
    )
    log: List[Dict[str, float]] = []
    start = time.perf_counter()
    for record in run.steps(groups, rng):
        record["minutes"] = round((time.perf_counter() - start) / 60, 2)
        log.append(record)
        (output_dir / "log.jsonl").write_text("".join(json.dumps(r) + "\n" for r in log))
    encoder.model.eval()
    encoder.model.save_pretrained(output_dir / "encoder", safe_serialization=True)
    encoder.tokenizer.save_pretrained(output_dir / "encoder")
    msg.good(f"{run.step} steps in {(time.perf_counter() - start) / 60:.1f} min: {output_dir / 'encoder'}")
    return log


class _Alignment:
    def __init__(self, encoder: TransformerEncoder, settings: AlignmentSettings):
        self.encoder, self.settings = encoder, settings
        self.miner = miners.TripletMarginMiner(margin=settings.miner_margin, type_of_triplets="all")
        self.loss = losses.MultiSimilarityLoss(alpha=settings.alpha, beta=settings.beta, base=settings.base)
        self.optimizer = torch.optim.AdamW(
            encoder.model.parameters(), lr=settings.learning_rate, weight_decay=settings.weight_decay
        )
        self.autocast = settings.mixed_precision and has_native_bf16(encoder.device)
        self.step = 0

    def steps(self, groups: Sequence[Sequence[str]], rng: random.Random) -> Iterator[Dict[str, float]]:
        """Train; yield a log record every `log_every` steps and at the end."""
        size, losses_since = self.settings.batch_size, []
        self.encoder.model.train()
        for epoch in range(1, self.settings.epochs + 1):
            pairs = positive_pairs(groups, rng)
            # A last batch of one pair has no other concept to push away.
            batches = [pairs[i : i + size] for i in range(0, len(pairs), size) if len(pairs) - i > 1]
            for batch in tqdm(batches, desc=f"align, epoch {epoch}", unit="batch", leave=False):
                losses_since.append(self._update(batch))
                self.step += 1
                done = self.step == self.settings.max_steps
                if self.step % self.settings.log_every == 0 or done:
                    yield {"epoch": epoch, "step": self.step, "loss": sum(losses_since) / len(losses_since)}
                    losses_since = []
                if done:
                    return
        if losses_since:
            yield {"epoch": self.settings.epochs, "step": self.step, "loss": sum(losses_since) / len(losses_since)}

    def _update(self, batch: Sequence[Tuple[str, str, int]]) -> float:
        texts = [a for a, _, _ in batch] + [b for _, b, _ in batch]
        labels = torch.tensor([c for _, _, c in batch] * 2, device=self.encoder.device)
        with torch.autocast(self.encoder.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            vectors = self.encoder.embed(texts).float()
        loss = self.loss(vectors, labels, self.miner(vectors, labels))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        return float(loss.item())
