"""The name search: the score S = S_dense + lambda x S_sparse and its unit
scale (scoring.py), the char tf-idf, the index kinds, the ranker that turns
mention strings into ranked names, and the NIL default it saves (what
nil_threshold "auto" means for its vocabulary)."""
