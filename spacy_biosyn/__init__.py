"""spacy-biosyn: BioSyn-style biomedical entity linking as a spaCy pipe.

Importing the package registers the `biosyn_linker` factory, the
`spacy_biosyn.*` registered functions, the Doc extension `abbreviations` and
the Span extensions `cui`, `kb_ents`, `candidates` and `parts`; the entry
points in setup.cfg make spaCy do it on demand.
"""
from .abbreviations import Abbreviation
from .component import BiosynLinker, make_biosyn_linker
from .concepts import AliasCountReranker, ConceptCentroids, ConceptScorer
from .dense import TransformerEncoder
from .dictionary import Dictionary, DictionaryError
from .index import ExactIndex, FaissIndex, SearchIndex
from .linker import Candidate, LinkedPart, Linker, MismatchError
from .sieve import Sieve
from .text import normalize

__version__ = "0.1.0"

__all__ = [
    "Abbreviation",
    "AliasCountReranker",
    "BiosynLinker",
    "Candidate",
    "ConceptCentroids",
    "ConceptScorer",
    "Dictionary",
    "DictionaryError",
    "ExactIndex",
    "FaissIndex",
    "LinkedPart",
    "Linker",
    "MismatchError",
    "SearchIndex",
    "Sieve",
    "TransformerEncoder",
    "make_biosyn_linker",
    "normalize",
]
