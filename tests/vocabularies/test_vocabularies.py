"""Vocabulary readers on small files in each real format: names, concepts
with the primary ID first, filters, and errors naming file and line."""
from pathlib import Path

import pytest
from vocabulary_files import (
    CTD_CHEMICALS,
    CTD_TSV,
    MEDIC_PIPES,
    MESH_DESCRIPTORS_BIN,
    MESH_DESCRIPTORS_XML,
    MESH_SUPPLEMENTARY_BIN,
    MESH_SUPPLEMENTARY_XML,
    MONDO_OBO,
    MRCONSO,
    MRSTY,
    OBO,
    SCISPACY,
)

from spacy_biosyn import (
    BiosynError,
    DictionaryError,
    Entity,
    KnowledgeBase,
    detect_format,
    read_biosyn,
    read_ctd_chemicals,
    read_medic,
    read_mesh,
    read_obo,
    read_scispacy_kb,
    read_umls,
    read_vocabulary_file,
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def as_table(dictionary):
    return dict(zip(dictionary.names, dictionary.concepts))


def test_medic_as_biosyn_ships_it_orders_ids_and_keeps_shared_names_apart(tmp_path):
    d = as_table(read_medic(write(tmp_path, "medic.txt", MEDIC_PIPES)))
    assert d["breast cancer"] == d["mammary carcinoma human"] == (("D001943", "114480"),)
    assert d["hpp"] == (("145250",), ("C563004", "266140"))  # two diseases share the name
    assert len(d) == 7


def test_ctd_diseases_tsv_keeps_the_disease_id_first(tmp_path):
    d = as_table(read_medic(write(tmp_path, "CTD_diseases.tsv", CTD_TSV)))
    assert d["breast carcinoma"] == (("MESH:D001943", "DO:DOID:1612", "OMIM:114480"),)
    assert d["ovarian cancer"] == (("MESH:D010051",),)
    assert sorted(d) == [
        "breast cancer", "breast carcinoma", "breast neoplasms", "cancer of ovary",
        "mammary carcinoma human", "ovarian cancer", "ovarian neoplasms",
    ]


def test_umls_filters_language_and_suppression_and_keeps_source_codes(tmp_path):
    d = as_table(read_umls(write(tmp_path, "MRCONSO.RRF", MRCONSO)))
    assert d == {
        "breast neoplasms": (("C0006142", "MSH:D001943", "OMIM:114480"),),
        "breast cancer": (("C0006142", "MSH:D001943", "OMIM:114480"),),
        "diabetes mellitus": (("C0011849", "MSH:D003920"),),
    }
    only_cuis = as_table(read_umls(tmp_path / "MRCONSO.RRF", alt_id_sources=[], sources=["MSH"]))
    assert only_cuis["breast cancer"] == (("C0006142",),)


def test_umls_semantic_types_by_tui_or_name(tmp_path):
    mrconso, mrsty = write(tmp_path, "MRCONSO.RRF", MRCONSO), write(tmp_path, "MRSTY.RRF", MRSTY)
    by_tui = read_umls(mrconso, mrsty=mrsty, semantic_types=["T047"])
    by_name = read_umls(mrconso, mrsty=mrsty, semantic_types=["Neoplastic Process"])
    assert list(by_tui.names) == ["diabetes mellitus"]
    assert list(by_name.names) == ["breast neoplasms", "breast cancer"]
    # MRSTY alone keeps every concept and gives each its semantic types, which the type filters read.
    typed = read_umls(mrconso, mrsty=mrsty)
    assert {cui: typed.details[cui].types for cui in ("C0006142", "C0011849")} == {
        "C0006142": ("T191",), "C0011849": ("T047",)
    }
    assert read_umls(mrconso).details["C0006142"].types == ()
    with pytest.raises(ValueError, match="semantic_types needs mrsty"):
        read_umls(mrconso, semantic_types=["T047"])


def test_obo_terms_with_scoped_synonyms_alt_ids_and_xrefs(tmp_path):
    path = write(tmp_path, "mondo.obo", OBO)
    d = as_table(read_obo(path))
    concept = (("MONDO:0007254", "MONDO:0016419"),)
    assert d == {
        "breast cancer": concept,
        "breast carcinoma": concept,
        "cancer of breast": concept,
        "malignant neoplasm of the breast": concept,  # escaped quotes read, then normalized away
    }  # no BROAD synonym, no obsolete term, no [Typedef]
    exact_with_mesh = as_table(read_obo(path, synonym_scopes=["EXACT"], xref_prefixes=["MESH"]))
    assert "cancer of breast" not in exact_with_mesh
    assert exact_with_mesh["breast cancer"] == (("MONDO:0007254", "MONDO:0016419", "MESH:D001943"),)


def test_scispacy_kb_jsonl_with_a_type_filter(tmp_path):
    path = write(tmp_path, "umls_2022_ab_cat0129.jsonl", SCISPACY)
    d = as_table(read_scispacy_kb(path))
    assert d["breast cancer"] == d["malignant neoplasm of breast"] == (("C0006142",),)
    assert list(read_scispacy_kb(path, types=["T047"]).names) == ["diabetes mellitus"]


def test_biosyn_files_order_ids_by_the_preference(tmp_path):
    path = write(tmp_path, "d.txt", "114480|D001943||breast cancer\n613097|C567755|X1||tooth agenesis\n")
    assert as_table(read_biosyn(path)) == {
        "breast cancer": (("D001943", "114480"),),
        "tooth agenesis": (("C567755", "613097", "X1"),),  # unmatched IDs last, in file order
    }
    assert as_table(read_biosyn(path, preferred_ids=[r"\d+"]))["breast cancer"] == (("114480", "D001943"),)


@pytest.mark.parametrize(
    "reader, name, content, line, what",
    [
        (read_medic, "medic.txt", "D1||Gout\nD2 Gouty Arthritis\n", 2, "expected 'ID|ID||Name|Synonym|...'"),
        (read_medic, "medic.txt", "D1||Gout\n|D2||Arthritis\n", 2, "expected 'ID|ID||Name|Synonym|...'"),
        (read_medic, "CTD_diseases.tsv", "# c\nGout\tMESH:D006073\t\t\t\t\t\tGouty\t\nArthritis\tMESH:D001168\n", 3, "DiseaseID"),
        (read_umls, "MRCONSO.RRF", MRCONSO + "C0000001|ENG|P|Breast|0|N|\n", 7, "expected MRCONSO.RRF's 18"),
        (read_obo, "x.obo", "[Term]\nid: X:1\nname: gout\nsynonym: gouty arthritis EXACT []\n", 4, "synonym"),
        (read_obo, "x.obo", "[Term]\nname: gout\n", 1, "without an id"),
        (read_obo, "x.obo", "[Term]\nid: X:1\nnot a tag line\n", 3, "expected 'tag: value'"),
        (read_scispacy_kb, "kb.jsonl", SCISPACY + '{"canonical_name": "gout"}\n', 3, "concept_id"),
        (read_scispacy_kb, "kb.jsonl", "{not json\n", 1, "concept_id"),
        (read_scispacy_kb, "kb.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", 1, "concept_id"),  # nested too deep
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": "C1", "canonical_name": 7, "aliases": []}\n', 1, "string 'canonical_name'"),
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": "C1", "canonical_name": "gout", "aliases": [null]}\n', 1, "string 'aliases'"),
        (read_biosyn, "d.txt", "D1||gout\n" + MEDIC_PIPES, 3, "MedicVocabulary"),
        # IDs with whitespace or a separator inside: one concept of two IDs, or two concepts, read silently before
        (read_biosyn, "d.txt", "D1||gout\nD 2||arthritis\n", 2, "'D 2' is not an ID"),
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": "C001|C002", "canonical_name": "gout"}\n', 1, "'C001|C002' is not an ID"),
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": "C005||C006", "canonical_name": "gout"}\n', 1, "is not an ID"),
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": " ", "canonical_name": "gout"}\n', 1, "' ' is not an ID"),
        # a newline in an ID initialized and saved, and the saved pipeline could not load
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": "C1\\nC2", "canonical_name": "gout"}\n', 1, "is not an ID"),
        (read_scispacy_kb, "kb.jsonl", '{"concept_id": "C1", "canonical_name": "gout", "types": "T047"}\n', 1, "string 'types'"),
        (read_obo, "x.obo", "[Term]\nid: MONDO:1|MESH:D2\nname: gout\n", 2, "'MONDO:1|MESH:D2' is not an ID"),
        (read_medic, "CTD_diseases.tsv", "Gout\tMESH:D006073\tOMIM:1 38\t\t\t\t\tGouty\t\n", 1, "'OMIM:1 38' is not an ID"),
        (read_umls, "MRCONSO.RRF", "C00 01|ENG|P|L1|PF|S1|Y|A1||||MSH|PT|D1|Gout|0|N||\n", 1, "'C00 01' is not an ID"),
        # files of another format: a BioSyn .concept file given as MEDIC
        (read_medic, "8589722.concept", "8589722||117|152||CompositeMention||breast and ovarian cancer||D061325\n", 1,
         "expected 'ID|ID||Name|Synonym|...'"),
    ],
)
def test_a_line_that_does_not_fit_names_file_and_line(tmp_path, reader, name, content, line, what):
    path = write(tmp_path, name, content)
    with pytest.raises(DictionaryError) as error:
        reader(path)
    assert f"{path}, line {line}" in str(error.value) and what in str(error.value)


@pytest.mark.parametrize(
    "reader, content",
    [(read_medic, "# only a comment\n"), (read_obo, "format-version: 1.2\n"), (read_scispacy_kb, "\n")],
)
def test_a_vocabulary_without_names_is_an_error(tmp_path, reader, content):
    path = write(tmp_path, "empty", content)
    with pytest.raises(DictionaryError, match=f"{path}: the vocabulary has no names"):
        reader(path)



def test_ctds_diseases_file_reads_as_it_comes_gzip_compressed(tmp_path):
    import gzip

    tsv = "# CTD\nGout\tMESH:D006073\t\t\t\t\t\tGouty arthritis|Podagra\t\n"
    (tmp_path / "CTD_diseases.tsv").write_text(tsv)
    (tmp_path / "CTD_diseases.tsv.gz").write_bytes(gzip.compress(tsv.encode("utf-8")))
    assert as_table(read_medic(tmp_path / "CTD_diseases.tsv.gz")) == as_table(read_medic(tmp_path / "CTD_diseases.tsv"))


def test_the_knowledge_base_says_what_a_medic_id_means(tmp_path):
    kb = KnowledgeBase(read_medic(write(tmp_path, "medic.txt", MEDIC_PIPES)))
    # scispaCy's fields in scispaCy's order, the name as MEDIC writes it, then every ID
    breast = Entity("D001943", "Breast Neoplasms", ("breast cancer", "mammary carcinoma human"), (), None, ("D001943", "114480"))
    # Any ID of the concept finds it, with or without a namespace.
    assert kb.cui_to_entity["D001943"] == kb.cui_to_entity["114480"] == kb.cui_to_entity["MESH:D001943"] == breast
    assert kb.cui_to_entity["C563004"] == Entity("C563004", "Hypophosphatasia, Infantile", ("hpp",), (), None, ("C563004", "266140"))
    assert kb.alias_to_cuis["hpp"] == {"145250", "C563004"}
    assert sorted(kb.cui_to_entity) == ["145250", "C563004", "C565588", "D001943"]
    with pytest.raises(KeyError):
        kb.cui_to_entity["D999999"]


def test_the_knowledge_base_of_the_whole_of_medic(shared_data):
    kb = KnowledgeBase(read_medic(shared_data / "resources" / "medic_06Jul2012.txt"))
    assert kb.cui_to_entity["D005955"].canonical_name == "Glucosephosphate Dehydrogenase Deficiency"
    # A MeSH concept that MEDIC also lists under OMIM: one entity, MeSH first.
    tooth = kb.cui_to_entity["613097"]
    assert (tooth.concept_id, tooth.ids, tooth.aliases) == ("C567755", ("C567755", "613097"), ("sthag6",))
    assert len(kb.cui_to_entity) > 11000


def test_a_spelling_corrections_file_is_no_dictionary(tmp_path):
    path = write(tmp_path, "ncbi-spell-check.txt", "sitosterolemia||sitosterolaemia\nadenomatous||adenomatus\n")
    with pytest.raises(DictionaryError, match=f"{path}: no ID in the file holds a digit.*corrections"):
        read_biosyn(path)


def test_one_type_given_as_a_string_is_one_type_not_its_characters(tmp_path):
    path = write(tmp_path, "kb.jsonl", SCISPACY)
    assert list(read_scispacy_kb(path, types="T047").names) == list(read_scispacy_kb(path, types=["T047"]).names)


def test_a_dictionary_built_in_python_refuses_an_id_it_could_not_save_and_load():
    from spacy_biosyn.kb.dictionary import Dictionary

    with pytest.raises(DictionaryError, match="'C1\\\\nC2' is not an ID"):
        Dictionary.from_entries([(("C1\nC2",), "gout")])


@pytest.mark.parametrize("name, content, format", [
    ("d2025.bin", MESH_DESCRIPTORS_BIN, "mesh"),
    ("desc2025.xml", MESH_DESCRIPTORS_XML, "mesh"),
    ("c2025.bin.gz", MESH_SUPPLEMENTARY_BIN, "mesh"),
    ("CTD_chemicals.tsv.gz", CTD_CHEMICALS, "ctd-chemicals"),
    ("mondo.obo", MONDO_OBO, "obo"),
    ("CTD_diseases.tsv", CTD_TSV, "medic"),
    ("medic_06Jul2012.txt", MEDIC_PIPES, "medic"),
    ("MRCONSO.RRF", MRCONSO, "umls"),
    ("kb.jsonl", SCISPACY, "scispacy"),
    ("train_dictionary.txt", "D001943||breast cancer\n", "biosyn"),
])
def test_each_format_is_detected_and_read(tmp_path, name, content, format):
    import gzip

    path = tmp_path / name
    path.write_bytes(gzip.compress(content.encode("utf-8")) if name.endswith(".gz") else content.encode("utf-8"))
    assert detect_format(path) == format
    dictionary, read_as = read_vocabulary_file(path)
    assert read_as == format and len(dictionary)


def test_mesh_keeps_names_as_written_types_and_scope_notes(tmp_path):
    for name, content in (("d2025.bin", MESH_DESCRIPTORS_BIN), ("desc2025.xml", MESH_DESCRIPTORS_XML)):
        kb = KnowledgeBase(read_mesh(write(tmp_path, name, content)))
        breast = kb.cui_to_entity["D001943"]
        assert (breast.canonical_name, breast.definition) == ("Breast Neoplasms", "Tumors or cancer of the human BREAST.")
        assert {"C04.588.180", "C17.800.090.500"} <= set(breast.types)
        assert "breast cancer" in breast.aliases
    bin_kb = KnowledgeBase(read_mesh(write(tmp_path, "d.bin", MESH_DESCRIPTORS_BIN)))
    assert bin_kb.cui_to_entity["D001943"].types[0] == "T191"  # the semantic type first
    assert set(bin_kb.cui_to_entity["D001943"].aliases) == {"breast cancer", "mammary carcinoma human", "tumors breast"}
    tooth = KnowledgeBase(read_mesh(write(tmp_path, "c.bin", MESH_SUPPLEMENTARY_BIN))).cui_to_entity["C567755"]
    # HM names the descriptor it maps to: read without the descriptors, the reference stays
    assert (tooth.canonical_name, tooth.aliases, tooth.types) == (
        "tooth agenesis, selective, 6", ("sthag6",), ("T019", "mapped:Anodontia"))
    assert tooth.definition == "autosomal dominant; OMIM 613097"


def test_ctd_chemicals_and_obo_keep_their_definitions_and_types(tmp_path):
    doxorubicin = KnowledgeBase(read_ctd_chemicals(write(tmp_path, "CTD_chemicals.tsv", CTD_CHEMICALS))).cui_to_entity["MESH:D004317"]
    assert doxorubicin.concept_id == "MESH:D004317" and doxorubicin.canonical_name == "Doxorubicin"
    assert doxorubicin.types == ("D02.455.326.271.665.202.495.500", "D04.615.638.325")
    assert doxorubicin.definition.startswith("Antineoplastic antibiotic") and "adriamycin" in doxorubicin.aliases
    breast = KnowledgeBase(read_obo(write(tmp_path, "mondo.obo", MONDO_OBO))).cui_to_entity["MONDO:0007254"]
    assert breast.types == ("disease_and_phenotype",)
    assert breast.definition == "A primary or metastatic malignant neoplasm involving the breast."


def test_a_vocabulary_named_by_url_is_fetched_once_into_the_cache(tmp_path, monkeypatch):
    import functools
    import http.server
    import threading

    served = tmp_path / "served"
    served.mkdir()
    write(served, "CTD_chemicals.tsv", CTD_CHEMICALS)
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            requests.append(self.path)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    url = f"http://127.0.0.1:{server.server_address[1]}/CTD_chemicals.tsv"
    try:
        first, format = read_vocabulary_file(url)
        second = read_ctd_chemicals(url)
    finally:
        server.shutdown()
    assert format == "ctd-chemicals" and list(first.names) == list(second.names) and "doxorubicin" in first
    assert requests == ["/CTD_chemicals.tsv"]  # the second read came from the cache
    cached = sorted(p.name for p in (tmp_path / "cache" / "downloads").iterdir() if not p.name.endswith(".lock"))
    assert [name.split("-", 1)[1] for name in cached] == ["CTD_chemicals.tsv", "CTD_chemicals.tsv.json"]


# Formats told by content, duplicates said, comments and BOMs as the formats mean them

def test_ctds_chemicals_are_told_from_medic_by_their_header_whatever_the_files_name(tmp_path):
    path = write(tmp_path, "vocabulary.tsv", CTD_CHEMICALS)
    assert detect_format(path) == "ctd-chemicals"
    dictionary, _ = read_vocabulary_file(path)
    assert dictionary.concepts[dictionary.row("adriamycin")] == (("MESH:D004317",),)  # no CAS number as an ID
    with pytest.raises(DictionaryError, match="is CTD's chemical vocabulary .* read it as ctd-chemicals"):
        read_vocabulary_file(path, "medic")
    with pytest.raises(DictionaryError, match="is CTD's disease vocabulary, MEDIC .* read it as medic"):
        read_vocabulary_file(write(tmp_path, "CTD_chemicals.tsv", CTD_TSV), "ctd-chemicals")


def test_a_ctd_file_read_as_the_other_names_the_format_and_the_reader_the_format_table_gives_it(tmp_path):
    import re

    from spacy_biosyn.vocabularies.formats import READERS

    chemicals, diseases = write(tmp_path, "a.tsv", CTD_CHEMICALS), write(tmp_path, "b.tsv", CTD_TSV)
    for path, wrong, right in ((chemicals, "medic", "ctd-chemicals"), (diseases, "ctd-chemicals", "medic")):
        with pytest.raises(DictionaryError, match=re.escape(f"read it as {right} (--format {right}, {READERS[right].reader})")):
            READERS[wrong].read(path)


def test_a_file_whose_name_holds_two_formats_names_is_the_later_formats(tmp_path):
    # MEDIC's concepts as UMLS rows: "medic" names a MEDIC file, "mrconso" a UMLS one.
    assert detect_format(write(tmp_path, "medic_MRCONSO.RRF", MRCONSO)) == "umls"
    assert detect_format(write(tmp_path, "medic_ctd_chemicals.tsv", "C1||aspirin\n")) == "ctd-chemicals"


def test_a_biosyn_file_whose_first_name_holds_a_tab_is_read_as_biosyn(tmp_path):
    path = write(tmp_path, "dictionary.txt", "D001943||breast\tcancer\nD010051||ovarian cancer\n")
    assert detect_format(path) == "biosyn"
    assert len(read_vocabulary_file(path)[0]) == 2


@pytest.mark.parametrize("name, content", [
    ("CTD_diseases.tsv", CTD_TSV + CTD_TSV.splitlines()[4].replace("Breast Neoplasms\t", "Mammary Neoplasms\t") + "\n"),
    ("kb.jsonl", SCISPACY + SCISPACY.splitlines()[0].replace("Malignant neoplasm of breast", "Breast tumour") + "\n"),
    ("mondo.obo", MONDO_OBO + "\n[Term]\nid: MONDO:0007254\nname: mammary cancer\n"),
])
def test_an_id_heading_two_records_is_one_concept_with_every_name_and_a_warning(tmp_path, name, content):
    with pytest.warns(UserWarning, match=r"1 ID\(s\) head more than one record \((MESH:D001943|C0006142|MONDO:0007254) \(2x\)"):
        dictionary, _ = read_vocabulary_file(write(tmp_path, name, content))
    kb = KnowledgeBase(dictionary)
    cui, canonical, merged = {"CTD_diseases.tsv": ("MESH:D001943", "Breast Neoplasms", "mammary neoplasms"),
                    "kb.jsonl": ("C0006142", "Malignant neoplasm of breast", "breast tumour"),
                    "mondo.obo": ("MONDO:0007254", "breast cancer", "mammary cancer")}[name]
    assert kb.cui_to_entity[cui].canonical_name == canonical and merged in kb.cui_to_entity[cui].aliases


def test_an_id_written_twice_in_one_concept_is_one_id(tmp_path):
    dictionary = read_medic(write(tmp_path, "medic.txt", "D000001|D000001|114480||Calcimycin\n"))
    assert dictionary.concepts[0] == (("D000001", "114480"),)


def test_an_obo_names_trailing_comment_is_no_part_of_it(tmp_path):
    dictionary = read_obo(write(tmp_path, "x.obo", "[Term]\nid: MONDO:0007254\nname: breast cancer ! a comment\n"))
    assert list(dictionary.names) == ["breast cancer"]


@pytest.mark.parametrize("name, content", [("d2025.bin", MESH_DESCRIPTORS_BIN), ("desc2025.xml", MESH_DESCRIPTORS_XML)])
def test_mesh_files_with_a_byte_order_mark_are_read(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + content.encode("utf-8"))
    assert "breast neoplasms" in read_mesh(path)


@pytest.mark.parametrize("name, content", [("d2025.bin.gz", MESH_DESCRIPTORS_BIN), ("desc2025.xml.gz", MESH_DESCRIPTORS_XML)])
def test_a_mesh_gz_cut_short_is_named(tmp_path, name, content):
    import gzip

    whole = gzip.compress(content.encode("utf-8") * 20)
    (tmp_path / name).write_bytes(whole[: len(whole) // 2])
    with pytest.raises(BiosynError, match=f"{name}: cannot be read, cut short"):
        read_mesh(tmp_path / name)


def test_a_folder_given_to_a_reader_is_named_in_one_line(tmp_path):
    with pytest.raises(BiosynError, match=f"{tmp_path} is a folder; give the vocabulary or corpus file in it"):
        read_medic(tmp_path)


def test_mesh_supplementary_concepts_take_the_tree_numbers_of_the_descriptors_they_map_to(tmp_path):
    from spacy_biosyn.vocabularies.mesh import read_mesh, with_mapped_tree_numbers

    supplementary = MESH_SUPPLEMENTARY_XML.replace(
        "  <Note>", "  <HeadingMappedToList><HeadingMappedTo><DescriptorReferredTo><DescriptorUI>*D001943</DescriptorUI>"
        "</DescriptorReferredTo></HeadingMappedTo></HeadingMappedToList>\n  <Note>")
    (tmp_path / "desc.xml").write_text(MESH_DESCRIPTORS_XML)
    (tmp_path / "supp.xml").write_text(supplementary)
    alone = read_mesh(tmp_path / "supp.xml").details["C567755"]
    assert alone.types == ("mapped:D001943",)  # its descriptors unread: the reference stays
    details = {**read_mesh(tmp_path / "desc.xml").details, **read_mesh(tmp_path / "supp.xml").details}
    assert with_mapped_tree_numbers(details)["C567755"].types == ("C04.588.180", "C17.800.090.500")
