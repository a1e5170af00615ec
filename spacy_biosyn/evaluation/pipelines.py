"""A saved pipeline scored as `evaluate` scores it: its linker's Acc@k on
BioSyn's `.concept` queries or on a PubTator file's gold spans, and the
predictions a link-corpus run saved, read back for end-to-end scores."""
import warnings
from pathlib import Path
from typing import Callable, Collection, Dict, Iterable, Iterator, Mapping, Optional, Sequence, Union

from spacy.language import Language
from spacy.tokens import Doc
from spacy.training import Example

from ..corpora.docs import pubtator_to_examples
from ..corpora.readers import PubTatorDocument, iter_pubtator, query_contexts, read_concept_queries, read_pubtator
from ..errors import CorpusError
from ..kb.dictionary import Dictionary
from ..names import PIPE_NAME
from ..pipeline.accuracy import link_scores
from ..pipeline.configure import configure_linker
from ..pipeline.extensions import register_extensions
from .queries import evaluate

register_extensions()  # scores read span._.cui, set by the linker or by hand

MAX_K = 5


def is_pubtator(path: Path) -> bool:
    """A single file that is not a `.concept` file is read as PubTator."""
    return path.is_file() and path.suffix != ".concept"


def evaluate_linker(
    nlp: Language,
    queries: Union[str, Path],
    *,
    labels: Optional[Sequence[str]] = None,
    texts: Optional[Union[str, Path]] = None,
    dictionary: Optional[Union[Dictionary, str, Path]] = None,
    max_k: int = MAX_K,
) -> Dict[str, float]:
    """Acc@1..Acc@max_k of the pipeline's linker on `queries`: a folder of
    `.concept` files, ranked as BioSyn preprocessed them, or a PubTator
    file whose gold spans (of `labels`, default all) are linked in their
    raw abstracts, which adds link_cui_acc. `texts` are the PubTator
    abstracts `.concept` queries come from, which a re-ranker reads as
    context. IDs compare through the linker's score_namespaces. The pipeline
    is changed as scoring needs: its linker keeps at least max_k concepts
    (top_k), and indexes `dictionary` in place of its own if given."""
    queries = Path(queries)
    linker = nlp.get_pipe(PIPE_NAME)
    if linker.top_k < max_k:
        configure_linker(nlp, top_k=max_k)
    if dictionary is not None:
        linker.engine.set_dictionary(dictionary)
    namespaces = linker.engine.score_namespaces()
    if is_pubtator(queries):
        examples = pubtator_to_examples(nlp, read_pubtator(queries), set(labels) if labels else None)
        metrics = evaluate_examples(linker.pipe, examples, max_k=max_k, id_namespaces=namespaces)
        if not metrics["n"]:
            raise CorpusError(f"{queries}: no mention with a gold ID to score")
        return metrics
    concept_queries = read_concept_queries(queries)
    contexts = None
    if linker.reranker is not None:
        if texts is None:
            warnings.warn("The pipeline re-ranks with context: give the abstracts the queries come from "
                          "(--texts ABSTRACTS.PubTator), or it reads each mention alone", UserWarning, stacklevel=2)
        else:
            contexts = query_contexts(concept_queries, read_pubtator(texts), linker.reranker.context_chars)
    return evaluate(linker.rank, concept_queries, max_k=max_k, contexts=contexts, id_namespaces=namespaces)


def saved_predictions(path: Union[str, Path]) -> Iterator[PubTatorDocument]:
    """The documents of a PubTator file of predictions, or of a link-corpus
    folder's PubTator shards, in shard order."""
    path = Path(path)
    files = sorted(path.glob("shard-*.pubtator")) if path.is_dir() else [path]
    if not files:
        raise CorpusError(f"{path}: neither a pipeline nor predictions (PubTator, or link-corpus PubTator shards)")
    return (document for file in files for document in iter_pubtator(file))


def evaluate_examples(
    pipe: Callable[[Iterable[Doc]], Iterable[Doc]], examples: Sequence[Example], max_k: int = 5,
    labels: Optional[Collection[str]] = None, id_namespaces: Optional[Mapping[str, str]] = None,
) -> Dict[str, float]:
    """Link the predicted docs of `examples` in place with `pipe` (a
    component's or a pipeline's), then score them (`link_scores`)."""
    for _ in pipe(eg.predicted for eg in examples):
        pass
    return link_scores(examples, max_k, labels, id_namespaces)
