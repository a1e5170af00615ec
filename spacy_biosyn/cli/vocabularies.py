"""`linkers` and `download`: the named vocabularies, listed and fetched."""
import time
from pathlib import Path
from typing import Optional

import typer
from wasabi import msg

from ..names import PIPE_NAME
from .common import ENCODER_HELP, _cell, _named_config, app


@app.command()
def linkers() -> None:
    """The named vocabularies (add_pipe("biosyn_linker", config={"linker_name": NAME})):
    publisher, terms, stated size, index, and the encoders each is cached for."""
    from ..files.fetching import mirror, redacted
    from ..named.cache import cached_linkers, linkers_folder
    from ..named.catalogue import CATALOGUE

    rows = []
    for entry in CATALOGUE.values():
        cached = cached_linkers(entry.name)
        encoders = ", ".join(sorted({Path(str(c["encoder"].get("name"))).name for c in cached})) or "no"
        rows.append((entry.name, _cell(entry.publisher), entry.size, entry.index, encoders))
    msg.table(rows, header=("name", "publisher", "size (as published)", "index", "cached for"), divider=True)
    for entry in CATALOGUE.values():
        print(f"{entry.name}: {entry.title}\n  files: {' '.join(entry.urls)}\n  page: {entry.page}\n  terms: {entry.terms}")
    shown = redacted(mirror() or "not set")
    print(f"Cache: {linkers_folder()} ($SPACY_BIOSYN_CACHE); mirror: {shown} ($SPACY_BIOSYN_MIRROR)")


@app.command()
def download(
    name: str = typer.Argument(..., help="A named vocabulary (python -m spacy_biosyn linkers)"),
    encoder: Optional[str] = typer.Option(None, help=ENCODER_HELP),
    device: Optional[str] = typer.Option(None, help="Where the encoder runs: auto (a GPU if there is one), cpu, cuda"),
    pytorch: bool = typer.Option(
        False, "--pytorch", help="For pipes whose encoder is spacy_biosyn.TransformerEncoder.v1 (implied by --device): each runtime has its own cache"
    ),
    refresh: bool = typer.Option(False, "--refresh", help="Fetch the files again (and build again if they changed)"),
) -> None:
    """Fetch, encode and index a named vocabulary into the cache ahead of
    time, so that add_pipe(..., config={"linker_name": NAME}) links at once."""
    import spacy

    nlp = spacy.blank("en")
    linker = nlp.add_pipe(PIPE_NAME, config=_named_config(name, encoder, device, pytorch))
    start = time.perf_counter()
    linker.initialize(refresh=refresh)
    from ..named.cache import linkers_folder

    names = len(linker.engine.vocabulary().dictionary)
    msg.good(f"{name}: {names:,} names ready in {time.perf_counter() - start:.1f}s, cached in {linkers_folder()}")
