"""spacy-biosyn: BioSyn-style biomedical entity linking as a spaCy pipe.

Importing the package registers the `biosyn_linker` factory, the
`spacy_biosyn.*` registered functions (vocabulary readers among them), the
Doc extension `biosyn_abbreviations` and the Span extensions `cui`,
`concept_ids`, `kb_ents`, `candidates` and `parts`; the entry points in
setup.cfg make spaCy do it on demand.
"""
from .abbreviations import Abbreviation
from .atomic import save_pipeline
from .component import BiosynLinker, make_biosyn_linker
from .concepts import AliasCountReranker, ConceptCentroids, ConceptScorer
from .dense import TransformerEncoder
from .dictionary import DEFAULT_ID_PREFERENCE, Dictionary, DictionaryError, IdPreference
from .index import ExactIndex, FaissIndex, SearchIndex
from .linker import Candidate, LinkedPart, Linker, MismatchError
from .sieve import Sieve
from .text import normalize
from .vocabularies import read_biosyn, read_medic, read_obo, read_scispacy_kb, read_umls, read_vocabulary

__version__ = "0.1.0"

__all__ = [
    "Abbreviation",
    "AliasCountReranker",
    "BiosynLinker",
    "Candidate",
    "DEFAULT_ID_PREFERENCE",
    "ConceptCentroids",
    "ConceptScorer",
    "Dictionary",
    "DictionaryError",
    "ExactIndex",
    "FaissIndex",
    "IdPreference",
    "LinkedPart",
    "Linker",
    "MismatchError",
    "SearchIndex",
    "Sieve",
    "TransformerEncoder",
    "make_biosyn_linker",
    "normalize",
    "read_biosyn",
    "read_medic",
    "read_obo",
    "read_scispacy_kb",
    "read_umls",
    "read_vocabulary",
    "save_pipeline",
]
