"""Each concept's page, by its ID's namespace: `displacy_ents` gives
displaCy each entity's own link, so a bare OMIM ID does not get a MeSH URL.
"""
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional

from ..kb.namespaces import MEDIC_NAMESPACES, IdNamespaces

if TYPE_CHECKING:
    from spacy.tokens import Doc

URL_TEMPLATES = {
    "MESH": "https://meshb.nlm.nih.gov/record/ui?ui={}",
    "OMIM": "https://omim.org/entry/{}",
    "UMLS": "https://uts.nlm.nih.gov/uts/umls/concept/{}",
    "MONDO": "http://purl.obolibrary.org/obo/MONDO_{}",
    "DOID": "http://purl.obolibrary.org/obo/DOID_{}",
    "HP": "http://purl.obolibrary.org/obo/HP_{}",
}


def kb_url(cui: str, templates: Mapping[str, str] = URL_TEMPLATES,
           bare: Mapping[str, str] = MEDIC_NAMESPACES) -> Optional[str]:
    """The page of one concept ID, by its namespace (a bare ID's by the
    patterns of `bare`); None for a composite or an unknown namespace."""
    if not cui or "|" in cui:
        return None
    prefix, _, local = IdNamespaces(bare)(cui).rpartition(":")
    template = templates.get(prefix.upper())
    return template.format(local) if template else None


def displacy_ents(doc: "Doc", templates: Mapping[str, str] = URL_TEMPLATES,
                  bare: Mapping[str, str] = MEDIC_NAMESPACES) -> Dict[str, object]:
    """The doc's entities for `displacy.render(..., style="ent", manual=True)`,
    each linked to its own ID's page ("#" where there is none to link)."""
    ents: List[dict] = [
        {"start": ent.start_char, "end": ent.end_char, "label": ent.label_, "kb_id": ent.kb_id_,
         "kb_url": kb_url(ent.kb_id_, templates, bare) or "#"}
        for ent in doc.ents
    ]
    return {"text": doc.text, "ents": ents, "title": None}
