"""The training objectives (objectives.py) by their registered names, for
a config's `@losses`. Apart from them, and importing them only when one is
made, so that listing the registry needs no PyTorch."""
from typing import TYPE_CHECKING

from spacy.util import registry

from ..encoders.hub import import_torch
from ..parts import HARD_EM, MARGINAL_NLL, PAIRWISE_BCE

if TYPE_CHECKING:
    from .objectives import Objective


@registry.losses(MARGINAL_NLL)
def make_marginal_nll() -> "Objective":
    return _objectives(MARGINAL_NLL).marginal_nll


@registry.losses(HARD_EM)
def make_hard_em() -> "Objective":
    return _objectives(HARD_EM).hard_em


@registry.losses(PAIRWISE_BCE)
def make_pairwise_bce() -> "Objective":
    return _objectives(PAIRWISE_BCE).pairwise_bce


def _objectives(needed_by: str):
    import_torch(needed_by)
    from . import objectives

    return objectives
