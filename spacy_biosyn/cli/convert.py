"""`convert`: PubTator abstracts as the NER's training data."""
from pathlib import Path
from typing import List, Optional

import typer
from wasabi import msg

from .common import LABEL_MAP_OPTION, _label_map, app


@app.command()
def convert(
    pubtator: Path = typer.Argument(..., exists=True, dir_okay=False, help="A PubTator file"),
    output: Path = typer.Argument(..., dir_okay=False, help="The .spacy file (DocBin) to write"),
    pool: List[Path] = typer.Option(
        [],
        exists=True,
        help="Another corpus's PubTator file, or a folder of them (its .txt files), to train on as well (repeatable); tokens "
        "matching a name of a label only another corpus annotates are left missing, not outside",
    ),
    names: List[str] = typer.Option(
        [],
        help="LABEL=VOCABULARY (repeatable): that label's names for --replace-copies and --name-examples, "
        "from a vocabulary file in any format `build --dictionary` reads, normalized as the linker reads them",
    ),
    replace_copies: int = typer.Option(
        0, min=0, help="Copies of each document with every entity of a --names label swapped for a random name of it"
    ),
    name_examples: int = typer.Option(0, min=0, help="Random names of each --names label added as one-entity documents"),
    seed: int = typer.Option(0, help="Seed of the random names"),
    guideline: List[str] = typer.Option(
        [],
        help="The annotation guideline of the PubTator file, then of each pooled file, in order (repeatable), kept "
        "with each document for configs/ner-guidelines.cfg's heads; given once, each pooled file's is its name "
        "before the first dot (the data step copies a dataset's abstracts as <dataset>.PubTator.txt)",
    ),
    label_map: Optional[str] = LABEL_MAP_OPTION,
    lang: str = typer.Option("en", help="Language whose tokenizer splits the text"),
    biomedical_tokenizer: bool = typer.Option(
        True, help="Split the text with the rules of spacy_biosyn.BiomedicalTokenizer.v1, as configs/ner*.cfg train with"
    ),
) -> None:
    """NER training data: the gold entities of a PubTator file (and of the
    pooled ones) as a DocBin for `spacy train`, each with its gold ID as
    kb_id; the vocabulary's copies and names, if asked for, come after them."""
    from collections import Counter

    import spacy
    from spacy.tokens import DocBin

    from ..ner.training_data import LabelError, ner_training_docs

    if (replace_copies or name_examples) and not names:
        raise typer.BadParameter("--replace-copies and --name-examples need --names LABEL=VOCABULARY", param_hint="--names")
    vocabularies = {}
    for pair in names:
        label, sep, path = pair.partition("=")
        if not (sep and label and path):
            raise typer.BadParameter(f"expected LABEL=VOCABULARY, got {pair!r}", param_hint="--names")
        if label in vocabularies:
            raise typer.BadParameter(f"{pair!r}: the label {label!r} is given twice", param_hint="--names")
        if "://" not in path and not Path(path).exists():
            raise typer.BadParameter(f"{pair!r}: no such file", param_hint="--names")
        vocabularies[label] = path
    pooled = [file for path in pool for file in (sorted(path.glob("*.txt")) if path.is_dir() else [path])]
    if len(guideline) == 1:
        guideline = guideline + [path.name.split(".")[0] for path in pooled]
    if guideline and len(guideline) != 1 + len(pooled):
        raise typer.BadParameter(f"{len(guideline)} given for {1 + len(pooled)} files ({pubtator.name} and "
                                 f"{len(pooled)} pooled): name one per file, in order", param_hint="--guideline")
    try:
        docs = ner_training_docs(
            [pubtator, *pooled], label_map=_label_map(label_map), names=vocabularies, replace_copies=replace_copies,
            name_examples=name_examples, seed=seed, lang=lang, biomedical_tokenizer=biomedical_tokenizer,
            guidelines=guideline,
        )
    except LabelError as error:
        raise typer.BadParameter(str(error), param_hint="--names") from None
    docbin = DocBin(docs=docs, store_user_data=bool(guideline))
    output.parent.mkdir(parents=True, exist_ok=True)
    docbin.to_disk(output)
    docs = list(docbin.get_docs(spacy.blank(lang).vocab))
    labels = Counter(span.label_ for doc in docs for span in doc.ents)
    missing = sum(token.ent_iob == 0 for doc in docs for token in doc)
    msg.good(f"{len(docs)} documents, entities {dict(labels)}, {missing} tokens missing: {output}")
