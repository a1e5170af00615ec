"""tune-nil --gold-spans: the NIL threshold chosen on annotated mentions by
the linker's engine alone, in a process where spaCy cannot be imported, and
saved so that spaCy's load and the engine's both read it."""
import os
import subprocess
import sys

import spacy
from helpers import hiding, make_nlp
from spacy.util import load_config
from typer.testing import CliRunner

from spacy_biosyn.cli import app
from spacy_biosyn.pipeline.saved_engine import open_saved_engine

# "xyzzy fever" names a concept the vocabulary lacks (D999999): linked, it is a false link.
DEV = "".join(
    f"{pmid}|t|Breast cancer and ovarian cancer in carriers\n{pmid}|a|Also xyzzy fever.\n"
    f"{pmid}\t0\t13\tBreast cancer\tSpecificDisease\tD001943\n"
    f"{pmid}\t18\t32\tovarian cancer\tSpecificDisease\tD010051\n"
    f"{pmid}\t50\t61\txyzzy fever\tSpecificDisease\tD999999\n\n"
    for pmid in range(1, 6)
)


def test_a_threshold_chosen_on_gold_spans_without_spacy_leaves_the_absent_concept_nil(tmp_path, tiny_encoder,
                                                                                      disease_dictionary):
    make_nlp(tiny_encoder, disease_dictionary).to_disk(tmp_path / "linker")  # a linker alone: no NER
    (tmp_path / "dev.txt").write_text(DEV)
    assert open_saved_engine(tmp_path / "linker").link(["xyzzy fever"])[0].cui is not None  # a false link, untuned
    script = hiding("spacy", "thinc") + f"""
import sys
from spacy_biosyn.cli import app
sys.argv = ["spacy_biosyn", "tune-nil", {str(tmp_path / "linker")!r}, {str(tmp_path / "dev.txt")!r},
            {str(tmp_path / "tuned")!r}, "--gold-spans"]
app()
"""
    tuned = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert tuned.returncode == 0, tuned.stderr[-3000:]
    # 10 of 15 gold spans right either way: untuned 10 of 15 links, tuned 10 of 10
    assert "66.67" in tuned.stdout and "80.00" in tuned.stdout
    block = load_config(tmp_path / "tuned" / "config.cfg")["components"]["biosyn_linker"]
    threshold = block["nil_threshold"]
    assert 0 < threshold < 1 and block["nil_threshold_encoder"] == os.path.basename(tiny_encoder)
    engine = open_saved_engine(tmp_path / "tuned")
    assert [links.cui if links else None for links in engine.link(["xyzzy fever", "breast cancer"])] == [None, "D001943"]
    doc = spacy.load(tmp_path / "tuned").get_pipe("biosyn_linker")
    assert doc.nil_threshold == threshold


def test_gold_spans_are_tuned_for_link_f_and_keep_every_span(tmp_path, tiny_encoder, disease_dictionary):
    (tmp_path / "dev.txt").write_text(DEV)
    make_nlp(tiny_encoder, disease_dictionary).to_disk(tmp_path / "linker")
    for option in (["--metric", "doc_f"], ["--nil-spans", "drop"]):
        refused = CliRunner().invoke(app, ["tune-nil", str(tmp_path / "linker"), str(tmp_path / "dev.txt"),
                                           str(tmp_path / "x"), "--gold-spans", *option])
        assert refused.exit_code == 2 and "--gold-spans" in refused.output and not (tmp_path / "x").exists()
