"""`link-corpus`: whole corpora linked in shards, on processes, Ray or Dask."""
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from .common import app


@app.command("link-corpus")
def link_corpus(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved spaCy pipeline"),
    input: str = typer.Argument(
        ..., help="A file, a folder or a glob of PubTator, BioC XML/JSON, MEDLINE/PubMed XML (NLM's pubmed*.xml.gz), JSONL, Parquet or plain-text files (one document each), or - for standard input"
    ),
    output_dir: Path = typer.Argument(..., help="Folder for the shards and _manifest.json; a re-run resumes it"),
    engine: str = typer.Option("local", help="local (nlp.pipe), ray (Ray Data) or dask (distributed)"),
    workers: int = typer.Option(1, help="Worker processes, each loading the pipeline once"),
    batch_size: int = typer.Option(64, help="Documents per nlp.pipe batch"),
    shard_size: int = typer.Option(1000, help="Documents per output shard: the unit a re-run skips"),
    input_format: Optional[str] = typer.Option(
        None, help="pubtator, bioc-xml, bioc-json, medline-xml, jsonl, parquet or text (default: by suffix; a .txt file by its first line, a .xml file by its root element)"
    ),
    output_format: str = typer.Option("parquet", help="parquet or jsonl (a row per entity), pubtator or bioc (BioC XML)"),
    gold_spans: bool = typer.Option(False, "--gold-spans", help="Link the input's annotations (PubTator, BioC) instead of running the NER"),
    labels: Optional[str] = typer.Option(None, help="With --gold-spans: comma-separated annotation types to link"),
    address: Optional[str] = typer.Option(None, help="An existing Ray or Dask cluster; without it a local one is started"),
    gpu: bool = typer.Option(False, "--gpu", help="One GPU per worker"),
    threads: Optional[int] = typer.Option(None, help="Threads per Ray or Dask worker, for torch and ONNX Runtime (default: the cores shared out); the local engine's forked workers use one each"),
) -> None:
    """Link a whole corpus into shards with a manifest: Parquet or JSONL,
    one row per entity (doc id, offsets, text, label, ID, score, ranked
    candidates), or PubTator or BioC XML, each document with its entities
    and their IDs. Shards are written whole, so a killed run resumes where
    it stopped."""
    from ..corpus_linking import link_corpus as run
    from ..corpus_linking.output import DELETED

    summary = run(
        pipeline_dir, input, output_dir, engine=engine, workers=workers, batch_size=batch_size,
        shard_size=shard_size, input_format=input_format, output_format=output_format, gold_spans=gold_spans,
        labels=labels.split(",") if labels else None, address=address, gpu=gpu, threads=threads,
    )
    msg.good(
        f"{summary['documents']} documents, {summary['mentions']} mentions in {summary['seconds']:.1f}s "
        f"({summary['documents_per_s']} documents/s, {summary['mentions_per_s']} mentions/s; "
        f"{summary['skipped_shards']} shards already done): {output_dir}"
    )
    if summary["deleted_citations"]:
        msg.warn(f"{summary['deleted_citations']} PMID(s) deleted by the input's DeleteCitation entries: listed in "
                 f"{output_dir / DELETED}; their rows from other input files are kept")
    if summary["too_long"]:
        msg.warn(f"{summary['too_long']} document(s) over the pipeline's max_length were not linked (named above)")
