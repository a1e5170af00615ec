"""`assemble`: one pipeline from a trained NER and an indexed linker."""
from pathlib import Path

import typer
from wasabi import msg

from ..names import PIPE_NAME
from .common import _check_output_dir, _load_pipeline, app


@app.command()
def assemble(
    ner_pipeline: str = typer.Argument(
        ..., help="A pipeline's folder or installed package whose components find entities (spacy train's model-best, en_ner_bc5cdr_md)"
    ),
    linker_pipeline: str = typer.Argument(..., help="A pipeline's folder or package with a biosyn_linker (build or index)"),
    output_dir: Path = typer.Argument(..., help="Folder for the pipeline from text to IDs"),
    document_entities: bool = typer.Option(
        True, help="Put biosyn_document_entities between them: the document's entities made to agree (docs/raw-text.md)"
    ),
) -> None:
    """One pipeline from raw text to IDs: the NER pipeline's components
    (its tokenizer included), biosyn_document_entities, then the linker."""

    from ..storage import save_pipeline

    _check_output_dir(output_dir)
    nlp, linker = _load_pipeline(ner_pipeline), _load_pipeline(linker_pipeline)
    if PIPE_NAME not in linker.pipe_names:
        msg.fail(f"{linker_pipeline}: no {PIPE_NAME} in it (its pipes: {', '.join(linker.pipe_names) or 'none'})", exits=1)
    taken = [name for name in (PIPE_NAME, "biosyn_document_entities" if document_entities else None) if name in nlp.pipe_names]
    if taken:
        msg.fail(f"{ner_pipeline} already holds {', '.join(taken)}: give the pipeline whose components find entities", exits=1)
    if document_entities:
        nlp.add_pipe("biosyn_document_entities")
    nlp.add_pipe(PIPE_NAME, source=linker)
    save_pipeline(nlp, output_dir)
    msg.good(f"{' -> '.join(nlp.pipe_names)} saved to {output_dir}")
