"""Linking whole corpora: documents read in shards (sources), linked by
workers that load the pipeline once (worker) on a local, Ray or Dask engine
(engines), written as Parquet, JSONL, PubTator or BioC XML shards
(writers) with a manifest (output)."""
from .output import read_rows, row_differences
from .run import link_corpus
from .text_sources import read_documents

__all__ = ["link_corpus", "read_documents", "read_rows", "row_differences"]
