"""Training the re-ranker on the first stage's candidates for the training mentions.

Each training mention (a BioSyn `.concept` query with one CUI) is read in its
abstract (the raw PubTator file, at the query's offsets). The first stage is
the pipeline's own linker; its dictionary holds the training mentions as
synonyms, so a mention's own text is taken out of its candidates, as BioSyn
does, unless the base dictionary has that name for the gold concept. The
first stage never changes, so candidates are ranked once, for train and dev.

A step scores a batch of mentions' candidates as the pipeline will
(first_stage_weight * S + cross-encoder logit) and takes the synonym
marginalization loss over them (objectives.marginal_nll). Dev is scored every
`eval_every` steps, which costs one cross-encoder pass over dev's pairs, and
`model-best` is the best of those checks, the first stage alone included: a
re-ranker that never beats it is not kept (`model-last` always has it).
"""
import copy
import math
import time
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple

import numpy as np
import spacy
import torch
from pydantic import BaseModel, ConfigDict, Field
from spacy.util import fix_random_seed, registry
from thinc.api import Config
from tqdm import tqdm
from wasabi import msg

from ..corpora.readers import Query, query_contexts, read_concept_queries, read_pubtator
from ..evaluation.queries import evaluate
from ..files.storage import save_pipeline
from ..kb.dictionary import Dictionary
from ..kb.ids import bare_id, split_cuis
from ..names import PIPE_NAME
from ..pipeline.configure import configure_linker
from ..strategies.reranker import CrossEncoderReranker, combined_scores
from ..ty import Candidate, MentionInContext
from .common import RunLog, required_path, start_output
from .objectives import marginal_nll


class RerankerTrainingSettings(BaseModel):
    """The [training] block of configs/reranker.cfg."""

    model_config = ConfigDict(extra="forbid")

    epochs: int = Field(2, ge=1)
    batch_size: int = Field(8, ge=1)  # mentions per step, each with its candidates
    learning_rate: float = Field(2e-5, gt=0)
    # For the weights the checkpoint lacks (the fresh head): at the
    # encoder's rate they barely move from their tiny random start.
    head_learning_rate: float = Field(1e-3, gt=0)
    weight_decay: float = Field(0.01, ge=0)
    warmup: float = Field(0.1, ge=0, lt=1)  # share of the steps
    eval_every: int = Field(200, ge=1)
    # One example per (mention text, concept) an epoch, in one of its
    # contexts drawn at random, as the bi-encoder trains on distinct pairs;
    # false trains on every occurrence, so frequent concepts weigh more.
    distinct_mentions: bool = True


