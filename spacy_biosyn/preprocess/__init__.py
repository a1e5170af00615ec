"""Mention text before search: abbreviations, composite mentions, normalization
and the readings of a mention that are ranked."""
