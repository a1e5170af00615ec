"""Training objectives over each mention's k candidates (BioSyn section 3.2).

Every objective takes `logits` (mentions x k, the scores S divided by the
temperature) and `positives` (mentions x k, True where the candidate shares
the mention's concept) and returns a scalar loss: the paper's MML and its
two ablations. losses.py registers them under `@losses`, so a config picks
one by name.
"""
from typing import Callable

import torch
import torch.nn.functional as F

Objective = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def marginal_nll(logits: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """Synonym marginalization: -log of the summed probability of the
    positive candidates, averaged over mentions that have any. Computed in
    log space, so a tiny marginal gives a large loss instead of log(0)."""
    has_positive = positives.any(dim=1)
    if not has_positive.any():
        return logits.sum() * 0.0  # zero, but still part of the graph
    logits, positives = logits[has_positive], positives[has_positive]
    log_marginal = torch.logsumexp(logits.masked_fill(~positives, float("-inf")), dim=1)
    return (torch.logsumexp(logits, dim=1) - log_marginal).mean()


def hard_em(logits: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """-log of the single most probable positive's probability (the paper's
    hard-EM ablation): the other synonyms get no credit."""
    has_positive = positives.any(dim=1)
    if not has_positive.any():
        return logits.sum() * 0.0
    logits, positives = logits[has_positive], positives[has_positive]
    best_positive = logits.masked_fill(~positives, float("-inf")).max(dim=1).values
    return (torch.logsumexp(logits, dim=1) - best_positive).mean()


def pairwise_bce(logits: torch.Tensor, positives: torch.Tensor) -> torch.Tensor:
    """Binary cross-entropy on every (mention, candidate) pair independently
    (the paper's pair-wise ablation); mentions without a positive still
    teach their negatives."""
    return F.binary_cross_entropy_with_logits(logits, positives.to(logits.dtype))

