"""The names to link to and their search: vocabularies read into a Dictionary,
tf-idf and dense indexes, and the Linker that ranks names by BioSyn's score."""
