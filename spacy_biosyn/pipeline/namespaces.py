"""IDs with their namespace, and links to each namespace's pages.

BioSyn's dictionaries and the corpora write bare IDs (`D001943`, `114480`),
CTD and OBO files prefixed ones (`MESH:D001943`). With `id_namespaces` set,
the pipe writes every ID it reports with a prefix: an ID that has one keeps
it, a bare one gets the namespace whose pattern it fully matches.
`displacy_ents` gives displaCy each entity's own link, so a bare OMIM ID
does not get a MeSH URL.
"""
import re
from typing import Dict, List, Mapping, Optional

from spacy.tokens import Doc

# The namespaces of MEDIC's IDs: MeSH descriptors (D + 6 digits) and
# supplementary concepts (C + 6 or 9 digits), OMIM entries (6 digits).
MEDIC_NAMESPACES = {"MESH": r"[CD]\d{6}(\d{3})?", "OMIM": r"\d{6}"}

URL_TEMPLATES = {
    "MESH": "https://meshb.nlm.nih.gov/record/ui?ui={}",
    "OMIM": "https://omim.org/entry/{}",
    "UMLS": "https://uts.nlm.nih.gov/uts/umls/concept/{}",
    "MONDO": "http://purl.obolibrary.org/obo/MONDO_{}",
    "DOID": "http://purl.obolibrary.org/obo/DOID_{}",
    "HP": "http://purl.obolibrary.org/obo/HP_{}",
}


class IdNamespaces:
    """Adds a namespace to bare IDs: `namespaces` maps a prefix to the
    regular expression its bare IDs fully match, tried in order."""

    def __init__(self, namespaces: Mapping[str, str]):
        if not isinstance(namespaces, Mapping) or not all(
            isinstance(prefix, str) and prefix and ":" not in prefix for prefix in namespaces
        ):
            raise ValueError(f"id_namespaces must map namespaces (such as MESH) to patterns, got {namespaces!r}")
        try:
            self.patterns = [(prefix, re.compile(pattern)) for prefix, pattern in namespaces.items()]
        except (re.error, TypeError) as error:
            raise ValueError(
                f"id_namespaces holds a pattern that is not a regular expression ({error}), got {namespaces!r}"
            ) from None

    def __call__(self, cui: str) -> str:
        """`cui` with its namespace; a composite's parts each with theirs."""
        return "|".join(self._one(part) for part in cui.split("|"))

    def _one(self, cui: str) -> str:
        if ":" in cui:
            return cui
        return next((f"{prefix}:{cui}" for prefix, pattern in self.patterns if pattern.fullmatch(cui)), cui)


def kb_url(cui: str, templates: Mapping[str, str] = URL_TEMPLATES,
           bare: Mapping[str, str] = MEDIC_NAMESPACES) -> Optional[str]:
    """The page of one concept ID, by its namespace (a bare ID's by the
    patterns of `bare`); None for a composite or an unknown namespace."""
    if not cui or "|" in cui:
        return None
    prefix, _, local = IdNamespaces(bare)(cui).rpartition(":")
    template = templates.get(prefix.upper())
    return template.format(local) if template else None


def displacy_ents(doc: Doc, templates: Mapping[str, str] = URL_TEMPLATES,
                  bare: Mapping[str, str] = MEDIC_NAMESPACES) -> Dict[str, object]:
    """The doc's entities for `displacy.render(..., style="ent", manual=True)`,
    each linked to its own ID's page ("#" where there is none to link)."""
    ents: List[dict] = [
        {"start": ent.start_char, "end": ent.end_char, "label": ent.label_, "kb_id": ent.kb_id_,
         "kb_url": kb_url(ent.kb_id_, templates, bare) or "#"}
        for ent in doc.ents
    ]
    return {"text": doc.text, "ents": ents, "title": None}
