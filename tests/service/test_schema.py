"""The service's Entity model is the row every output writes (linking/rows.py):
the same fields in the same order, and every kind of row valid under it."""
import pytest

pytest.importorskip("fastapi", reason="the serve extra is not installed")
from spacy_biosyn.linking.engine import LinkingEngine
from spacy_biosyn.linking.rows import ROW_FIELDS, mention_rows
from spacy_biosyn.service.schema import Entity


def test_the_entity_model_is_the_row_that_link_json_and_link_corpus_write(served_pipeline):
    assert tuple(Entity.model_fields) == ROW_FIELDS
    engine = LinkingEngine.from_disk(served_pipeline / "biosyn_linker")
    # linked, a composite, NIL below the threshold with its best concept, and everyday English
    rows = mention_rows(engine, ["breast cancer", "breast and ovarian cancer", "unknown syndrome", "the"])
    assert [row["nil_reason"] for row in rows] == [None, None, "below_threshold", "everyday_english"]
    assert rows[2]["nil_best"] is not None and rows[1]["id"] == "MESH:D001943|MESH:D010051"
    for row in rows:
        assert Entity.model_validate({field: row[field] for field in ROW_FIELDS}).model_dump() == {
            field: row[field] for field in ROW_FIELDS}
