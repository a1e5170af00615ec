"""Annotated corpora: BioSyn `.concept` queries and PubTator files read
(readers.py, no spaCy), written (pubtator_form.py), and made into Docs (docs.py)."""
