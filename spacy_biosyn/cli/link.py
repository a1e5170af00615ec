"""`link`: a text's entities, or mention strings, linked and printed."""
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from wasabi import msg

from ..errors import BiosynError
from .common import _cell, _load_pipeline, _open_engine, app

if TYPE_CHECKING:
    from spacy.language import Language


@app.command()
def link(
    pipeline_dir: Path = typer.Argument(..., exists=True, file_okay=False, help="A saved pipeline from text to IDs (NER + linker)"),
    texts: Optional[List[str]] = typer.Argument(
        None, help="The text to link; with --mentions, mention strings (default: standard input, a mention a line)"
    ),
    mentions: bool = typer.Option(
        False, "--mentions", help="Link mention strings, each as one entity, as linker.rank() ranks them (no NER needed)"
    ),
    json_output: bool = typer.Option(False, "--json", help="One JSON object per entity, a line each, instead of a table"),
) -> None:
    """Link one text: each entity with its offsets, label, ID, score and
    best name, as link-corpus writes its rows. With --mentions, link mention
    strings ("breast cancer", "BRCA1-associated tumours"), each as a whole
    entity, as BioSyn's inference.py --mention does."""
    from ..linking.rows import ROW_FIELDS, json_line, mention_rows
    from ..preprocess.text import without_lone_surrogates

    if mentions:
        # A line ends at "\n" alone: str.splitlines() would also cut a mention at U+2028, U+0085, \x1c...
        given = texts or [line.removesuffix("\r") for line in _standard_input().split("\n") if line.strip()]
        try:
            rows = mention_rows(_open_engine(pipeline_dir), [without_lone_surrogates(t) for t in given])
        except ValueError as error:
            msg.fail(str(error), exits=1)
    else:
        from ..corpus_linking.output import concept_names, document_rows
        from ..corpora.documents import Document
        from ..corpus_linking.worker import check_pipeline

        if texts and len(texts) > 1:
            raise typer.BadParameter(f"{len(texts)} texts: give one (quoted), or mention strings with --mentions",
                                     param_hint="TEXTS")
        check_pipeline(pipeline_dir, gold_spans=False, instead="give a pipeline with an NER (python -m spacy_biosyn "
                       "assemble), or link mention strings with --mentions")
        text = without_lone_surrogates(texts[0] if texts else _standard_input())
        nlp = _load_pipeline(pipeline_dir)
        _check_length(nlp, text)
        rows = document_rows(Document("text", text, None), nlp(text), None, concept_names(nlp))
    if json_output:
        for row in rows:
            sys.stdout.write(json_line({k: row[k] for k in ROW_FIELDS}))
        return
    table = [
        (row["start"], row["end"], _cell(row["text"]), row["label"], _id_cell(row),
         "-" if row["score"] is None else f"{row['score']:.3f}", _cell(_named(row["candidates"][0])) if row["candidates"] else "-")
        for row in rows
    ]
    msg.table(table, header=("start", "end", "mention", "label", "ID", "score", "concept (name matched)"), divider=True)


def _id_cell(row: dict) -> str:
    """The ID, or why it is NIL and what it would have been; where concepts
    share the best name, those it was chosen over and the rule."""
    if not row["id"]:
        best = row.get("nil_best")
        return f"NIL: {row['nil_reason'] or '-'}" + (f" (best {best['id']} {best['score']:.3f})" if best else "")
    ties = "; ".join(f"over {', '.join(tie['ids'][1:])} by {tie['rule'].replace('_', ' ')}" for tie in row["ties"])
    return f"{row['id']} ({ties})" if ties else row["id"]


def _named(candidate: dict) -> str:
    """A concept as the table shows it: its canonical name, and the name the
    mention matched where that is another."""
    name, matched = candidate["concept_name"], candidate["name"]
    return matched if not name else name if name.lower() == matched else f"{name} ({matched})"


def _standard_input() -> str:
    """Standard input as given: text mode would turn each CRLF and lone CR
    into a line feed, moving offsets and cutting mentions in two."""
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(newline="")
    return sys.stdin.read()


def _check_length(nlp: "Language", text: str) -> None:
    """A text over nlp.max_length, which spaCy refuses with a traceback (E088), refused in one line."""
    if len(text) > nlp.max_length:
        raise BiosynError(
            f"the text is {len(text):,} characters, over the pipeline's nlp.max_length of {nlp.max_length:,}: split "
            "it into shorter texts (link-corpus links a folder of them), or link it from Python after raising "
            "nlp.max_length (spaCy's parser and NER take about 1 GB of memory per 100,000 characters)"
        )