def train_reranker(config: Config, output_dir: Path) -> Dict[str, Any]:
    """Train as configs/reranker.cfg says; returns the best dev check's record."""
    resolved = registry.resolve(config)
    settings = RerankerTrainingSettings(**resolved["training"])
    fix_random_seed(resolved["system"]["seed"])
    paths = resolved["paths"]
    for key in ("pipeline", "base_dictionary", "train", "train_text", "dev", "dev_text"):
        required_path(paths, key)
    nlp = spacy.load(paths["pipeline"])
    pipe = nlp.get_pipe(PIPE_NAME)
    if pipe.reranker is not None:
        raise ValueError(f"{paths['pipeline']} already has a re-ranker: give the pipeline of the first stage alone")
    reranker: CrossEncoderReranker = resolved["reranker"]
    reranker.load()
    output_dir = start_output(config, output_dir)

    train = _TrainingSet(pipe, reranker, paths, Dictionary.from_file(paths["base_dictionary"]))
    dev = _DevSet(pipe, reranker, paths)
    msg.info(
        f"{len(train.queries)} training mentions ({len(train.groups)} distinct with their concept) with a gold "
        f"name among their {reranker.candidates} candidates ({train.n_without_positive} without one left out); "
        f"{len(dev.queries)} dev queries"
    )
    model = reranker.model
    is_new = {name: name in reranker.new_parameters for name, _ in model.named_parameters()}
    optimizer = torch.optim.AdamW(
        [
            {"params": [p for name, p in model.named_parameters() if not is_new[name]]},
            {"params": [p for name, p in model.named_parameters() if is_new[name]], "lr": settings.head_learning_rate},
        ],
        lr=settings.learning_rate,
        weight_decay=settings.weight_decay,
    )
    shuffle = np.random.default_rng(resolved["system"]["seed"])
    steps_per_epoch = math.ceil(train.examples_per_epoch(settings.distinct_mentions) / settings.batch_size)
    total = settings.epochs * steps_per_epoch
    warmup = max(1, int(settings.warmup * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup)))
    )
    log = RunLog(output_dir)
    start = time.perf_counter()
    # The first stage alone is the check to beat; its state is no re-ranker (None).
    _record(log, 0, None, dev.first_stage_metrics, "first stage alone", lambda: None)
    step, losses = 0, []
    for epoch in range(1, settings.epochs + 1):
        order = train.epoch_order(shuffle, settings.distinct_mentions)
        model.train()
        for rows in tqdm(np.array_split(order, steps_per_epoch), desc=f"epoch {epoch}", unit="step", leave=False):
            loss = train.loss(rows)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            step += 1
            if step % settings.eval_every == 0 or step == total:
                model.eval()
                _record(log, step, float(np.mean(losses)), dev.metrics(), f"epoch {epoch}",
                        lambda: copy.deepcopy(model.state_dict()))
                losses = []
                model.train()
        model.eval()
    seconds = time.perf_counter() - start
    target = output_dir / "model-best"
    best_state = log.best_state
    if best_state is None:
        msg.warn(f"No check beat the first stage alone on dev in {seconds:.0f}s; {target} is the first stage, without a re-ranker")
        save_pipeline(nlp, target)
    configure_linker(nlp, reranker=reranker)
    save_pipeline(nlp, output_dir / "model-last")
    if best_state is not None:
        model.load_state_dict(best_state)
        save_pipeline(nlp, target)
        msg.good(f"Trained in {seconds:.0f}s; best dev check at step {log.best['step']}; saved {target} and model-last")
    return {**log.best, "train_seconds": round(seconds, 1)}


class _TrainingSet:
    """Training mentions in context, their candidates, scores S and gold marks."""

    def __init__(self, pipe, reranker: CrossEncoderReranker, paths: dict, base: Dictionary):
        self.reranker = reranker
        queries = [
            q for q in read_concept_queries(paths["train"])
            if len(split_cuis(q.cui)) == 1 and q.cui != "-1" and "|" not in q.mention and "+" not in q.mention
        ]
        contexts = query_contexts(queries, read_pubtator(paths["train_text"]), reranker.context_chars)
        texts, ranked = pipe.engine.first_stage([q.mention for q in queries], reranker.candidates + 1)
        base_ids = dict(zip(base.names, base.cuis))
        kept = []
        for query, context, text, candidates in zip(queries, contexts, texts, ranked):
            gold = bare_id(query.cui)
            # The mention's own text is a candidate only if it was a name of the concept already.
            own = text if gold not in map(bare_id, base_ids.get(text, ())) else None
            candidates = [c for c in candidates if c.name != own][: reranker.candidates]
            positives = [gold in map(bare_id, c.cuis) for c in candidates]
            if any(positives):
                kept.append((query, context._replace(mention=text), candidates, positives))
        self.n_without_positive = len(queries) - len(kept)
        self.queries: List[Query] = [k[0] for k in kept]
        self.contexts: List[MentionInContext] = [k[1] for k in kept]
        self.candidates: List[List[Candidate]] = [k[2] for k in kept]
        self.positives: List[List[bool]] = [k[3] for k in kept]
        # Occurrences of each (mention text, concept): the same candidates, other contexts.
        groups: Dict[tuple, List[int]] = {}
        for row, (query, context, _, _) in enumerate(kept):
            groups.setdefault((context.mention, bare_id(query.cui)), []).append(row)
        self.groups: List[List[int]] = list(groups.values())

    def examples_per_epoch(self, distinct: bool) -> int:
        return len(self.groups) if distinct else len(self.queries)

    def epoch_order(self, rng: np.random.Generator, distinct: bool) -> np.ndarray:
        """The rows one epoch trains on, shuffled: every row, or one random
        occurrence of each distinct (mention text, concept)."""
        if not distinct:
            return rng.permutation(len(self.queries))
        return np.array([group[rng.integers(len(group))] for group in self.groups])[rng.permutation(len(self.groups))]

    def loss(self, rows: Sequence[int]) -> torch.Tensor:
        k = self.reranker.candidates
        rows = [r for r in rows if len(self.candidates[r]) == k]  # a tiny dictionary can give fewer
        mentions = [self.contexts[r] for r in rows for _ in range(k)]
        names = [c.name for r in rows for c in self.candidates[r]]
        device = self.reranker.device
        first_stage = torch.tensor([[c.score for c in self.candidates[r]] for r in rows], device=device)
        logits = self.reranker.logits(mentions, names).view(len(rows), k)
        positives = torch.tensor([self.positives[r] for r in rows], device=device)
        return marginal_nll(combined_scores(first_stage, logits, self.reranker.first_stage_weight), positives)


