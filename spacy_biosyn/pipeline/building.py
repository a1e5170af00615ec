"""A linker pipeline indexed and saved whole: built new from a config, or a
saved one re-indexed against other vocabularies. What `build` and `index`
run, for notebooks and tests as for the command line."""
import time
from pathlib import Path
from typing import Callable, Dict, Iterable, NamedTuple, Optional, Tuple, Union

from spacy.language import Language

from ..files.storage import save_pipeline
from ..kb.dictionary import Dictionary
from ..linking.data_sources import VocabularySource
from ..names import PIPE_NAME
from ..search.nil_default import NilDefault
from .configure import configure_linker


class IndexReport(NamedTuple):
    """What indexing did: the names indexed, in how many seconds."""

    names: int
    seconds: float
    # What nil_threshold "auto" became, and why; None where it is not "auto".
    nil_default: Optional[NilDefault]


def build_pipeline(
    config: dict,
    output_dir: Union[str, Path],
    *,
    lang: str = "en",
    **sources,
) -> IndexReport:
    """A blank `lang` pipeline with a biosyn_linker of `config`, indexed
    from `sources` (initialize()'s: dictionary, routes, synonyms,
    preferred_ids_from) or the config's named vocabulary, saved to
    `output_dir`. The data reach the pipe through initialize() alone: the
    saved pipeline holds their content, and its config.cfg no path of this machine."""
    import spacy

    nlp = spacy.blank(lang)
    linker = nlp.add_pipe(PIPE_NAME, config=config)
    return index_and_save(nlp, lambda: linker.initialize(nlp=nlp, **sources), output_dir)


def reindex_pipeline(
    nlp: Language,
    output_dir: Union[str, Path],
    dictionary: Union[Dictionary, VocabularySource, Path],
    *,
    routes: Optional[Dict[str, Union[VocabularySource, Path]]] = None,
    preferred_ids_from: Iterable[Union[str, Path]] = (),
    id_namespaces: Optional[Dict[str, str]] = None,
) -> IndexReport:
    """The pipeline's linker indexing another dictionary (and routes) with
    its (trained) encoder and tf-idf, saved to `output_dir`: one model
    serves dictionaries larger than the one it was trained on."""
    engine = nlp.get_pipe(PIPE_NAME).engine
    if id_namespaces is not None:
        configure_linker(nlp, id_namespaces=id_namespaces)
    preferred_ids_from = list(preferred_ids_from)
    if preferred_ids_from:
        engine.learn_preferred_ids(preferred_ids_from)

    def index() -> None:
        engine.set_dictionary(dictionary)
        for label, source in (routes or {}).items():
            engine.add_route(label, source)

    return index_and_save(nlp, index, output_dir)


def index_and_save(nlp: Language, index: Callable[[], None], output_dir: Union[str, Path]) -> IndexReport:
    """Run the indexing step, timed, then save the pipeline in one piece: a
    pipeline already at `output_dir` is replaced only once the new one is
    whole. The saved config names the encoder as its config_block does (by
    its name, on no device of this machine), so the pipeline loads anywhere."""
    start = time.perf_counter()
    index()
    seconds = time.perf_counter() - start
    engine = nlp.get_pipe(PIPE_NAME).engine
    configure_linker(nlp, encoder=engine.encoder)
    save_pipeline(nlp, output_dir)
    auto = engine.settings.nil_threshold == "auto" and engine.reranker is None
    vocabulary = engine.vocabulary()
    return IndexReport(len(vocabulary.dictionary), seconds, vocabulary.nil_default if auto else None)


def with_onnx_encoder(nlp: Language, weights: Optional[str] = None) -> bool:
    """The linker's encoder run with ONNX Runtime from now on, its graph's
    weights stored as `weights` (graph_weights.py; None: a PyTorch encoder
    exported in fp32), named so in the pipeline's config: loading it then
    skips transformers' model classes (it links, but does not train). A
    PyTorch encoder is exported; an ONNX one's graph stored anew. In fp32
    from PyTorch the stored vectors stay, which the same model gives;
    otherwise every name is re-encoded. Returns whether they were."""
    from ..encoders.onnx import OnnxEncoder
    from ..encoders.transformer import TransformerEncoder

    source = nlp.get_pipe(PIPE_NAME).engine.encoder
    if isinstance(source, OnnxEncoder):
        if weights is None:
            raise ValueError(f"its encoder already runs in ONNX Runtime with {source.stored_weights} weights: "
                             "nothing to convert (--weights stores its graph anew)")
        configure_linker(nlp, encoder=source.stored_as(weights), reencode=True)
        return True
    if not isinstance(source, TransformerEncoder):
        raise ValueError(f"its encoder is not a PyTorch one ({type(source).__name__}); convert the pipeline it came from")
    weights = weights or "fp32"
    configure_linker(nlp, encoder=OnnxEncoder(**source.settings, weights=weights).export(source),
                     reencode=weights != "fp32")
    return weights != "fp32"


def assemble_pipeline(
    ner: Language, linker: Language, document_entities: bool = True, *,
    names: Tuple[str, str] = ("the NER's pipeline", "the linker's pipeline"),
) -> Language:
    """One pipeline from raw text to IDs: `ner`'s components (its tokenizer
    included), biosyn_document_entities if asked, then `linker`'s linker.
    `names` say which pipeline an error is about (their folders, say)."""
    if PIPE_NAME not in linker.pipe_names:
        raise ValueError(f"{names[1]}: no {PIPE_NAME} in it (its pipes: {', '.join(linker.pipe_names) or 'none'})")
    taken = [name for name in (PIPE_NAME, "biosyn_document_entities" if document_entities else None) if name in ner.pipe_names]
    if taken:
        raise ValueError(f"{names[0]} already holds {', '.join(taken)}: give the pipeline whose components find entities")
    if document_entities:
        ner.add_pipe("biosyn_document_entities")
    ner.add_pipe(PIPE_NAME, source=linker)
    return ner
