"""Tokenizer rules that put token boundaries where biomedical annotations
end: spaCy's English rules glue "(DOX)-induced", "[3H]spiperone",
"thallium-201" and "pilocarpine-" (of "pilocarpine- and ...") into one token,
so an NER cannot emit "DOX" or "spiperone" as an entity. On BC5CDR's dev
abstracts they leave 2.4% of the Chemical spans off token boundaries, and
1.3% with these rules (Disease spans: 0.1%; NCBI Disease: 0.0% of dev).

They also keep any run of `MAX_WORD_CHARS` or more characters without
whitespace as one token: spaCy strips prefixes and suffixes from such a run
one at a time, each time copying the rest (17.6 s for 5,000 nested
parentheses, minutes for 25,000), where the linker takes a second.

`spacy_biosyn.BiomedicalTokenizer.v1` is an `[initialize] before_init`
callback: the rules are set once, when a pipeline is trained, and saved
with its tokenizer, so loading the pipeline needs nothing from here.
"""
import re

from spacy.language import Language
from spacy.util import compile_infix_regex, compile_suffix_regex, registry
from ..parts import BIOMEDICAL_TOKENIZER

INFIXES = (
    r"(?<=[A-Za-z0-9])[\)\]](?=-)",  # (DOX)-induced
    r"(?<=[\)\]])-(?=[A-Za-z])",
    r"(?<=\])(?=[A-Za-z])",  # [3H]spiperone
    r"(?<=[A-Za-z])-(?=[0-9])",  # thallium-201
)
SUFFIXES = (r"(?<=[A-Za-z])-",)  # pilocarpine- and morphine-induced
# No word of NCBI Disease or BC5CDR comes near; a DNA sequence or a table
# without spaces may, and stays whole.
MAX_WORD_CHARS = 1000


def add_biomedical_rules(nlp: Language) -> Language:
    """Extend the pipeline's tokenizer with INFIXES and SUFFIXES."""
    tokenizer = nlp.tokenizer
    tokenizer.infix_finditer = compile_infix_regex(list(nlp.Defaults.infixes or ()) + list(INFIXES)).finditer
    tokenizer.suffix_search = compile_suffix_regex(list(nlp.Defaults.suffixes or ()) + list(SUFFIXES)).search
    # token_match is asked first of each whitespace-free run: a match keeps it whole.
    long_run = rf"(?s:.{{{MAX_WORD_CHARS}}})"
    existing = tokenizer.token_match
    if existing is None:
        tokenizer.token_match = re.compile(long_run).match
    elif long_run not in existing.__self__.pattern:
        pattern = existing.__self__
        tokenizer.token_match = re.compile(f"(?:{pattern.pattern})|{long_run}", pattern.flags).match
    return nlp


@registry.callbacks(BIOMEDICAL_TOKENIZER)
def make_biomedical_tokenizer():
    return add_biomedical_rules
