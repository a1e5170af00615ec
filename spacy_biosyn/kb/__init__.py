"""The dictionary and its IDs: names and their concepts (dictionary.py),
what a vocabulary says of each concept (details.py), both packed into
buffers (packed.py), which of a concept's IDs is preferred (ids.py), ID
namespaces, and the concepts as scispaCy's `linker.kb` shows them
(knowledge_base.py)."""
