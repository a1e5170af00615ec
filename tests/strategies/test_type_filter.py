"""types / exclude_types: candidates kept or dropped by their concepts'
types, as MeSH's tree numbers and a scispaCy KB's semantic types give them."""
import pytest
import spacy
from helpers import doc_with_ents, make_nlp
from vocabulary_files import SCISPACY

# MeSH's ASCII descriptors: a chemical (tree D) whose name is nearer the
# mention "hemoglobin" than the disease's (tree C).
MESH_WITH_A_CHEMICAL = """\
*NEWRECORD
RECTYPE = D
MH = Hemoglobins
ENTRY = Hemoglobin
MN = D12.776.124.400
ST = T116
UI = D006454

*NEWRECORD
RECTYPE = D
MH = Hemoglobinopathies
ENTRY = Hemoglobin Diseases
MN = C15.378.071.141.150
MN = C16.320.365
ST = T047
UI = D006453

*NEWRECORD
RECTYPE = D
MH = Ovarian Neoplasms
ENTRY = Ovarian Cancer
MN = C04.588.322.455
ST = T191
UI = D010051
"""


@pytest.fixture
def mesh(tmp_path) -> dict:
    path = tmp_path / "d2026.bin"
    path.write_text(MESH_WITH_A_CHEMICAL, encoding="utf-8")
    return {"@readers": "spacy_biosyn.MeshVocabulary.v1", "path": str(path)}


def first_ids(nlp, text="Hemoglobin levels fell.", mention="Hemoglobin"):
    doc = nlp.get_pipe("biosyn_linker")(doc_with_ents(nlp, text, mention))
    span = doc.ents[0]
    return span._.cui, [cui for cui, _ in span._.kb_ents]


def test_mesh_tree_prefixes_keep_or_drop_concepts(tiny_encoder, mesh):
    assert first_ids(make_nlp(tiny_encoder, mesh))[0] == "D006454"  # the chemical, unfiltered
    for settings in ({"types": ["C"]}, {"exclude_types": ["D"]}, {"types": ["C15"]}, {"types": ["T047"]}):
        cui, kb_ents = first_ids(make_nlp(tiny_encoder, mesh, **settings))
        assert cui == "D006453", settings
        assert "D006454" not in kb_ents
    cui, kb_ents = first_ids(make_nlp(tiny_encoder, mesh, types=["C04"]))
    assert kb_ents == ["D010051"]  # only the neoplasm passes


def test_the_filter_is_an_editable_setting_saved_with_the_pipeline(tiny_encoder, mesh, tmp_path):
    nlp = make_nlp(tiny_encoder, mesh)
    linker = nlp.get_pipe("biosyn_linker")
    linker.exclude_types = ["D"]
    assert first_ids(nlp)[0] == "D006453"
    nlp.to_disk(tmp_path / "pipeline")
    loaded = spacy.load(tmp_path / "pipeline")
    assert loaded.get_pipe("biosyn_linker").exclude_types == ["D"]
    assert first_ids(loaded)[0] == "D006453"
    loaded.get_pipe("biosyn_linker").exclude_types = []
    assert first_ids(loaded)[0] == "D006454"


def test_a_scispacy_kbs_semantic_types_filter_its_concepts(tiny_encoder, tmp_path):
    kb = tmp_path / "kb.jsonl"
    kb.write_text(SCISPACY, encoding="utf-8")
    vocabulary = {"@readers": "spacy_biosyn.ScispacyKb.v1", "path": str(kb)}
    text, mention = "Breast cancer and diabetes mellitus.", "Breast cancer"
    assert first_ids(make_nlp(tiny_encoder, vocabulary), text, mention)[0] == "C0006142"
    cui, kb_ents = first_ids(make_nlp(tiny_encoder, vocabulary, types=["T047"]), text, mention)
    assert kb_ents == ["C0011849"]  # diseases only: the neoplasm (T191) is gone


def test_a_filter_on_a_vocabulary_without_types_is_refused_when_the_vocabulary_is_read(tiny_encoder, disease_dictionary):
    with pytest.raises(ValueError, match="biosyn_linker: types and exclude_types .* none of the vocabulary's concepts"):
        make_nlp(tiny_encoder, disease_dictionary, types=["C"])


@pytest.mark.parametrize("settings", [{"types": [""]}, {"types": "C"}, {"exclude_types": None}])
def test_a_bad_type_pattern_is_refused_when_the_pipe_is_made(tiny_encoder, disease_dictionary, settings):
    with pytest.raises(ValueError, match=f"biosyn_linker: {next(iter(settings))}"):
        make_nlp(tiny_encoder, disease_dictionary, **settings)
