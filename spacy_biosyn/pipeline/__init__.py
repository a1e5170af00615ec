"""The spaCy side of the linker: the biosyn_linker factory and pipe, which
adapt a linking engine (linking/) to docs and spans, the span and doc
extensions it sets, and how a built pipe's settings are written."""
