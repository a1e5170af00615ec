"""What may sit around the name search: concept scorers, the synonym sieve,
the context re-ranker, the type filter and the NIL default."""