class _DevSet:
    """Dev queries in context with their first-stage candidates, ranked once."""

    def __init__(self, pipe, reranker: CrossEncoderReranker, paths: dict):
        self.pipe, self.reranker = pipe, reranker
        self.queries = read_concept_queries(paths["dev"])
        self.contexts = query_contexts(self.queries, read_pubtator(paths["dev_text"]), reranker.context_chars)
        self._first_stage: Dict[tuple, Tuple[List[str], List[List[Candidate]]]] = {}
        self.first_stage_metrics = self._evaluate(rerank=False)

    def metrics(self) -> Dict[str, float]:
        """Acc@1/Acc@5 with the re-ranker as it is now; a mention whose best
        name is its own text costs nothing when exact matches are kept."""
        return self._evaluate(rerank=True)

    def _evaluate(self, rerank: bool) -> Dict[str, float]:
        return evaluate(self._ranker(rerank), self.queries, contexts=self.contexts,
                        id_namespaces=self.pipe.engine.score_namespaces())

    def _ranker(self, rerank: bool):
        """rank(texts, contexts) for `evaluate`: the cached first stage, re-ranked or not."""

        def rank(texts: List[str], contexts: List[MentionInContext]) -> List[List[Candidate]]:
            key = tuple(texts)
            if key not in self._first_stage:
                self._first_stage[key] = self.pipe.engine.first_stage(texts, self.reranker.candidates)
            cleaned, ranked = self._first_stage[key]
            if rerank:
                mentions = [c._replace(mention=t) for c, t in zip(contexts, cleaned)]
                ranked = self.reranker.rerank(mentions, ranked)
            return [candidates[:5] for candidates in ranked]

        return rank


def _record(log: RunLog, step: int, loss, metrics: Dict[str, float], stage: str, state) -> bool:
    """Log a dev check; whether it is the best so far (its `state()` kept)."""
    record = {
        "step": step, "stage": stage, "loss": loss,
        "dev_link_acc_1": metrics["link_acc_1"], "dev_link_acc_5": metrics["link_acc_5"],
    }
    loss_text = "-" if loss is None else f"{loss:.4f}"
    return log.check(record, (
        f"step {step:>5} ({stage}) | loss {loss_text} | dev acc@1 {100 * metrics['link_acc_1']:.2f} "
        f"acc@5 {100 * metrics['link_acc_5']:.2f}"
    ), state)
