"""The spaCy side: the biosyn_linker pipe, its routes by label, the
re-ranker, what spans are given, and what a saved pipe holds."""
