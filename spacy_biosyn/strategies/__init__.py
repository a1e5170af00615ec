"""What may sit around the name search: concept scorers, the synonym sieve,
the context re-ranker and the type filter."""
