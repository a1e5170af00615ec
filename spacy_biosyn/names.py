"""The name of the component's factory, which is also the name it takes in
a pipeline unless the user gives another: the CLI, the trainers and the
corpus workers find the linker by it; the encoder a linker has unless told
otherwise; and the kb_id of an entity left without an ID. A leaf module,
cheap to import."""

PIPE_NAME = "biosyn_linker"
DEFAULT_ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
# From this many names on, a vocabulary (UMLS) is searched with faiss by
# default (search/sized_index.py), and the catalogue says so.
LARGE_VOCABULARY_NAMES = 1_000_000
# span.kb_id_ of an entity the linker leaves without an ID, as spaCy's
# EntityLinker.NIL: spaCy's scorer counts neither it nor a gold "NIL".
NIL = "NIL"
