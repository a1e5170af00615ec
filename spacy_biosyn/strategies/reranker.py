"""Re-ranking: a cross-encoder reads each mention in its sentence beside each
of the linker's best names, and re-scores them.

The bi-encoder scores a mention and a name apart, each squeezed into one
vector; a cross-encoder reads the pair together, with the words around the
mention, so "MS" beside "demyelination" and "MS" beside "muscle" can go to
different concepts. It is too slow to score every name, so it re-scores the
first stage's `candidates` best.

Rank regularization: the first stage's score stays in the sum,

    score = first_stage_weight * S + cross-encoder logit,

so the cross-encoder learns a correction to the first stage's ranking rather
than a ranking from scratch: where its logits are flat (an unsure or
untrained model) the first stage's order stands, and training moves a name
only as far as the evidence pays for. `first_stage_weight = 0` is the plain
cross-encoder, the ablation that shows what the term is worth. A mention
whose best name is its own text keeps the first stage's order
(`keep_exact_matches`): training never offers a mention its own text.
"""
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional, Sequence, Union

import numpy as np

from ..checks import MOST_IN_A_BATCH, MOST_TOKENS, brief, is_number, is_whole_number
from ..encoders.base import DEFAULT_ENCODER_NAME
from ..encoders.hub import choose_device, load_pretrained, save_pretrained
from ..parts import CROSS_ENCODER_RERANKER, registry
from ..ty import Candidate, MentionInContext

if TYPE_CHECKING:
    import torch

# torch and transformers are imported by load(): building a pipeline from its
# config, or importing the component, stays as light as without a re-ranker.

def is_exact_match(mention: MentionInContext, candidates: Sequence[Candidate]) -> bool:
    """Whether the first stage's best name is the mention's own text."""
    return bool(candidates) and candidates[0].name == mention.mention


def combined_scores(first_stage, logits, first_stage_weight: float):
    """What a candidate scores after re-ranking (numpy or torch alike): the
    training loss and `rerank` both use this, so they cannot disagree."""
    return first_stage_weight * first_stage + logits


