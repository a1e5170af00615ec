"""What the linking thread runs a batch through: a loaded spaCy pipeline,
which finds entities in texts or links those a request gives in their
document; or, where spaCy is not installed, the pipeline's linking engine
alone, which links mention strings (POST /link/mentions) and nothing that
needs a Doc. Either way a mention string goes to the engine, with no Doc
and the pipeline's settings untouched."""
from typing import TYPE_CHECKING, Iterator, List, Optional, Sequence

from ..corpora.documents import Document
from ..linking.engine import LinkingEngine
from ..linking.rows import rows_per_mention
from ..names import PIPE_NAME

if TYPE_CHECKING:
    from spacy.language import Language


class EngineLinker:
    """A saved pipeline's engine, opened without spaCy."""

    # Why no text is linked (409 at POST /link), or None where texts are.
    no_texts: Optional[str] = ("spaCy is not installed where this service runs, so it links mention strings "
                               "alone: POST /link/mentions")

    def __init__(self, engine: LinkingEngine):
        self.engine = engine
        # The longest text it links (nlp.max_length); None: no text but mention strings.
        self.max_length: Optional[int] = None

    def mentions(self, mentions: Sequence[str]) -> List[List[dict]]:
        """A list of rows per mention, as `link --mentions --json` prints them."""
        return rows_per_mention(self.engine, mentions)

    def warm_up(self) -> None:
        """Link a mention once before serving: the first link opens what
        loads lazily (wordfreq, the encoder's session: 2.4 s on the first
        request measured without this). The engine then forgets what it
        ranked, so no answer depends on the warm-up."""
        self.mentions(["hereditary cancer"])
        self.engine.clear_caches()


class PipelineLinker(EngineLinker):
    """A loaded spaCy pipeline, whose linker's engine links the mention strings."""

    no_texts = None

    def __init__(self, nlp: "Language"):
        from ..corpus_linking.output import concept_names

        super().__init__(nlp.get_pipe(PIPE_NAME).engine)
        self.nlp = nlp
        self.max_length = nlp.max_length
        self.names = concept_names(nlp)

    def texts(self, documents: Sequence[Document]) -> Iterator[List[dict]]:
        """Each document's rows, its entities found by the pipeline."""
        from ..corpus_linking.output import document_rows

        docs = self.nlp.pipe(document.text for document in documents)
        return (document_rows(document, doc, None, self.names) for document, doc in zip(documents, docs))

    def given(self, documents: Sequence[Document]) -> Iterator[List[dict]]:
        """Each document's rows, its annotations linked in its context by the
        linker alone, as `link-corpus --gold-spans` links them."""
        from ..corpus_linking.output import document_rows
        from ..corpus_linking.worker import only_the_linker, with_given_spans

        given = [with_given_spans(self.nlp, document) for document in documents]
        docs = self.nlp.pipe((doc for doc, _ in given), disable=only_the_linker(self.nlp))
        return (document_rows(document, doc, spans, self.names) for document, (_, spans), doc in zip(documents, given, docs))
