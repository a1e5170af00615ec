"""The configs under configs/ assemble with `spacy assemble` as their pages
say (docs/config-readers.md, docs/scispacy-ner.md), on stand-ins built here:
a CTD diseases file in CTD's layout, and a saved NER pipeline in the place
of scispaCy's en_ner_bc5cdr_md."""
import subprocess
import sys
from pathlib import Path

import spacy

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
CTD_DISEASES = """\
# Fields:
# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings
Breast Neoplasms\tMESH:D001943\tOMIM:114480\tTumors or cancer of the human BREAST.\t\tC04.588.180\t\tBreast Cancer|Mammary Carcinoma, Human\t
Ovarian Neoplasms\tMESH:D010051\t\tTumors or cancer of the OVARY.\t\tC04.588.322.455\t\tOvarian Cancer\t
Gout\tMESH:D006073\t\t\t\t\t\tGouty Arthritis\t
"""


def assemble(config: str, output: Path, *overrides: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "spacy", "assemble", str(CONFIGS / config), str(output), *overrides],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def linked(nlp, text, mention, label):
    doc = nlp.make_doc(text)
    start = text.index(mention)
    doc.ents = [doc.char_span(start, start + len(mention), label=label)]
    return [(e.text, e._.cui) for e in nlp.get_pipe("biosyn_linker")(doc).ents]


def test_the_linker_config_reads_its_vocabulary_with_a_registered_reader(tmp_path, tiny_encoder):
    (tmp_path / "CTD_diseases.tsv").write_text(CTD_DISEASES)
    assemble("linker.cfg", tmp_path / "linker", "--paths.vocabulary", str(tmp_path / "CTD_diseases.tsv"),
             "--components.biosyn_linker.encoder.name", tiny_encoder, "--components.biosyn_linker.sparse_weight", "10")
    (tmp_path / "CTD_diseases.tsv").unlink()  # the pipeline holds the names, and reads no path on loading
    nlp = spacy.load(tmp_path / "linker")
    assert linked(nlp, "Carriers of BRCA1 get breast cancer.", "breast cancer", "Disease") == [("breast cancer", "MESH:D001943")]
    assert nlp.get_pipe("biosyn_linker").kb.cui_to_entity["MESH:D001943"].definition == "Tumors or cancer of the human BREAST."


def test_the_scispacy_ner_config_puts_the_ner_its_tokenizer_and_the_linker_in_one_pipeline(tmp_path, tiny_encoder):
    stand_in = spacy.blank("en")  # en_ner_bc5cdr_md's components, named as there
    stand_in.add_pipe("tok2vec")
    stand_in.add_pipe("ner").add_label("DISEASE")
    stand_in.tokenizer.add_special_case("BRCA1carriers", [{"ORTH": "BRCA1"}, {"ORTH": "carriers"}])
    stand_in.initialize()
    stand_in.to_disk(tmp_path / "ner")
    (tmp_path / "CTD_diseases.tsv").write_text(CTD_DISEASES)
    assemble("scispacy-ner.cfg", tmp_path / "text", "--paths.ner", str(tmp_path / "ner"),
             "--paths.vocabulary", str(tmp_path / "CTD_diseases.tsv"),
             "--components.biosyn_linker.encoder.name", tiny_encoder, "--components.biosyn_linker.sparse_weight", "10")
    nlp = spacy.load(tmp_path / "text")
    assert nlp.pipe_names == ["tok2vec", "ner", "biosyn_linker"]
    assert [t.text for t in nlp.make_doc("BRCA1carriers")] == ["BRCA1", "carriers"]  # the NER's own tokenizer
    assert linked(nlp, "Breast cancer and gout.", "Breast cancer", "DISEASE") == [("Breast cancer", "MESH:D001943")]
    assert linked(nlp, "Tamoxifen and gout.", "Tamoxifen", "CHEMICAL") == [("Tamoxifen", None)]  # no route: unlinked
    nlp("Breast cancer and gout in BRCA1carriers.")  # the whole pipeline runs on raw text
