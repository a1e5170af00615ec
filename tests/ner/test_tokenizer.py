"""spacy_biosyn.BiomedicalTokenizer.v1's rules on a blank pipeline: token
boundaries where biomedical annotations end, and long runs kept whole."""
import re

import spacy

from spacy_biosyn.ner.tokenizer import add_biomedical_rules


def test_the_biomedical_tokenizer_keeps_long_runs_whole_and_other_token_rules_as_they_were():
    nlp = spacy.blank("en")
    nlp.tokenizer.token_match = re.compile(r"[A-Z]+-\d+").match  # a rule of the pipeline's own
    add_biomedical_rules(add_biomedical_rules(nlp))  # applied twice, as a re-initialized pipeline is
    long_run = "(" * 600 + "x" + ")" * 600
    assert [t.text for t in nlp.make_doc(f"BRCA-1 in {long_run}.")] == ["BRCA-1", "in", f"{long_run}."]
    assert [t.text for t in nlp.make_doc("(gout).")] == ["(", "gout", ")", "."]


def test_the_biomedical_tokenizer_splits_where_annotations_end_and_stays_linear():
    nlp = add_biomedical_rules(spacy.blank("en"))
    assert [t.text for t in nlp.make_doc("(DOX)-induced")] == ["(", "DOX", ")", "-", "induced"]
    # A run of 1,000+ characters without whitespace is one token: spaCy's
    # prefix stripping took minutes on 25,000 nested parentheses.
    nested = "(" * 25_000 + "x" + ")" * 25_000
    assert [len(t) for t in nlp.make_doc(f"in {nested} cases")] == [2, 50_001, 5]
