"""Everyday English is not a concept: function words, frequent words that
are no name of the vocabulary, numbers; acronyms and names still link."""
import pytest

from spacy.lang.en.stop_words import STOP_WORDS

from spacy_biosyn.preprocess.everyday_words import function_words, is_everyday_english

FUNCTION_WORDS = function_words(STOP_WORDS)

NAMES = {"pain", "breast cancer", "as", "ca"}


def is_name(text):
    return text in NAMES


@pytest.mark.parametrize("text", ["a", "the", "of the", "Is", "as", "protein", "the protein", "sleep", "1", "2.5",
                                  "wasn't"])
def test_function_words_frequent_words_and_numbers_are_everyday_english(text):
    assert is_everyday_english(text, is_name, FUNCTION_WORDS)


@pytest.mark.parametrize("text", [
    "pain", "the pain",  # a frequent word that is a name of the vocabulary
    "Ca",  # calcium: spaCy lists "ca" as a stop word only as the first piece of "can't"
    "AS", "ALL", "CAN",  # acronyms: ankylosing spondylitis, acute lymphoblastic leukemia
    "breast cancer", "genetic disease",  # two content words: the encoder decides
    "xyzzy syndrome", "BRCA1", "",  # rare words, a gene, nothing
    "...",  # punctuation alone is read as nothing to link elsewhere
])
def test_names_acronyms_and_rare_words_are_not(text):
    assert not is_everyday_english(text, is_name, FUNCTION_WORDS)


def test_the_engine_leaves_everyday_english_unlinked_and_links_the_rest(nlp):
    links = nlp.get_pipe("biosyn_linker").engine.link(["a", "the protein", "BREAST CANCER", "breast cancer", "2"])
    assert [link.cui for link in links] == [None, None, "D001943", "D001943", None]
    assert links[0].kb_ents == [] and links[4].kb_ents == []


def test_the_small_word_list_read_at_run_time_says_what_the_large_one_says():
    from wordfreq import get_frequency_dict, zipf_frequency

    from spacy_biosyn.preprocess.everyday_words import FREQUENT

    near = [word for word, freq in get_frequency_dict("en", "large").items() if freq >= 10 ** (FREQUENT - 9.5)]
    assert len(near) > 3000
    assert [zipf_frequency(w, "en", "small") >= FREQUENT for w in near] == \
        [zipf_frequency(w, "en", "large") >= FREQUENT for w in near]
