"""Vocabularies by name (`linker_name="umls"`): the catalogue of where each
is published (catalogue.py), and the cache of linkers built from them (cache.py)."""
