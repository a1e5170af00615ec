"""The tie rule: the concepts that share a mention's best name, ordered by
the document, then the annotated corpus, then their own other names, then
the vocabulary; and the tie as a span shows it."""
from spacy_biosyn.linking.choice import (BY_ANNOTATED_CORPUS, BY_DOCUMENT, BY_OWN_NAMES, BY_VOCABULARY_ORDER,
                                         chosen_in_document)
from spacy_biosyn.linking.links import NilRule, Tie, span_links
from spacy_biosyn.ty import Candidate, LinkedPart

# "SBMA" expanded: MEDIC lists the long form under the broad MeSH heading
# "Muscular Disorders, Atrophic" (D020966) and under Kennedy disease (C537017).
SHARED = Candidate("spinal and bulbar muscular atrophy", (("D020966",), ("C537017", "313200")), 1.0)
KENNEDY = Candidate("kennedy spinal and bulbar muscular atrophy", (("C537017", "313200"),), 0.944)
HEADING = Candidate("spinobulbar muscular atrophy", (("D020966",),), 0.90)
SBMA = [[LinkedPart("spinal and bulbar muscular atrophy", [SHARED, KENNEDY, HEADING])]]


def first_ids(chosen) -> list:
    return [c.parts[0].candidates[0].concepts[0][0] for c in chosen if c is not None]


def test_the_concept_whose_own_names_rank_nearer_wins_over_a_heading_that_lists_the_name():
    (chosen,) = chosen_in_document([SBMA], True, {})
    assert chosen.parts[0].candidates[0].concepts[0] == ("C537017", "313200") and chosen.tie_rules == [BY_OWN_NAMES]
    links = span_links(chosen.parts, 5, NilRule(), None, chosen.tie_rules)
    assert links.cui == "C537017" and links.ties == (Tie(("C537017", "D020966"), BY_OWN_NAMES),)
    assert [cui for cui, _ in links.kb_ents][:2] == ["C537017", "D020966"]


def test_the_document_and_then_the_annotated_corpus_come_before_the_names():
    heading_named = [[LinkedPart("muscular disorders atrophic", [Candidate("muscular disorders atrophic", (("D020966",),), 1.0)])]]
    chosen = chosen_in_document([SBMA, heading_named], True, {})
    assert first_ids(chosen)[0] == "D020966" and chosen[0].tie_rules == [BY_DOCUMENT]
    (chosen,) = chosen_in_document([SBMA], True, {"D020966": 3})
    assert first_ids([chosen]) == ["D020966"] and chosen.tie_rules == [BY_ANNOTATED_CORPUS]


def test_nothing_telling_them_apart_keeps_the_vocabulary_order_and_says_so():
    dm = Candidate("dm", (("D003920",), ("D009223",)), 1.0)
    (chosen,) = chosen_in_document([[[LinkedPart("dm", [dm])]]], True, {})
    assert first_ids([chosen]) == ["D003920"] and chosen.tie_rules == [BY_VOCABULARY_ORDER]
    (unresolved,) = chosen_in_document([SBMA], False, {})  # resolve_shared_names off: the vocabulary's order
    assert first_ids([unresolved]) == ["D020966"] and unresolved.tie_rules == [BY_VOCABULARY_ORDER]


def test_a_name_of_one_concept_has_no_tie_and_a_nil_span_shows_none():
    gout = [[LinkedPart("gout", [Candidate("gout", (("D006073",),), 1.0)])]]
    (chosen,) = chosen_in_document([gout], True, {})
    assert chosen.tie_rules == [None] and span_links(chosen.parts, 5, NilRule(), None, chosen.tie_rules).ties == ()
    (chosen,) = chosen_in_document([SBMA], True, {})
    assert span_links(chosen.parts, 5, NilRule(threshold=1.5), None, chosen.tie_rules).ties == ()


def test_one_concept_of_a_heading_and_its_supplementary_concept_is_named_by_the_id_whose_names_rank_nearer():
    # BioSyn's MEDIC dictionary gives the long form one concept of three IDs, the heading's first
    merged = Candidate("spinal and bulbar muscular atrophy", (("D020966", "C537017", "313200"),), 1.0)
    later = Candidate("muscular disorders atrophic", (("D020966", "C537017", "313200"),), 0.7)
    part = [[LinkedPart("spinal and bulbar muscular atrophy", [merged, KENNEDY, HEADING, later])]]
    (chosen,) = chosen_in_document([part], True, {})
    links = span_links(chosen.parts, 5, NilRule(), None, chosen.tie_rules)
    # the ID's own names lead, the concept is still one, listed once in kb_ents, and no tie is claimed
    assert links.cui == "C537017" and links.concept_ids == [("C537017", "D020966", "313200")]
    assert [cui for cui, _ in links.kb_ents].count("C537017") == 1 and "D020966" in dict(links.kb_ents)
    assert links.ties == ()
    # where the annotated corpus used one of its IDs, its prior stands
    (prior,) = chosen_in_document([part], True, {"D020966": 1})
    assert span_links(prior.parts, 5, NilRule(), None, prior.tie_rules).cui == "D020966"
