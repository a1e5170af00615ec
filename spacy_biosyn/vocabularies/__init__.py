"""Vocabulary readers, one module per format, and the table that names,
detects and reads them (formats.py): a file in, a Dictionary out."""
