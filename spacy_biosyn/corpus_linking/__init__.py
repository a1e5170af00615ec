"""Linking whole corpora: documents read in shards (sources), linked by
workers that load the pipeline once (worker) on a local, Ray or Dask engine
(engines), written as Parquet, JSONL, PubTator or BioC XML shards
(writers) with a manifest (output). The readers and writers need no spaCy,
so what they are imported for (the service without spaCy) does not load
it: the package's names load their modules when first asked for."""
from importlib import import_module

_EXPORTED = {"link_corpus": "run", "read_documents": "text_sources", "read_rows": "output", "row_differences": "output"}
__all__ = list(_EXPORTED)


def __getattr__(name: str):
    if name not in _EXPORTED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTED[name]}", __name__), name)
