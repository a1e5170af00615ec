"""`assemble`: one pipeline from a trained NER and an indexed linker."""
from pathlib import Path

import typer
from wasabi import msg

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

    from ..files.storage import save_pipeline
    from ..pipeline.building import assemble_pipeline

    _check_output_dir(output_dir)
    try:
        nlp = assemble_pipeline(_load_pipeline(ner_pipeline), _load_pipeline(linker_pipeline), document_entities,
                                names=(str(ner_pipeline), str(linker_pipeline)))
    except ValueError as error:
        msg.fail(str(error), exits=1)
    save_pipeline(nlp, output_dir)
    msg.good(f"{' -> '.join(nlp.pipe_names)} saved to {output_dir}")
