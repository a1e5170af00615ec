"""spacy-biosyn: BioSyn-style biomedical entity linking as a spaCy pipe.

The entry points in setup.cfg make spaCy import what a config names on
demand: the `biosyn_linker` factory (which registers the Doc extension
`biosyn_abbreviations` and the Span extensions `cui`, `concept_ids`,
`kb_ents`, `candidates` and `parts`) and the `spacy_biosyn.*` registered
functions. Public names are imported on first use.
"""
import importlib
import os
import sys
from typing import Any, List


def _one_torch_thread_in_a_forked_child() -> None:
    # A process forked after torch started its OpenMP pool (an NER's
    # transformer, the linker's encoder, spacy.load's probe) waits forever in
    # that pool's barrier: nlp.pipe(n_process=N) and link-corpus --workers N
    # hung. A forked child computes on one thread, as PyTorch's DataLoader
    # workers do. Registered here, where every pipe of the package passes,
    # whatever encoder serves; torch is touched only if the parent loaded it.
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


os.register_at_fork(after_in_child=_one_torch_thread_in_a_forked_child)

# Public names and the module that defines each, imported on first use:
# `python -m spacy_biosyn --help` then starts without torch, and spaCy's
# entry points import only the module a pipeline needs.
_EXPORTS = {
    "Abbreviation": "ty",
    "save_pipeline": "files.storage",
    "BiosynLinker": "pipeline.component",
    "make_biosyn_linker": "pipeline.factory",
    "configure_linker": "pipeline.configure",
    "AliasCountReranker": "strategies.concept_scorers",
    "ConceptCentroids": "strategies.concept_scorers",
    "ConceptScorer": "ty",
    "TransformerEncoder": "encoders.transformer",
    "Encoder": "ty",
    "OnnxEncoder": "encoders.onnx",
    "DEFAULT_ID_PREFERENCE": "kb.ids",
    "Dictionary": "kb.dictionary",
    "IdPreference": "kb.ids",
    "BiosynError": "errors",
    "CorpusError": "errors",
    "DictionaryError": "errors",
    "MismatchError": "errors",
    "MissingExtraError": "errors",
    "SavedStateError": "errors",
    "Entity": "kb.knowledge_base",
    "KnowledgeBase": "kb.knowledge_base",
    "ExactIndex": "search.index",
    "FaissIndex": "search.faiss_index",
    "SizedIndex": "search.sized_index",
    "CATALOGUE": "named.catalogue",
    "NamedVocabulary": "named.catalogue",
    "fill_named_linker": "named.cache",
    "cached_path": "files.downloads",
    "DownloadError": "files.downloads",
    "SearchIndex": "ty",
    "link_corpus": "corpus_linking",
    "Candidate": "ty",
    "LinkedPart": "ty",
    "NameRanker": "search.name_ranker",
    "LinkingEngine": "linking.engine",
    "SpanLinks": "linking.links",
    "Sieve": "strategies.sieve",
    "normalize": "preprocess.text",
    "displacy_ents": "pipeline.concept_pages",
    "kb_url": "pipeline.concept_pages",
    "IdNamespaces": "kb.namespaces",
    "MEDIC_NAMESPACES": "kb.namespaces",
    "read_biosyn": "vocabularies.biosyn",
    "read_medic": "vocabularies.ctd",
    "read_obo": "vocabularies.obo",
    "read_scispacy_kb": "vocabularies.scispacy_kb",
    "read_umls": "vocabularies.umls",
    "read_vocabulary": "vocabularies.formats",
    "read_vocabulary_file": "vocabularies.formats",
    "detect_format": "vocabularies.formats",
    "read_ctd_chemicals": "vocabularies.ctd",
    "read_mesh": "vocabularies.mesh",
    "ConceptDetails": "kb.dictionary",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> List[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__version__ = "0.1.0"

__all__ = sorted(_EXPORTS)
