"""Mention strings as rows (linking/rows.py), read as a span over all of a
mention's tokens reads it, as `link --mentions` and /link/mentions have
always given them."""
from spacy_biosyn.linking.rows import rows_per_mention


def test_each_mention_is_a_row_as_its_span_reads_it_and_an_empty_one_is_none(nlp):
    rows = rows_per_mention(nlp.get_pipe("biosyn_linker").engine, ["", " ", "breast cancer ", "huntington chorea  ", " huntington chorea"])
    assert [len(r) for r in rows] == [0, 1, 1, 1, 1]
    # one space after the last word is that word's trailing whitespace; other whitespace is text
    assert [(r[0]["text"], r[0]["start"], r[0]["end"]) for r in rows[1:]] == [
        (" ", 0, 1), ("breast cancer", 0, 13), ("huntington chorea  ", 0, 19), (" huntington chorea", 0, 18)]
    assert rows[1][0]["id"] is None and rows[1][0]["nil_reason"] == "everyday_english"
    assert [r[0]["id"] for r in rows[2:]] == ["D001943", "D006816", "D006816"]
    assert {(r[0]["file"], r[0]["doc_id"]) for r in rows[1:]} == {("", "mention")}
