"""spacy-biosyn: BioSyn-style biomedical entity linking as a spaCy pipe.

The entry points in setup.cfg make spaCy import what a config names on
demand: the `biosyn_linker` factory (which registers the Doc extension
`biosyn_abbreviations` and the Span extensions `cui`, `concept_ids`,
`kb_ents`, `candidates` and `parts`) and the `spacy_biosyn.*` registered
functions. Public names are imported on first use.
"""
import importlib
from typing import Any, List

# Public names and the module that defines each, imported on first use:
# `python -m spacy_biosyn --help` then starts without torch, and spaCy's
# entry points import only the module a pipeline needs.
_EXPORTS = {
    "Abbreviation": "abbreviations",
    "save_pipeline": "storage",
    "BiosynLinker": "component",
    "make_biosyn_linker": "component",
    "AliasCountReranker": "concepts",
    "ConceptCentroids": "concepts",
    "ConceptScorer": "concepts",
    "TransformerEncoder": "dense",
    "Encoder": "encoders",
    "OnnxEncoder": "onnx_encoder",
    "DEFAULT_ID_PREFERENCE": "dictionary",
    "Dictionary": "dictionary",
    "IdPreference": "dictionary",
    "BiosynError": "errors",
    "CorpusError": "errors",
    "DictionaryError": "errors",
    "MismatchError": "errors",
    "SavedStateError": "errors",
    "ExactIndex": "index",
    "FaissIndex": "faiss_index",
    "SearchIndex": "index",
    "link_corpus": "corpus_linking",
    "Candidate": "linker",
    "LinkedPart": "linker",
    "Linker": "linker",
    "Sieve": "sieve",
    "normalize": "text",
    "read_biosyn": "vocabularies",
    "read_medic": "vocabularies",
    "read_obo": "vocabularies",
    "read_scispacy_kb": "vocabularies",
    "read_umls": "vocabularies",
    "read_vocabulary": "vocabularies",
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