@registry.misc(CROSS_ENCODER_RERANKER)
class CrossEncoderReranker:
    """Any Hugging Face encoder with a one-logit head over (mention in
    context, name) pairs; untrained, the head is new and the scores are the
    first stage's plus noise: train it with `train-reranker`."""

    def __init__(
        self,
        name: str = DEFAULT_ENCODER_NAME,
        candidates: int = 8,
        context_chars: int = 100,
        first_stage_weight: float = 20.0,
        max_length: int = 96,
        batch_size: int = 64,
        device: str = "auto",
        keep_exact_matches: bool = True,
    ):
        for setting, value, least, most in (
            ("candidates", candidates, 2, MOST_IN_A_BATCH), ("context_chars", context_chars, 0, 100_000),
            ("max_length", max_length, 8, MOST_TOKENS), ("batch_size", batch_size, 1, MOST_IN_A_BATCH),
        ):
            if not is_whole_number(value, least, most):
                raise ValueError(f"reranker: {setting} must be a whole number from {least} to {most:,}, "
                                 f"got {brief(value)}")
        if not isinstance(keep_exact_matches, bool):
            raise ValueError(f"reranker: keep_exact_matches must be true or false, got {keep_exact_matches!r}")
        if not is_number(first_stage_weight) or first_stage_weight < 0:
            raise ValueError(f"reranker: first_stage_weight must be a finite number >= 0, got {first_stage_weight!r}")
        self.name = name
        self.candidates = candidates
        self.context_chars = context_chars
        self.first_stage_weight = float(first_stage_weight)
        self.max_length = max_length
        self.batch_size = batch_size
        self.device_setting = device
        self.keep_exact_matches = keep_exact_matches
        self.device = None
        self.model = None
        self.tokenizer = None
        # Weights the checkpoint lacked (a sentence encoder's fresh one-logit head).
        self.new_parameters: frozenset = frozenset()

    @property
    def settings(self) -> dict:
        """The settings, as the config block takes them."""
        return {
            "name": self.name, "candidates": self.candidates, "context_chars": self.context_chars,
            "first_stage_weight": self.first_stage_weight, "max_length": self.max_length,
            "batch_size": self.batch_size, "device": self.device_setting,
            "keep_exact_matches": self.keep_exact_matches,
        }

    @property
    def config_block(self) -> dict:
        """This re-ranker as a pipeline's config names it."""
        return {"@misc": CROSS_ENCODER_RERANKER, **self.settings}

    @property
    def is_loaded(self) -> bool:
        return self.model is not None

    def load(self, name_or_path: Optional[Union[str, Path]] = None) -> "CrossEncoderReranker":
        self.device = choose_device(self.device_setting, f"the re-ranker {self.name!r}")
        from transformers import AutoModelForSequenceClassification

        # A sentence encoder has no classification head: transformers adds a
        # fresh one and says so, which is expected before train-reranker.
        self.tokenizer, self.model, loading = load_pretrained(
            AutoModelForSequenceClassification, name_or_path or self.name, self.device, use_safetensors=True,
            quiet=True, num_labels=1,
        )
        self.new_parameters = frozenset(loading["missing_keys"])
        return self

    def logits(self, mentions: Sequence[MentionInContext], names: Sequence[str]) -> "torch.Tensor":
        """The cross-encoder's logit of each (mention, name) pair, a tensor
        on the model's device; differentiable unless called under no_grad,
        so training optimises what `rerank` computes."""
        batch = self.tokenizer(
            [m.first_segment() for m in mentions],
            list(names),
            padding=True,
            truncation="only_first",
            # Never past the model's positions, whatever max_length says.
            max_length=min(self.max_length, getattr(self._require_model().config, "max_position_embeddings", self.max_length)),
            return_tensors="pt",
        ).to(self.device)
        return self._require_model()(**batch).logits[:, 0].float()

    def scores(self, mentions: Sequence[MentionInContext], candidates: Sequence[Sequence[Candidate]]) -> List[np.ndarray]:
        """first_stage_weight * S + logit for each mention's candidates."""
        pairs = [(m, c) for m, cands in zip(mentions, candidates) for c in cands]
        # Similar lengths batched together keep padding small.
        order = sorted(range(len(pairs)), key=lambda j: len(pairs[j][0].first_segment()) + len(pairs[j][1].name))
        logits = np.empty(len(pairs), dtype=np.float32)
        with _inference_mode():
            for start in range(0, len(order), self.batch_size):
                rows = order[start : start + self.batch_size]
                logits[rows] = self.logits([pairs[j][0] for j in rows], [pairs[j][1].name for j in rows]).cpu().numpy()
        out, start = [], 0
        for cands in candidates:
            first_stage = np.array([c.score for c in cands], dtype=np.float32)
            out.append(combined_scores(first_stage, logits[start : start + len(cands)], self.first_stage_weight))
            start += len(cands)
        return out

    def rerank(
        self,
        mentions: Sequence[MentionInContext],
        candidates: Sequence[Sequence[Candidate]],
        keep_exact_matches: Optional[bool] = None,
    ) -> List[List[Candidate]]:
        """Each mention's candidates in the order of their new scores (equal
        scores keep the first stage's order), carrying those scores. With
        keep_exact_matches (the setting unless given), a mention whose best
        name is its own text keeps the first stage's order, scored
        first_stage_weight * S: training never offers a mention its own
        text, so the cross-encoder has not learned to judge that case."""
        keep = self.keep_exact_matches if keep_exact_matches is None else keep_exact_matches
        exact = [keep and is_exact_match(m, cands) for m, cands in zip(mentions, candidates)]
        rescored = iter(self.scores(
            [m for m, e in zip(mentions, exact) if not e], [c for c, e in zip(candidates, exact) if not e]
        ))
        reranked = []
        for cands, e in zip(candidates, exact):
            if e:
                reranked.append(self.first_stage_order(cands))
                continue
            scores = next(rescored)
            order = np.argsort(-scores, kind="stable")
            reranked.append([cands[i]._replace(score=float(scores[i])) for i in order])
        return reranked

    def first_stage_order(self, candidates: Sequence[Candidate]) -> List[Candidate]:
        """The first stage's ranking on the re-ranker's scale (a logit of 0)."""
        return [c._replace(score=self.first_stage_weight * c.score) for c in candidates]

    def to_disk(self, path: Union[str, Path]) -> None:
        save_pretrained(self._require_model(), self.tokenizer, path)

    def from_disk(self, path: Union[str, Path]) -> "CrossEncoderReranker":
        return self.load(path)

    def _require_model(self):
        if self.model is None:
            raise RuntimeError(
                f"the re-ranker {self.name!r} has no weights yet: call nlp.initialize() "
                "or load a saved pipeline"
            )
        return self.model


def _inference_mode():
    import torch

    return torch.inference_mode()
