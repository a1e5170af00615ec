"""What one input costs is bounded: a .gz that unpacks past its cap, or a
line past the line cap, is refused in one line naming the file and the
line (preprocess.text.input_limits, set by environment variables), in every
reader of corpora and vocabularies; and a user's slow ID pattern costs once
per distinct ID, not once per report of it."""
import gzip
import json
import os
import subprocess
import sys
import time

import pytest

from spacy_biosyn.corpus_linking.text_sources import read_documents
from spacy_biosyn.errors import BiosynError
from spacy_biosyn.kb.dictionary import Dictionary
from spacy_biosyn.kb.ids import IdPreference
from spacy_biosyn.kb.namespaces import MEDIC_NAMESPACES, IdNamespaces
from spacy_biosyn.preprocess.text import LIMIT_VARIABLES, input_limits

ABSTRACT = ("{0}|t|Breast cancer in carriers.\n{0}|a|Huntington chorea was absent.\n"
            "{0}\t0\t13\tBreast cancer\tDisease\tD001943\n\n")


@pytest.fixture
def limits(monkeypatch):
    """Sets the limits' variables for one test: input_limits reads them
    once, so what it read is forgotten after each change and at the end."""
    def set_limits(**values):
        for field, value in values.items():
            monkeypatch.setenv(getattr(LIMIT_VARIABLES, field), str(value))
        input_limits.cache_clear()

    input_limits.cache_clear()
    yield set_limits
    monkeypatch.undo()
    input_limits.cache_clear()


def test_a_small_gz_unpacking_to_a_line_of_many_megabytes_is_refused_at_once_naming_its_line(limits, tmp_path):
    path = tmp_path / "abstracts.txt.gz"
    with gzip.open(path, "wt") as f:  # 20 KB on disk
        f.write(ABSTRACT.format(1) + "2|t|Gout.\n2|a|" + "gout " * (4 * 2**20) + "\n")
    start = time.perf_counter()
    with pytest.raises(BiosynError, match=rf"^{path}, line 6: over 16,777,216 bytes long.*SPACY_BIOSYN_MAX_LINE_BYTES"):
        list(read_documents(path, "pubtator"))
    assert time.perf_counter() - start < 5
    limits(line_bytes=2**25)  # raised for the file, it is read
    assert [len(d.text) for d in read_documents(path, "pubtator")] == [56, len("Gout. ") + len("gout ") * 4 * 2**20]


def _write_bioc(path, format: str, documents: int) -> None:
    """A .gz of a BioC collection of `documents` one-passage documents, in BioC XML or JSON."""
    import bioc
    from bioc import biocjson, biocxml

    collection = bioc.BioCCollection()
    for i in range(documents):
        document = bioc.BioCDocument()
        document.id = str(i)
        passage = bioc.BioCPassage()
        passage.offset, passage.text = 0, "Breast cancer in carriers."
        document.add_passage(passage)
        collection.add_document(document)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        (biocxml if format == "bioc-xml" else biocjson).dump(collection, f)


# Each reader's file of about 1.5 MB once unpacked.
FILES = {
    "abstracts.txt.gz": ("pubtator", lambda path: path.write_bytes(gzip.compress(
        "".join(ABSTRACT.format(i) for i in range(15_000)).encode()))),
    "abstracts.jsonl.gz": ("jsonl", lambda path: path.write_bytes(gzip.compress("".join(
        json.dumps({"id": i, "text": "Breast cancer in carriers."}) + "\n" for i in range(30_000)).encode()))),
    "note.txt.gz": ("text", lambda path: path.write_bytes(gzip.compress(b"Breast cancer in carriers.\n" * 60_000))),
    "abstracts.xml.gz": ("bioc-xml", lambda path: _write_bioc(path, "bioc-xml", 10_000)),
    "abstracts.json.gz": ("bioc-json", lambda path: _write_bioc(path, "bioc-json", 10_000)),
    "pubmed26n0001.xml.gz": ("medline-xml", lambda path: path.write_bytes(gzip.compress((
        "<PubmedArticleSet>" + "".join(f"<PubmedArticle><MedlineCitation><PMID>{i}</PMID><Article><ArticleTitle>Breast "
                                       "cancer in carriers.</ArticleTitle></Article></MedlineCitation></PubmedArticle>\n"
                                       for i in range(12_000)) + "</PubmedArticleSet>").encode()))),
    "dictionary.txt.gz": ("vocabulary", lambda path: path.write_bytes(gzip.compress(
        "".join(f"D{i:06d}||breast cancer {i}\n" for i in range(60_000)).encode()))),
}


@pytest.mark.parametrize("name", FILES)
def test_a_gz_unpacking_past_the_cap_is_refused_in_one_line_by_every_reader(limits, tmp_path, name):
    format, write = FILES[name]
    path = tmp_path / name
    write(path)
    read = (lambda: Dictionary.from_file(path)) if format == "vocabulary" else (lambda: list(read_documents(path, format)))
    read()  # within the default caps
    limits(unpacked_bytes=1_000_000)
    with pytest.raises(BiosynError, match=rf"^{path}, line \d+: unpacks to over 1,000,000 bytes, the most a .gz may "
                                          r"\(set SPACY_BIOSYN_MAX_UNPACKED_BYTES to allow more\)$"):
        read()


@pytest.mark.parametrize("value,refusal", [
    ("16MB", "✘ SPACY_BIOSYN_MAX_LINE_BYTES='16MB': expected a positive whole number of bytes"),
    ("0", "✘ SPACY_BIOSYN_MAX_LINE_BYTES='0': expected a positive whole number of bytes"),
    ("30", "✘ {path}, line 2: over 30 bytes long"),
])
def test_a_limit_is_set_by_its_variable_and_refused_in_one_line_when_it_is_no_byte_count(tmp_path, value, refusal):
    path = tmp_path / "abstracts.txt"
    path.write_text(ABSTRACT.format(1))
    command = [sys.executable, "-m", "spacy_biosyn", "convert", str(path), str(tmp_path / "train.spacy")]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "SPACY_BIOSYN_MAX_LINE_BYTES": value})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(refusal.format(path=path))


def test_a_slow_id_pattern_costs_once_per_distinct_id(tmp_path):
    # (\w+)+: backtracks through every split of a long word: some 0.3 s for 21 letters
    slow = r"(\w+)+:"
    local_id = "D" * 21
    namespaces = IdNamespaces({"LOCAL": slow, **MEDIC_NAMESPACES})
    start = time.perf_counter()
    assert namespaces(local_id) == local_id
    once = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(20):  # the ID in the reports of 20 mentions, and in a fresh IdNamespaces of the same patterns
        assert namespaces(f"{local_id}|D001943") == f"{local_id}|MESH:D001943"
        assert IdNamespaces({"LOCAL": slow, **MEDIC_NAMESPACES}).one(local_id) == local_id
    assert time.perf_counter() - start < once
    preference = IdPreference([slow, r"D\d+"])
    start = time.perf_counter()
    for _ in range(20):
        assert preference(("E" * 21, "D001943")) == ("D001943", "E" * 21)
    assert time.perf_counter() - start < 2 * once
