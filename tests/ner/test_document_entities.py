"""biosyn_document_entities on hand-made docs: a mention split at an
abbreviation's parenthesis joined again, short and long forms that follow
each other, strings recognized once recognized everywhere; nothing the NER
found is dropped, and nothing added overlaps it."""
import pytest
import spacy


@pytest.fixture(scope="module")
def document_nlp():
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_document_entities")
    return nlp


def entities(nlp, text, *mentions, label="Disease", **settings):
    """The component's entities for `text` whose NER found `mentions` (each
    the first occurrence of the string, or (string, n) for the n-th)."""
    component = nlp.get_pipe("biosyn_document_entities")
    saved = {key: getattr(component, key) for key in settings}
    doc = nlp.make_doc(text)
    spans = []
    for mention in mentions:
        mention, n = mention if isinstance(mention, tuple) else (mention, 0)
        start = -1
        for _ in range(n + 1):
            start = text.index(mention, start + 1)
        spans.append(doc.char_span(start, start + len(mention), label=label))
    doc.ents = spans
    for key, value in settings.items():
        setattr(component, key, value)
    try:
        return [(e.text, e.label_) for e in component(doc).ents]
    finally:
        for key, value in saved.items():
            setattr(component, key, value)


G6PD = "Glucose-6-phosphate dehydrogenase (G6PD) deficiency causes hemolysis."


def test_a_mention_split_at_its_abbreviations_parenthesis_is_joined_again(document_nlp):
    whole = [("Glucose-6-phosphate dehydrogenase (G6PD) deficiency", "Disease")]
    assert entities(document_nlp, G6PD, "Glucose-6-phosphate dehydrogenase", "deficiency", propagate=False) == whole
    # the short form's own entity inside the parentheses joins them
    assert entities(document_nlp, G6PD, "Glucose-6-phosphate dehydrogenase", "G6PD", "deficiency", propagate=False) == whole
    # an entity that begins at the short form and runs past its parenthesis, as the README abstract's NER finds it
    assert entities(document_nlp, G6PD, "Glucose-6-phosphate dehydrogenase", "G6PD) deficiency", propagate=False) == whole
    # ... and alone, it opens where the long form does
    assert entities(document_nlp, G6PD, "G6PD) deficiency", propagate=False) == whole
    # parts of two labels are not joined
    doc = document_nlp.make_doc(G6PD)
    doc.ents = [doc.char_span(0, 33, label="Gene"), doc.char_span(41, 51, label="Disease")]
    assert [e.text for e in document_nlp.get_pipe("biosyn_document_entities")(doc).ents] == [
        "Glucose-6-phosphate dehydrogenase", "G6PD", "deficiency"
    ]


def test_a_short_form_follows_its_long_forms_decision(document_nlp):
    text = "Spinal muscular atrophy (SMA) is inherited. Carriers of SMA are healthy."
    found = [("Spinal muscular atrophy", "Disease"), ("SMA", "Disease"), ("SMA", "Disease")]
    assert entities(document_nlp, text, "Spinal muscular atrophy", propagate=False) == found
    # the long form is no entity: neither is its short form
    text = "Heteroduplex (HD) analysis found the mutation; HD bands were faint."
    assert entities(document_nlp, text, "HD", ("HD", 1)) == []


def test_a_string_found_at_half_its_occurrences_is_found_at_all(document_nlp):
    text = "Gout is painful. Patients with gout, and gouty arthritis, avoid purines; gout recurs."
    # "Gout" and "gout" are one string; "gouty" is another word
    assert entities(document_nlp, text, "Gout", "gout") == [("Gout", "Disease"), ("gout", "Disease"), ("gout", "Disease")]
    assert entities(document_nlp, text, "gout") == [("gout", "Disease")]  # found at 1 of 3: a gene's or the NER's slip
    # inside a longer entity counts as found; two letters spread nowhere
    assert entities(document_nlp, "Gout and familial gout; gout.", "Gout", "familial gout") == [
        ("Gout", "Disease"), ("familial gout", "Disease"), ("gout", "Disease")
    ]
    assert entities(document_nlp, "AS and as: AS.", "AS") == [("AS", "Disease")]


def test_nothing_added_overlaps_what_the_ner_found(document_nlp):
    text = "Breast cancer (BC) and BC-like breast cancer; breast cancer again."
    assert entities(document_nlp, text, "Breast cancer", "BC-like breast cancer") == [
        ("Breast cancer", "Disease"), ("BC", "Disease"), ("BC-like breast cancer", "Disease"), ("breast cancer", "Disease")
    ]
    assert entities(document_nlp, "No disease here.") == []


def test_each_step_can_be_turned_off_and_a_bad_setting_is_named():
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_document_entities", config={"rejoin": False, "pair_abbreviations": False, "abbreviations": None})
    doc = nlp.make_doc(G6PD)
    doc.ents = [doc.char_span(0, 33, label="Disease"), doc.char_span(41, 51, label="Disease")]
    assert len(nlp.get_pipe("biosyn_document_entities")(doc).ents) == 2
    with pytest.raises(ValueError, match="rejoin and pair_abbreviations need an abbreviation detector"):
        spacy.blank("en").add_pipe("biosyn_document_entities", config={"abbreviations": None})
    with pytest.raises(ValueError, match="propagate.*'yes' is not"):
        spacy.blank("en").add_pipe("biosyn_document_entities", config={"propagate": "yes"})


def test_abbreviations_are_found_once_per_doc_and_read_by_the_linker(tiny_encoder, disease_dictionary, monkeypatch):
    from helpers import make_nlp
    from spacy_biosyn.preprocess.abbreviations import Ab3PDetector

    texts = []
    run = Ab3PDetector.__call__
    monkeypatch.setattr(Ab3PDetector, "__call__", lambda self, text: texts.append(text) or run(self, text))
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    ruler = nlp.add_pipe("entity_ruler", first=True)
    ruler.add_patterns([{"label": "Disease", "pattern": [{"LOWER": "huntington"}, {"LOWER": "disease"}]},
                        {"label": "Disease", "pattern": "HD"}])
    nlp.add_pipe("biosyn_document_entities", after="entity_ruler")
    text = "Huntington disease (HD) is inherited. HD affects movement."
    doc = nlp(text)
    assert texts == [text]  # the linker read the pairs the document step found
    assert [(e.text, e._.cui) for e in doc.ents] == [("Huntington disease", "D006816"), ("HD", "D006816"), ("HD", "D006816")]
    assert [(a.short_form, a.long_form) for a in doc._.biosyn_abbreviations] == [("HD", "Huntington disease")]
