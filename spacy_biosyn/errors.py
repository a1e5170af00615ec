"""The errors spacy-biosyn raises about what it is given. Each names the
file (and line) or the setting at fault; `except BiosynError` catches all."""


class BiosynError(ValueError):
    """Input that spacy-biosyn cannot use: a file, a saved pipeline, a setting."""


class DictionaryError(BiosynError):
    """A dictionary or vocabulary file that cannot be read."""


class CorpusError(BiosynError):
    """A corpus file that does not follow its format."""


class MismatchError(BiosynError):
    """Saved parts that do not belong together: vectors, dictionary, tf-idf, encoder."""


class SavedStateError(BiosynError):
    """A saved file that is missing, cut short or out of range."""


class MissingExtraError(BiosynError, ImportError):
    """A part of spacy-biosyn that needs a package this install leaves out;
    says which extra brings it."""
