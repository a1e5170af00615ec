"""Training the scorer: candidates -> objective -> trainer."""
from .objectives import hard_em, marginal_nll, pairwise_bce
from .trainer import TrainingSettings, train

__all__ = ["TrainingSettings", "hard_em", "marginal_nll", "pairwise_bce", "train"]
