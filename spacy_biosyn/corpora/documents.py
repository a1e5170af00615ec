"""A document to link: its id, text and gold spans where its format holds
them, as the corpus readers (corpus_linking/text_sources.py, the service's
bodies) make it and the linked rows name it."""
from typing import List, NamedTuple, Optional

from .readers import Annotation


class Document(NamedTuple):
    id: str
    text: str
    # Gold spans, where the format holds them (PubTator, BioC); None otherwise.
    annotations: Optional[List[Annotation]]
    # The input file it was read from: ids are unique within a file only.
    file: str = ""
    # Where a PubTator document's title ends, for a PubTator output to write it on its own line.
    title_end: Optional[int] = None
