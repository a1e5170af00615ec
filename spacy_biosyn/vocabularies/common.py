"""What the readers share: the types of a reader and its entries, and the
dictionary they end with.

Each reader keeps a concept's primary ID first and its alternative IDs after
it. Where the format says which ID is primary (CTD's DiseaseID, a UMLS CUI, an
OBO term's id, a scispaCy concept_id) that ID leads; where it does not
(BioSyn's `CUI||name` files and BioSyn's copy of MEDIC), `preferred_ids`
orders them (dictionary.DEFAULT_ID_PREFERENCE: MeSH, then OMIM). A line that
does not fit its format raises DictionaryError naming the file and line.

The registered functions return the reader, not the dictionary: a config
names its vocabulary without reading it, and `initialize()` reads it once.
"""
import warnings
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, Optional, Tuple, Union

from ..kb.details import ConceptDetails
from ..kb.dictionary import Concept, Dictionary, DictionaryError

PathLike = Union[str, Path]
Entries = Iterator[Tuple[Concept, str]]
VocabularyReader = Callable[[], Dictionary]


class _Details(dict):
    """ConceptDetails by the ID a concept leads with, as the reader meets
    them: an ID met again (a file that lists a concept twice) keeps its
    first record's name, and is counted, since its names are merged."""

    def __init__(self):
        super().__init__()
        self.repeated: Dict[str, int] = {}

    def record(self, cui: str, details: ConceptDetails) -> None:
        if cui in self:
            self.repeated[cui] = self.repeated.get(cui, 1) + 1
        else:
            self[cui] = details


def _dictionary(
    path: Path, entries: Iterable[Tuple[Concept, str]], details: Optional[Dict[str, ConceptDetails]] = None
) -> Dictionary:
    """The entries' dictionary, with `details`, which the entries fill as they are read."""
    dictionary = Dictionary.from_entries(entries)
    if not len(dictionary):
        raise DictionaryError(f"{path}: the vocabulary has no names")
    repeated = getattr(details, "repeated", {})
    if repeated:
        shown = ", ".join(f"{cui} ({n}x)" for cui, n in list(repeated.items())[:5])
        warnings.warn(
            f"{path}: {len(repeated)} ID(s) head more than one record ({shown}{', ...' if len(repeated) > 5 else ''}): "
            "each is one concept, with the names of all its records and the first record's name as canonical",
            UserWarning,
            stacklevel=3,
        )
    return dictionary.with_details(details or {})
