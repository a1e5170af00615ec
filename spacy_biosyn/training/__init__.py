"""Training the scorer: candidates -> objective -> trainer. Its modules
need PyTorch, so the package imports them when a name is asked for: the
registered losses (losses.py) load without it."""
import importlib

_EXPORTED = {"hard_em": "objectives", "marginal_nll": "objectives", "pairwise_bce": "objectives",
             "TrainingSettings": "trainer", "train": "trainer"}

__all__ = sorted(_EXPORTED)


def __getattr__(name: str):
    if name not in _EXPORTED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTED[name]}"), name)
