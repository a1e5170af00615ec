"""What an engine indexes, as the pipe's config names it: a vocabulary of
the catalogue, or a dictionary and routes by label, and the synonyms,
annotated corpora and corrections read with them. Checked when the pipe is
built; read by `LinkingEngine.initialize()`, which may be given others."""
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, Optional, Sequence, TypeVar, Union

from ..named.catalogue import named_vocabulary
from ..vocabularies.common import VocabularyReader

# A path, read as a BioSyn `CUI||name` file, or a registered vocabulary reader.
VocabularySource = Union[str, VocabularyReader]

Source = TypeVar("Source")


def casefolded_routes(name: str, routes: Dict[str, Source]) -> Dict[str, Source]:
    """The routes setting keyed by casefolded label; `name` (the pipe's)
    leads the error when two labels differ only in case."""
    folded = {label.casefold(): source for label, source in routes.items()}
    if len(folded) != len(routes):
        raise ValueError(f"{name}: routes names a label twice in different cases: {sorted(routes)}")
    return folded


@dataclass(frozen=True)
class DataSources:
    """What an engine indexes: a named vocabulary, or a dictionary and
    routes, with the synonyms, corpora and corrections read with them."""

    # A vocabulary of the catalogue (named/catalogue.py), fetched and cached.
    linker_name: Optional[str] = None
    dictionary: Optional[Union[VocabularySource, Path]] = None
    # Casefolded entity label -> its own vocabulary.
    routes: Dict[str, Union[VocabularySource, Path]] = field(default_factory=dict)
    synonyms: Sequence[Union[str, Path]] = ()
    preferred_ids_from: Sequence[Union[str, Path]] = ()
    corrections: Optional[Union[str, Path]] = None

    @classmethod
    def checked(cls, name: str, **given) -> "DataSources":
        """The sources of the pipe `name`, or a ValueError naming what is wrong."""
        linker_name = given.get("linker_name")
        if linker_name is not None:
            try:
                named_vocabulary(linker_name)
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
            if given.get("dictionary") is not None:
                raise ValueError(f"{name}: give linker_name or dictionary, not both")
        given["routes"] = casefolded_routes(name, given.get("routes") or {})
        given["synonyms"] = list(given.get("synonyms") or ())
        given["preferred_ids_from"] = list(given.get("preferred_ids_from") or ())
        return cls(**given)

    def overridden(self, name: str, **given) -> "DataSources":
        """These sources with those `given` (not None) in their place, as
        initialize() is given them."""
        # An empty dictionary or corrections path is not given, as an unset one.
        given = {key: value for key, value in given.items()
                 if value is not None and (value or key not in ("dictionary", "corrections"))}
        if "routes" in given:
            given["routes"] = casefolded_routes(name, given["routes"])
        return replace(self, **given)

    @property
    def is_empty(self) -> bool:
        return self.linker_name is None and self.dictionary is None and not self.routes
