"""BioSyn's dictionary files (`train_dictionary.txt`, `test_dictionary.txt`):
one `ID|ID||name` line per concept name. The name after `||` is one of the
concept's names; the `|`-separated IDs before it are the concept's, and since
the file does not say which is primary, `preferred_ids` orders them (MeSH,
then OMIM). The files carry no types or definitions."""
from functools import partial
from typing import List, Sequence

from ..files.downloads import cached_path
from ..kb.dictionary import Dictionary
from ..kb.ids import DEFAULT_ID_PREFERENCE, IdPreference
from ..parts import BIOSYN_DICTIONARY, registry
from .common import PathLike, VocabularyReader


def read_biosyn(path: PathLike, preferred_ids: Sequence[str] = DEFAULT_ID_PREFERENCE) -> Dictionary:
    """One `ID|ID||name` line per concept name."""
    path = cached_path(path)
    return Dictionary.from_file(path, IdPreference(preferred_ids))


@registry.readers(BIOSYN_DICTIONARY)
def biosyn_dictionary(path: str, preferred_ids: List[str] = list(DEFAULT_ID_PREFERENCE)) -> VocabularyReader:
    IdPreference(preferred_ids)  # a bad pattern fails when the config is read
    return partial(read_biosyn, path, preferred_ids)
