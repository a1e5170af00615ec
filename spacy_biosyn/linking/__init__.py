"""The linking engine, with no spaCy type: settings, the routes by label,
a mention's readings, ranking, re-ranking in context, the document-level
choice and what a span will say, and the state saved between runs."""
