"""The named vocabularies: `add_pipe("biosyn_linker", config={"linker_name": NAME})`.

One table: each entry's publisher, the files it publishes (read in the
format of vocabularies.READERS), the terms a user must read, where the
concepts' types and definitions come from, and its stated size, which says
whether its index is exact or faiss's (search/sized_index.py). named/cache.py
fetches, reads, encodes and caches them.

Where each URL was checked (the publisher's own page or code):
- scispaCy's five knowledge bases, release 2023-04-23 (scispaCy >= 0.5.2):
  `scispacy/linking_utils.py` and the README's "EntityLinker" section in
  https://github.com/allenai/scispacy (tag v0.5.2, unchanged to v0.6.2).
  The same JSONL files scispaCy's `linker_name` loads, so a name means here
  what it means there.
- CTD's MEDIC and chemical vocabularies: https://ctdbase.org/downloads/
  (terms: https://ctdbase.org/about/legal.jsp), refreshed monthly.
- MONDO: https://mondo.monarchinitiative.org/pages/download/, monthly releases.
- MeSH: https://www.nlm.nih.gov/databases/download/mesh.html (terms:
  https://www.nlm.nih.gov/databases/download/terms_and_conditions_mesh.html);
  the current year's descriptors and supplementary concept records, gzipped.

No publisher gives a checksum beside these files: the download's length is
checked, and its SHA-256 is recorded when it is cached and keys the index
built from it.
"""
from dataclasses import dataclass
from typing import Dict, Tuple

_SCISPACY = "https://ai2-s2-scispacy.s3-us-west-2.amazonaws.com/data/kbs/2023-04-23"
_SCISPACY_PAGE = "https://github.com/allenai/scispacy#entitylinker"
_UMLS_TERMS = (
    "derived from UMLS 2022AB: using it requires a UMLS Metathesaurus License "
    "(https://uts.nlm.nih.gov/uts/license/license-agreement)"
)
_MESH_YEAR = 2026
_MESH = "https://nlmpubs.nlm.nih.gov/projects/mesh/MESH_FILES/xmlmesh"


@dataclass(frozen=True)
class NamedVocabulary:
    name: str
    title: str
    publisher: str
    # The publisher's page that lists the files.
    page: str
    # The files to fetch, read in `format` one after the other into one vocabulary.
    urls: Tuple[str, ...]
    format: str
    # What a user must read before using it.
    terms: str
    types_from: str
    definitions_from: str
    # The size as its publisher states it.
    size: str
    # The back-end its size gets from SizedIndex: faiss from LARGE_VOCABULARY_NAMES names on.
    index: str = "exact"


def _scispacy(name: str, file: str, title: str, size: str, terms: str, index: str = "exact") -> NamedVocabulary:
    # scispaCy names UMLS's file with S3's path-style host, the others with the virtual-host one.
    base = _SCISPACY if name != "umls" else "https://s3-us-west-2.amazonaws.com/ai2-s2-scispacy/data/kbs/2023-04-23"
    return NamedVocabulary(
        name, title, "scispaCy (Allen Institute for AI)", _SCISPACY_PAGE, (f"{base}/{file}",), "scispacy", terms,
        "UMLS semantic types (TUIs)", "the KB's definition field (UMLS definitions)", size, index,
    )


CATALOGUE: Dict[str, NamedVocabulary] = {entry.name: entry for entry in (
    _scispacy("umls", "umls_2022_ab_cat0129.jsonl", "UMLS 2022AB, levels 0, 1, 2 and 9 (scispaCy's umls)",
              "~3M concepts", _UMLS_TERMS, index="faiss"),
    _scispacy("mesh", "umls_mesh_2022.jsonl", "MeSH 2022 from UMLS (scispaCy's mesh)", "~30k entities", _UMLS_TERMS),
    _scispacy("rxnorm", "umls_rxnorm_2022.jsonl", "RxNorm 2022 from UMLS (scispaCy's rxnorm)", "~100k concepts",
              _UMLS_TERMS),
    _scispacy("go", "umls_go_2022.jsonl", "Gene Ontology from UMLS 2022 (scispaCy's go)", "~67k concepts",
              _UMLS_TERMS + "; GO itself is CC BY 4.0"),
    _scispacy("hpo", "umls_hpo_2022.jsonl", "Human Phenotype Ontology from UMLS 2022 (scispaCy's hpo)",
              "16k concepts", _UMLS_TERMS + "; HPO's own licence: https://hpo.jax.org/license"),
    NamedVocabulary(
        "medic", "MEDIC, CTD's merged disease vocabulary (MeSH diseases + OMIM), current release",
        "Comparative Toxicogenomics Database (CTD)", "https://ctdbase.org/downloads/",
        ("https://ctdbase.org/reports/CTD_diseases.tsv.gz",), "medic",
        "CTD's terms of use (https://ctdbase.org/about/legal.jsp): cite CTD and link to it",
        "MeSH tree numbers (TreeNumbers)", "CTD's Definition column",
        "2012: 9,700 diseases, over 67,000 terms (MEDIC's paper)",
    ),
    NamedVocabulary(
        "ctd-chemicals", "CTD's chemical vocabulary (MeSH chemicals), current release",
        "Comparative Toxicogenomics Database (CTD)", "https://ctdbase.org/downloads/",
        ("https://ctdbase.org/reports/CTD_chemicals.tsv.gz",), "ctd-chemicals",
        "CTD's terms of use (https://ctdbase.org/about/legal.jsp): cite CTD and link to it",
        "MeSH tree numbers (TreeNumbers)", "CTD's Definition column", "not stated by CTD",
    ),
    NamedVocabulary(
        "mondo", "MONDO disease ontology, current release", "Monarch Initiative",
        "https://mondo.monarchinitiative.org/pages/download/", ("http://purl.obolibrary.org/obo/mondo.obo",), "obo",
        "CC BY 4.0: attribute MONDO", "the OBO namespace (subset) of each term", "the terms' def: lines",
        "29,315 diseases, 69,073 exact synonyms",
    ),
    NamedVocabulary(
        "mesh-current", f"MeSH {_MESH_YEAR}: descriptors and supplementary concept records (NLM's current release)",
        "U.S. National Library of Medicine (NLM)", "https://www.nlm.nih.gov/databases/download/mesh.html",
        (f"{_MESH}/desc{_MESH_YEAR}.gz", f"{_MESH}/supp{_MESH_YEAR}.gz"), "mesh",
        "NLM's MeSH terms (https://www.nlm.nih.gov/databases/download/terms_and_conditions_mesh.html): "
        "acknowledge NLM as the source and say which MeSH version you use",
        "MeSH semantic types and tree numbers", "scope notes (MS) and supplementary records' notes",
        "31,110 descriptors (2026); 323,939 supplementary records (2025)",
    ),
)}


def named_vocabulary(name: str) -> NamedVocabulary:
    """The catalogue's entry, or a ValueError that lists the names."""
    try:
        return CATALOGUE[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"linker_name {name!r} is not a named vocabulary; choose one of {', '.join(CATALOGUE)} "
            "(python -m spacy_biosyn linkers lists them), or give your own with dictionary = PATH"
        ) from None
