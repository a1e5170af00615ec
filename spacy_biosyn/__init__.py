"""spacy-biosyn: BioSyn-style biomedical entity linking as a spaCy pipe.

Importing the package registers the `biosyn_linker` factory, the
`spacy_biosyn.*` registered functions (vocabulary readers among them), the
Doc extension `biosyn_abbreviations` and the Span extensions `cui`,
`concept_ids`, `kb_ents`, `candidates` and `parts`; the entry points in
setup.cfg make spaCy do it on demand.
"""
from .abbreviations import Abbreviation
from .storage import save_pipeline
from .component import BiosynLinker, make_biosyn_linker
from .concepts import AliasCountReranker, ConceptCentroids, ConceptScorer
from .dense import TransformerEncoder
from .dictionary import DEFAULT_ID_PREFERENCE, Dictionary, IdPreference
from .errors import BiosynError, CorpusError, DictionaryError, MismatchError, SavedStateError
from .index import ExactIndex, FaissIndex, SearchIndex
from .linker import Candidate, LinkedPart, Linker
from .sieve import Sieve
from .text import normalize
from .vocabularies import read_biosyn, read_medic, read_obo, read_scispacy_kb, read_umls, read_vocabulary

__version__ = "0.1.0"

__all__ = [
    "Abbreviation",
    "AliasCountReranker",
    "BiosynError",
    "BiosynLinker",
    "Candidate",
    "DEFAULT_ID_PREFERENCE",
    "ConceptCentroids",
    "ConceptScorer",
    "CorpusError",
    "Dictionary",
    "DictionaryError",
    "ExactIndex",
    "FaissIndex",
    "IdPreference",
    "LinkedPart",
    "Linker",
    "MismatchError",
    "SavedStateError",
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
