"""link_corpus: the same rows on every engine and worker count, runs that
resume exactly, and input errors that name their file and line."""
import json
from pathlib import Path

import bioc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import spacy
from bioc import biocjson, biocxml
from helpers import make_nlp, ruled_linker
from typer.testing import CliRunner

from spacy_biosyn.cli import app
from spacy_biosyn.corpus_linking import link_corpus, read_rows, row_differences
from spacy_biosyn.corpus_linking.output import MANIFEST, read_manifest, write_shard
from spacy_biosyn.corpus_linking.text_sources import input_files, read_documents
from spacy_biosyn.errors import CorpusError

TEXTS = [
    "Breast cancer and type 2 diabetes in {i} carriers.",
    "No disease was found in patient {i}.",
    "Huntington chorea: case {i}, with breast cancer.",
]
PUBTATOR = """\
1|t|Breast cancer in carriers.
1|a|Huntington chorea was absent.
1\t0\t13\tBreast cancer\tDisease\tD001943
1\t27\t44\tHuntington chorea\tDisease\tD006816

2|t|Type 2 diabetes.
2|a|
2\t0\t15\tType 2 diabetes\tDisease\tD003924
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, tiny_encoder):
    """A pipeline whose entity_ruler stands in for the NER, and 30 abstracts."""
    folder = tmp_path_factory.mktemp("corpus")
    ruled_linker(folder, tiny_encoder, ("breast cancer", "type 2 diabetes", "huntington chorea"))
    documents = [{"id": f"pmid{i}", "text": TEXTS[i % 3].format(i=i)} for i in range(30)]
    (folder / "abstracts.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    return folder


def run(corpus, output, **options):
    options = {"shard_size": 4, "batch_size": 3, "progress": False, **options}
    return link_corpus(corpus / "pipeline", corpus / "abstracts.jsonl", output, **options)


@pytest.fixture(scope="module")
def reference(corpus):
    summary = run(corpus, corpus / "reference")
    return summary, read_rows(corpus / "reference")


def test_rows_hold_each_entity_with_its_id_score_and_candidates(reference):
    summary, rows = reference
    assert (summary["documents"], summary["shards"], summary["mentions"]) == (30, 8, 40)
    first = rows[0]
    assert (first["doc_id"], first["start"], first["end"], first["text"]) == ("pmid0", 0, 13, "Breast cancer")
    assert first["id"] == "D001943" and first["candidates"][0]["id"] == "D001943"
    assert first["candidates"][0]["name"] == "breast cancer" and first["score"] == first["candidates"][0]["score"]
    assert {row["id"] for row in rows} == {"D001943", "D003924", "D006816"}


@pytest.mark.parametrize("engine,workers", [("local", 2), ("dask", 1), ("dask", 2), ("ray", 2)])
def test_every_engine_and_worker_count_writes_the_same_rows(corpus, reference, tmp_path, engine, workers):
    summary = run(corpus, tmp_path / "out", engine=engine, workers=workers)
    assert summary["documents"] == 30 and summary["peak_rss_per_worker"] > 0
    rows = read_rows(tmp_path / "out")
    assert len(rows) == len(reference[1]) and row_differences(reference[1], rows) == []


def test_a_rerun_links_only_the_shards_a_killed_run_left(corpus, reference, tmp_path):
    output = tmp_path / "out"
    run(corpus, output)
    # What a kill leaves: shards 2 and 5 never renamed into place, one of
    # them half written, and a manifest that has not heard of shard 7 yet.
    (output / "shard-00002.parquet").rename(output / ".shard-00002.parquet.tmp-dead0001")
    (output / "shard-00005.parquet").unlink()
    manifest = read_manifest(output)
    for index in ("2", "5", "7"):
        del manifest["shards"][index]
    (output / MANIFEST).write_text(json.dumps(manifest))
    summary = run(corpus, output)
    assert (summary["shards"], summary["skipped_shards"], summary["documents"]) == (2, 6, 8)
    assert not list(output.glob(".shard-*"))
    assert row_differences(reference[1], read_rows(output)) == [] and len(read_rows(output)) == 40
    manifest = read_manifest(output)
    assert manifest["complete"] and (manifest["documents"], manifest["mentions"]) == (30, 40)


def test_a_run_that_fails_midway_keeps_its_shards_and_settings(corpus, reference, tmp_path, monkeypatch):
    from spacy_biosyn.corpus_linking import backends as engines

    written = []

    def write_twice(folder, index, documents, rows, format):
        if len(written) == 2:
            raise OSError("disk full")
        written.append(index)
        return write_shard(folder, index, documents, rows, format)

    monkeypatch.setattr(engines, "write_shard", write_twice)
    with pytest.raises(OSError, match="disk full"):
        run(corpus, tmp_path / "out")
    manifest = read_manifest(tmp_path / "out")
    assert sorted(manifest["shards"]) == ["0", "1"] and not manifest["complete"]
    with pytest.raises(CorpusError, match="shard_size 4 -> 5"):
        run(corpus, tmp_path / "out", shard_size=5)
    monkeypatch.undo()
    assert run(corpus, tmp_path / "out")["skipped_shards"] == 2
    assert row_differences(reference[1], read_rows(tmp_path / "out")) == []


def test_a_rerun_with_other_settings_is_refused(corpus, tmp_path):
    run(corpus, tmp_path / "out")
    with pytest.raises(CorpusError, match="shard_size 4 -> 5"):
        run(corpus, tmp_path / "out", shard_size=5)


def test_gold_spans_link_the_annotations_and_keep_their_ids(corpus, tmp_path):
    pubtator = tmp_path / "abstracts.txt"
    pubtator.write_text(PUBTATOR)
    link_corpus(corpus / "pipeline", pubtator, tmp_path / "out", gold_spans=True, output_format="jsonl", progress=False)
    rows = [json.loads(line) for line in (tmp_path / "out" / "shard-00000.jsonl").read_text().splitlines()]
    assert [(r["doc_id"], r["text"], r["gold_id"], r["id"]) for r in rows] == [
        ("1", "Breast cancer", "D001943", "D001943"),
        ("1", "Huntington chorea", "D006816", "D006816"),
        ("2", "Type 2 diabetes", "D003924", "D003924"),
    ]


def test_gold_spans_the_pipeline_drops_stay_rows_keyed_by_offsets(corpus, tmp_path):
    """drop_nil takes unlinked spans out of doc.ents: each row still carries
    the gold ID of the span at its own offsets, and a dropped span is a row
    without an ID (pairing by position shifted every later gold ID)."""
    nlp = spacy.load(corpus / "pipeline")
    linker = nlp.get_pipe("biosyn_linker")
    linker.nil_threshold, linker.drop_nil = 1.0, True  # only a vocabulary name as written reaches it
    nlp.get_pipe_config("biosyn_linker").update(nil_threshold=1.0, drop_nil=True)
    nlp.to_disk(tmp_path / "dropping")
    pubtator = tmp_path / "abstracts.txt"
    # none of the mentions is a name of the vocabulary as written
    pubtator.write_text(PUBTATOR.replace("Breast cancer", "Breast carcinoma").replace("\t13\t", "\t16\t")
                        .replace("Huntington chorea", "Huntington's chorea").replace("\t27\t44\t", "\t30\t49\t")
                        .replace("Type 2", "Type II").replace("\t15\t", "\t16\t"))
    link_corpus(tmp_path / "dropping", pubtator, tmp_path / "out", gold_spans=True, output_format="jsonl", progress=False)
    rows = read_rows(tmp_path / "out")
    assert [(r["doc_id"], r["start"], r["text"], r["gold_id"], r["id"], r["candidates"]) for r in rows] == [
        ("1", 0, "Breast carcinoma", "D001943", None, []),
        ("1", 30, "Huntington's chorea", "D006816", None, []),
        ("2", 0, "Type II diabetes", "D003924", None, []),
    ]


def test_bioc_xml_and_json_give_the_text_and_annotations_at_their_offsets(tmp_path):
    document = bioc.BioCDocument.of_text("unused")
    document.id, document.passages = "77", []
    for offset, text in ((0, "Breast cancer"), (14, "Carriers of huntington chorea.")):
        passage = bioc.BioCPassage.of_text(text, offset)
        document.add_passage(passage)
    annotation = bioc.BioCAnnotation()
    annotation.id, annotation.text = "a1", "huntington chorea"
    annotation.infons.update(type="Disease", identifier="D006816")
    annotation.add_location(bioc.BioCLocation(26, 17))
    document.passages[1].add_annotation(annotation)
    collection = bioc.BioCCollection.of_documents(document)
    with open(tmp_path / "c.xml", "w") as f:
        biocxml.dump(collection, f)
    with open(tmp_path / "c.json", "w") as f:
        biocjson.dump(collection, f)
    for name, format in (("c.xml", "bioc-xml"), ("c.json", "bioc-json")):
        (read,) = read_documents(tmp_path / name, format)
        assert read.text == "Breast cancer\nCarriers of huntington chorea."  # BioC pads between passages
        (gold,) = read.annotations
        assert (read.text[gold.start:gold.end], gold.label, gold.cui) == ("huntington chorea", "Disease", "D006816")


def test_parquet_input_is_read_by_its_id_and_text_columns(corpus, reference, tmp_path):
    documents = [json.loads(line) for line in (corpus / "abstracts.jsonl").read_text().splitlines()]
    pq.write_table(pa.Table.from_pylist(documents), tmp_path / "abstracts.parquet")
    link_corpus(corpus / "pipeline", tmp_path / "abstracts.parquet", tmp_path / "out", shard_size=4, progress=False)
    assert row_differences(reference[1], read_rows(tmp_path / "out")) == []


@pytest.mark.parametrize("name,content,error", [
    ("bad.jsonl", '{"id": 1, "text": "a"}\n\n{"id": 2, "text": "b"\n', r"bad.jsonl, line 3: not JSON"),
    ("bad.jsonl", '{"id": 1, "body": "a"}\n', r"bad.jsonl, line 1: expected an 'id' and a 'text'"),
    ("bad.txt", "1|t|Title\n1\t0\t5\tTitle\tDisease\n", r"bad.txt, line 2: not a PubTator line"),
    ("bad.xml", "<collection><document>", r"bad.xml: not BioC XML"),
    ("deep.jsonl", "[" * 100_000 + "]" * 100_000 + "\n", r"deep.jsonl, line 1: JSON nested too deep"),
    ("deep.json", '{"documents": ' + "[" * 100_000 + "]" * 100_000 + "}", r"deep.json: not BioC JSON \(RecursionError"),
    ("twice.jsonl", '{"id": 1, "text": "a"}\n{"id": "2", "text": "b"}\n{"id": "1", "text": "c"}\n',
     r"twice.jsonl: document 3 has the id '1' of document 1"),
])
def test_malformed_input_is_named_with_its_line(corpus, tmp_path, name, content, error):
    (tmp_path / name).write_text(content)
    with pytest.raises(CorpusError, match=error):
        link_corpus(corpus / "pipeline", tmp_path / name, tmp_path / "out", progress=False)
    assert not list((tmp_path / "out").glob("shard-*"))


def test_rows_of_two_files_reusing_an_id_say_which_file_they_come_from(corpus, tmp_path):
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / "in").mkdir(exist_ok=True)
        (tmp_path / "in" / name).write_text(json.dumps({"id": "1", "text": f"Breast cancer in {name}."}) + "\n")
    link_corpus(corpus / "pipeline", tmp_path / "in", tmp_path / "out", progress=False)
    rows = read_rows(tmp_path / "out")
    assert [(Path(r["file"]).name, r["doc_id"], r["text"]) for r in rows] == [
        ("a.jsonl", "1", "Breast cancer"), ("b.jsonl", "1", "Breast cancer"),
    ]


def test_a_pubtator_pmid_reused_for_another_document_is_refused(corpus, tmp_path):
    (tmp_path / "twice.txt").write_text(PUBTATOR + "\n1|t|Another text.\n1|a|\n")
    with pytest.raises(CorpusError, match=r"twice.txt: document 3 reuses PMID 1 of document 1"):
        link_corpus(corpus / "pipeline", tmp_path / "twice.txt", tmp_path / "out", progress=False)


def test_text_no_tokenizer_can_encode_is_linked_as_text(corpus, tmp_path):
    """JSON can spell a lone surrogate, and ids can hold the characters
    str.splitlines splits at: no traceback, and every row read back."""
    records = [
        {"id": "surrogate", "text": "Breast cancer \ud800 in carriers."},
        {"id": "line\u2028separator\u0085next", "text": "Type 2 diabetes."},
        {"id": "blank", "text": " \n\u3000"},
    ]
    (tmp_path / "odd.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    link_corpus(corpus / "pipeline", tmp_path / "odd.jsonl", tmp_path / "out", output_format="jsonl", progress=False)
    rows = read_rows(tmp_path / "out")
    assert [(r["doc_id"], r["text"], r["id"]) for r in rows] == [
        ("surrogate", "Breast cancer", "D001943"), ("line\u2028separator\u0085next", "Type 2 diabetes", "D003924"),
    ]


def test_a_bioc_json_gz_cut_short_is_named(corpus, tmp_path):
    import gzip

    collection = bioc.BioCCollection.of_documents(bioc.BioCDocument.of_text("Breast cancer in carriers."))
    packed = gzip.compress(biocjson.dumps(collection).encode("utf-8"))
    (tmp_path / "cut.json.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(CorpusError, match=r"cut.json.gz: cannot be read, cut short"):
        link_corpus(corpus / "pipeline", tmp_path / "cut.json.gz", tmp_path / "out", progress=False)


def test_a_parquet_file_without_a_text_column_is_named(corpus, tmp_path):
    pq.write_table(pa.Table.from_pylist([{"id": "1", "body": "x"}]), tmp_path / "a.parquet")
    with pytest.raises(CorpusError, match=r"a.parquet: no text column"):
        link_corpus(corpus / "pipeline", tmp_path / "a.parquet", tmp_path / "out", progress=False)


def test_runs_that_cannot_find_entities_are_refused_before_any_work(corpus, tmp_path, tiny_encoder):
    with pytest.raises(CorpusError, match="holds no annotations"):
        link_corpus(corpus / "pipeline", corpus / "abstracts.jsonl", tmp_path / "out", gold_spans=True)
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"dictionary": str(corpus / "diseases.txt"), "encoder": tiny_encoder})
    nlp.initialize()
    nlp.to_disk(tmp_path / "linker-only")
    with pytest.raises(CorpusError, match="no component before biosyn_linker finds entities"):
        link_corpus(tmp_path / "linker-only", corpus / "abstracts.jsonl", tmp_path / "out")


def test_input_folders_and_patterns_are_read_in_sorted_order(tmp_path):
    for name in ("b.jsonl", "a.jsonl", "notes.md"):
        (tmp_path / name).write_text("")
    assert [p.name for p in input_files(str(tmp_path))] == ["a.jsonl", "b.jsonl"]
    assert [p.name for p in input_files(str(tmp_path / "*.jsonl"))] == ["a.jsonl", "b.jsonl"]
    with pytest.raises(CorpusError, match="no file matches"):
        input_files(str(tmp_path / "*.parquet"))


def test_the_command_links_and_reports_its_throughput(corpus, reference, tmp_path):
    result = CliRunner().invoke(app, [
        "link-corpus", str(corpus / "pipeline"), str(corpus / "abstracts.jsonl"), str(tmp_path / "out"),
        "--shard-size", "4", "--output-format", "jsonl",
    ])
    assert result.exit_code == 0, result.output
    assert "30 documents, 40 mentions" in result.output
    assert row_differences(reference[1], read_rows(tmp_path / "out")) == []


def test_a_second_run_into_a_folder_that_a_run_is_writing_is_refused(corpus, reference, tmp_path):
    from spacy_biosyn.files.storage import folder_locked

    output = tmp_path / "out"
    output.mkdir()
    with folder_locked(output, wait=True):  # as a running link-corpus holds it
        with pytest.raises(CorpusError, match="another link-corpus run is writing to this folder"):
            run(corpus, output)
        assert not list(output.iterdir())
    run(corpus, output)
    assert row_differences(reference[1], read_rows(output)) == []


def test_the_output_reads_as_one_dataset_and_a_finished_run_is_answered_without_the_pipeline(
    corpus, reference, tmp_path, monkeypatch
):
    import pandas as pd
    import pyarrow.dataset as ds

    from spacy_biosyn.corpus_linking import run as run_module

    output = tmp_path / "out"
    run(corpus, output)
    assert len(pd.read_parquet(output)) == len(ds.dataset(output, format="parquet").to_table()) == len(reference[1])
    assert (output / MANIFEST).name.startswith("_") and not (output / "manifest.json").exists()

    def no_engine(*args, **kwargs):
        raise AssertionError("a finished run loaded the pipeline")

    monkeypatch.setattr(run_module, "run_engine", no_engine)
    assert run(corpus, output)["skipped_shards"] == read_manifest(output)["runs"][0]["shards"]


@pytest.mark.parametrize("mine", ["manifest.json", "notes.txt"])
def test_an_output_folder_holding_a_users_files_is_refused_and_left_as_it_was(corpus, tmp_path, mine):
    output = tmp_path / "out"
    output.mkdir()
    (output / mine).write_text('{"my": "own manifest"}')
    with pytest.raises(CorpusError, match=f"holds files link-corpus did not write \\({mine}\\)"):
        run(corpus, output)
    assert [p.name for p in output.iterdir()] == [mine] and (output / mine).read_text() == '{"my": "own manifest"}'


def test_a_file_browsers_litter_is_no_users_file_and_a_file_as_output_is_one_line(corpus, tmp_path):
    output = tmp_path / "out"
    output.mkdir()
    (output / ".DS_Store").write_bytes(b"\0")
    run(corpus, output)
    assert (output / ".DS_Store").exists() and read_manifest(output)["complete"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(CorpusError, match="file is a file; give a folder for the output"):
        run(corpus, tmp_path / "file")


def test_a_run_keeps_files_of_its_own_folder_it_wrote_and_refuses_a_manifest_not_its_own(corpus, tmp_path):
    output = tmp_path / "out"
    run(corpus, output)
    (output / MANIFEST).write_text('{"runs": []}')
    with pytest.raises(CorpusError, match="not a corpus run's manifest .it has no settings."):
        run(corpus, output)


def test_a_document_over_max_length_is_skipped_named_and_counted_and_the_run_goes_on(corpus, tmp_path):
    documents = [{"id": "short", "text": "Breast cancer in carriers."},
                 {"id": "huge", "text": "Breast cancer. " * 70_000},  # 1,050,000 characters
                 {"id": "after", "text": "Huntington chorea."}]
    source = tmp_path / "abstracts.jsonl"
    source.write_text("".join(json.dumps(d) + "\n" for d in documents))
    with pytest.warns(UserWarning, match="huge: 1,050,000 characters, over the pipeline's max_length"):
        summary = link_corpus(corpus / "pipeline", source, tmp_path / "out", shard_size=2, progress=False)
    assert summary["too_long"] == 1 and read_manifest(tmp_path / "out")["too_long"] == 1
    assert sorted(row["doc_id"] for row in read_rows(tmp_path / "out")) == ["after", "short"]


def test_an_input_edited_in_place_to_the_same_size_is_not_resumed(corpus, tmp_path):
    source = tmp_path / "abstracts.jsonl"
    source.write_text((corpus / "abstracts.jsonl").read_text())
    output = tmp_path / "out"
    link_corpus(corpus / "pipeline", source, output, shard_size=4, progress=False)
    before = {p.name: p.read_bytes() for p in output.iterdir() if p.is_file()}
    edited = source.read_text().replace("cancer", "tumour")
    assert len(edited) == len(source.read_text())
    source.write_text(edited)
    with pytest.raises(CorpusError, match=f"inputs whose content has changed since \\({source}\\)"):
        link_corpus(corpus / "pipeline", source, output, shard_size=4, progress=False)
    assert {p.name: p.read_bytes() for p in output.iterdir() if p.is_file()} == before


def test_a_gzip_compressed_pubtator_file_with_an_upper_case_suffix_is_linked(corpus, tmp_path):
    import gzip

    plain, packed = tmp_path / "abstracts.txt", tmp_path / "abstracts.PubTator.gz"
    plain.write_text(PUBTATOR)
    packed.write_bytes(gzip.compress(PUBTATOR.encode("utf-8")))
    for path, out in ((plain, "plain"), (packed, "packed")):
        link_corpus(corpus / "pipeline", path, tmp_path / out, gold_spans=True, progress=False)
    assert row_differences(read_rows(tmp_path / "plain"), read_rows(tmp_path / "packed")) == []
    assert len(read_rows(tmp_path / "packed")) > 0


def test_numeric_document_ids_stay_strings(corpus, tmp_path):
    import pandas as pd

    source = tmp_path / "numbered.jsonl"
    source.write_text(json.dumps({"id": "00012", "text": "Breast cancer."}) + "\n")
    for output_format in ("parquet", "jsonl"):
        output = tmp_path / output_format
        link_corpus(corpus / "pipeline", source, output, output_format=output_format, progress=False)
        if output_format == "parquet":
            table = pd.read_parquet(output)
        else:
            # JSON has no types to say so: pandas must be told, or it reads 12.
            table = pd.read_json(next(output.glob("shard-*.jsonl")), lines=True, dtype={"doc_id": str})
        assert table["doc_id"].tolist() == ["00012"]


NOTES = {
    "note-17.txt": "Breast cancer\nin a carrier of\r\nHuntington chorea.\n",
    "note-18.txt": "\ufeffNo disease found.",
    "note-19.txt": "",
}


def notes_folder(tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_bytes(text.encode("utf-8"))
    (folder / "abstracts.txt").write_text(PUBTATOR)  # a PubTator file among them, known by its first line
    return folder


def test_plain_text_files_are_one_document_each_named_by_their_stem(corpus, tmp_path):
    folder = notes_folder(tmp_path)
    link_corpus(corpus / "pipeline", folder, tmp_path / "out", output_format="jsonl", progress=False)
    rows = read_rows(tmp_path / "out")
    assert [(Path(r["file"]).name, r["doc_id"], r["start"], r["text"], r["id"]) for r in rows] == [
        ("abstracts.txt", "1", 0, "Breast cancer", "D001943"),
        ("abstracts.txt", "1", 27, "Huntington chorea", "D006816"),
        ("abstracts.txt", "2", 0, "Type 2 diabetes", "D003924"),
        ("note-17.txt", "note-17", 0, "Breast cancer", "D001943"),
        ("note-17.txt", "note-17", 31, "Huntington chorea", "D006816"),  # offsets count the \r\n as written
    ]
    assert [d.id for d in read_documents(folder / "note-18.txt", "text")] == ["note-18"]
    assert next(read_documents(folder / "note-18.txt", "text")).text == "No disease found."  # the BOM is no text


def test_a_plain_text_file_that_is_not_utf8_is_named_with_its_line(corpus, tmp_path):
    (tmp_path / "latin1.txt").write_bytes("Breast cancer\nin Sj\xf6gren syndrome".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"latin1.txt, line 2: not UTF-8 text"):
        link_corpus(corpus / "pipeline", tmp_path / "latin1.txt", tmp_path / "out", progress=False)


def test_standard_input_is_linked_and_resumed_only_with_the_same_bytes(corpus, tmp_path):
    arguments = ["link-corpus", str(corpus / "pipeline"), "-", str(tmp_path / "out"), "--output-format", "jsonl"]
    result = CliRunner().invoke(app, arguments, input="Breast cancer in a carrier.")
    assert result.exit_code == 0, result.output
    (row,) = read_rows(tmp_path / "out")
    assert (row["doc_id"], row["text"], row["id"]) == ("stdin", "Breast cancer", "D001943")
    assert "already done" in CliRunner().invoke(app, arguments, input="Breast cancer in a carrier.").output
    refused = CliRunner().invoke(app, arguments, input="Type 2 diabetes.")
    assert isinstance(refused.exception, CorpusError) and "other settings" in str(refused.exception)
    # the refused run changed nothing: the first one's input and rows stay
    assert (tmp_path / "out" / "_input" / "stdin.txt").read_text() == "Breast cancer in a carrier."
    assert len(read_rows(tmp_path / "out")) == 1


@pytest.mark.parametrize("output_format,read_as", [("pubtator", "pubtator"), ("bioc", "bioc-xml")])
def test_pubtator_and_bioc_output_read_back_give_the_same_spans_and_ids(corpus, reference, tmp_path, output_format, read_as):
    folder = notes_folder(tmp_path)
    (folder / "abstracts.txt").unlink()
    for source, out in ((corpus / "abstracts.jsonl", "corpus-out"), (folder, "notes-out")):
        link_corpus(corpus / "pipeline", source, tmp_path / out, output_format="jsonl", shard_size=4, progress=False)
        summary = link_corpus(corpus / "pipeline", source, tmp_path / f"{out}-{output_format}",
                              output_format=output_format, shard_size=4, progress=False)
        rows = read_rows(tmp_path / out)
        shards = sorted((tmp_path / f"{out}-{output_format}").glob("shard-*"))
        read = [d for path in shards for d in read_documents(path, read_as)]
        spans = [(d.id, a.start, a.end, a.text, a.label, a.cui) for d in read for a in d.annotations]
        # Both readers read an entity without an ID (NIL) as a CUI-less mention: -1
        assert spans == [(r["doc_id"], r["start"], r["end"], r["text"], r["label"], r["id"] or "-1") for r in rows]
        # documents without entities too, but for note-19's empty text in PubTator, whose readers skip it
        empty = output_format == "pubtator" and out == "notes-out"
        assert summary["mentions"] == len(rows) and len(read) == summary["documents"] - empty
    notes = {d.id: d.text for path in (tmp_path / f"notes-out-{output_format}").glob("shard-*") for d in read_documents(path, read_as)}
    if output_format == "bioc":
        assert notes["note-17"] == NOTES["note-17.txt"]
    else:  # PubTator's title and abstract are lines: a line break is a space, offsets unchanged
        assert notes["note-17"] == NOTES["note-17.txt"].replace("\r", " ").replace("\n", " ")


def test_an_unlinked_entity_is_written_with_the_id_of_a_cuiless_mention(corpus, tmp_path):
    nlp = spacy.load(corpus / "pipeline")
    nlp.get_pipe("biosyn_linker").nil_threshold = 1.0  # only a vocabulary name as written reaches it
    nlp.get_pipe_config("biosyn_linker").update(nil_threshold=1.0)
    nlp.get_pipe("entity_ruler").add_patterns([{"label": "Disease", "pattern": "Breast carcinoma"}])
    nlp.to_disk(tmp_path / "nil")
    (tmp_path / "a.txt").write_text("Breast carcinoma.")
    link_corpus(tmp_path / "nil", tmp_path / "a.txt", tmp_path / "out", output_format="pubtator", progress=False)
    # An empty last field would be stripped away by PubTator readers, and the line read as a relation
    assert (tmp_path / "out" / "shard-00000.pubtator").read_text() == (
        "a|t|Breast carcinoma.\na\t0\t16\tBreast carcinoma\tDisease\t-1\n\n")


def test_end_to_end_scores_of_pubtator_output_equal_the_pipelines(corpus, tmp_path):
    gold = tmp_path / "gold.txt"
    # type 2 diabetes is not gold here: the pipeline's false positive
    gold.write_text(PUBTATOR.replace("Breast cancer in carriers", "Breast cancer in type 2 diabetes carriers")
                    .replace("\t27\t44\t", "\t43\t60\t"))
    runner = CliRunner()
    result = runner.invoke(app, ["evaluate", str(corpus / "pipeline"), str(gold), "--end-to-end",
                                 "--output", str(tmp_path / "pipeline.json")])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["link-corpus", str(corpus / "pipeline"), str(gold), str(tmp_path / "out"),
                                 "--output-format", "pubtator"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["evaluate", str(tmp_path / "out"), str(gold), "--end-to-end",
                                 "--output", str(tmp_path / "output.json")])
    assert result.exit_code == 0, result.output
    on_pipeline, on_output = (json.loads((tmp_path / name).read_text()) for name in ("pipeline.json", "output.json"))
    assert on_output == on_pipeline
    assert (on_pipeline["ents_p"], on_pipeline["ents_r"], on_pipeline["link_r"]) == (0.75, 1.0, 1.0)


def _row(document, start, end, cui="D001943"):
    return {"file": document.file, "doc_id": document.id, "start": start, "end": end,
            "text": document.text[start:end], "label": "Disease", "id": cui, "score": 0.9, "gold_id": None, "candidates": []}


def test_pubtator_output_reads_back_alike_in_every_pubtator_reader(tmp_path):
    from bioc import pubtator

    from spacy_biosyn.corpora.documents import Document
    from spacy_biosyn.corpus_linking.writers import write_rows

    texts = {
        "nul": "Breast\x00cancer. Gout.",                     # JSON's "\u0000": no text file holds it
        "tab": "Breast\tcancer. Gout.",                       # a tab in a mention would split its line
        "tags": "Gout.\nSeen |t| and |a| in breast cancer.",  # a line holding |t| reads as a title
        "breaks": "Gout\x0c\u2028\x85\x1d\x1e.\r\nBreast cancer.\r\n",
        "edges": "  Gout.\n\t Breast cancer.",                # a line's start is the text's in every reader
    }
    documents = [Document(i, text, None, "in.jsonl") for i, text in texts.items()]
    rows = [[_row(d, d.text.index("Gout"), d.text.index("Gout") + 4), _row(d, d.text.index("reast") - 1, d.text.index("cancer") + 6, None)]
            if "Gout" in d.text[:10] else [_row(d, 0, 13), _row(d, d.text.index("Gout"), d.text.index("Gout") + 4, None)]
            for d in documents]
    path = tmp_path / "out.pubtator"
    write_rows(path, documents, rows, "pubtator")
    ours = [(d.id, d.text, [(a.start, a.end, a.text, a.cui) for a in d.annotations]) for d in read_documents(path, "pubtator")]
    with path.open(encoding="utf-8") as f:
        theirs = [(d.pmid, d.text.replace("\n", " "), [(a.start, a.end, a.text, a.id) for a in d.annotations])
                  for d in pubtator.load(f)]
    expected = [
        ("nul", "Breast\ufffdcancer. Gout.", [(0, 13, "Breast\ufffdcancer", "D001943"), (15, 19, "Gout", "-1")]),
        # the text keeps its tab; the mention's field, which cannot hold one, has a space
        ("tab", "Breast\tcancer. Gout.", [(0, 13, "Breast cancer", "D001943"), (15, 19, "Gout", "-1")]),
        ("tags", "Gout. Seen ¦t¦ and ¦a¦ in breast cancer.", [(0, 4, "Gout", "D001943"), (26, 39, "breast cancer", "-1")]),
        ("breaks", "Gout     .  Breast cancer.  ", [(0, 4, "Gout", "D001943"), (12, 25, "Breast cancer", "-1")]),
        ("edges", "  Gout. \t Breast cancer.", [(2, 6, "Gout", "D001943"), (10, 23, "Breast cancer", "-1")]),
    ]
    assert ours == expected
    # bioc.pubtator strips the end of each line: the space a CRLF leaves at the end of both lines of "breaks"
    assert theirs == expected[:3] + [("breaks", "Gout     . Breast cancer.", expected[3][2]), expected[4]]


def test_pubtator_and_bioc_output_keep_each_title_and_abstract_byte_for_byte(tmp_path):
    from spacy_biosyn.corpora.documents import Document
    from spacy_biosyn.corpus_linking.writers import write_rows

    title, abstract = "  Breast cancer in carriers. ", " Huntington chorea was absent.\t"
    document = Document("7", f"{title}\n{abstract}", None, "in.jsonl")
    rows = [[_row(document, 2, 15), _row(document, 31, 48, "D006816")]]
    write_rows(tmp_path / "out.pubtator", [document], rows, "pubtator")
    lines = (tmp_path / "out.pubtator").read_bytes().split(b"\n")
    assert lines[:2] == [f"7|t|{title}".encode(), f"7|a|{abstract}".encode()]
    write_rows(tmp_path / "out.xml", [document], rows, "bioc")
    for path, format in ((tmp_path / "out.pubtator", "pubtator"), (tmp_path / "out.xml", "bioc-xml")):
        (back,) = read_documents(path, format)
        # PubTator writes the line break between title and abstract as its line end, read back as a space
        assert back.text == (f"{title} {abstract}" if format == "pubtator" else document.text)
        assert [(a.start, a.end, a.text) for a in back.annotations] == [(2, 15, "Breast cancer"), (31, 48, "Huntington chorea")]


def test_pubtator_output_of_ncbi_disease_keeps_every_title_and_abstract_line(shared_data, tmp_path):
    from spacy_biosyn.corpus_linking.writers import write_rows

    source = shared_data / "ncbi-disease" / "raw" / "NCBIdevelopset_corpus.txt"
    documents = list(read_documents(source, "pubtator"))
    rows = [[_row(d, a.start, a.end, a.cui) for a in d.annotations] for d in documents]
    write_rows(tmp_path / "dev.pubtator", documents, rows, "pubtator")

    def text_lines(path):
        return [line for line in path.read_bytes().split(b"\n") if b"|t|" in line or b"|a|" in line]

    # 95 of them end in a space, as PMID 8808605's abstract does
    assert text_lines(tmp_path / "dev.pubtator") == text_lines(source)
    assert [d.text for d in read_documents(tmp_path / "dev.pubtator", "pubtator")] == [d.text for d in documents]


def test_jsonl_rows_are_one_line_each_for_every_line_reader(tmp_path):
    from spacy_biosyn.corpora.documents import Document
    from spacy_biosyn.corpus_linking.writers import write_rows

    document = Document("1", "Breast\u2028cancer\x85and gout\u2029.", None, "in.jsonl")
    write_rows(tmp_path / "out.jsonl", [document], [[_row(document, 0, 13), _row(document, 18, 22)]], "jsonl")
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["text"] for line in lines] == ["Breast\u2028cancer", "gout"]


def test_two_inputs_that_would_share_a_document_id_are_refused_naming_both(corpus, tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "x.txt").write_text("Breast cancer.")
    (tmp_path / "in" / "x.text").write_text("Gout.")
    with pytest.raises(CorpusError, match=r"x.text and .*x.txt both hold a document 'x'"):
        link_corpus(corpus / "pipeline", tmp_path / "in", tmp_path / "out", output_format="pubtator", progress=False)
    assert not list((tmp_path / "out").glob("shard-*"))
    # rows carry their input file: JSONL and Parquet tell them apart
    link_corpus(corpus / "pipeline", tmp_path / "in", tmp_path / "rows", output_format="jsonl", progress=False)
    assert sorted(Path(r["file"]).name for r in read_rows(tmp_path / "rows")) == ["x.txt"]


def test_a_document_id_pubtator_cannot_write_is_refused_before_linking(corpus, tmp_path):
    (tmp_path / "a|b.txt").write_text("Breast cancer.")
    with pytest.raises(CorpusError, match=r"document id 'a\|b' holds '\|'"):
        link_corpus(corpus / "pipeline", tmp_path / "a|b.txt", tmp_path / "out", output_format="pubtator", progress=False)


def test_pubtator_input_is_written_back_with_its_title_and_abstract_lines(corpus, tmp_path):
    from bioc import pubtator

    (tmp_path / "abstracts.txt").write_text(PUBTATOR)
    link_corpus(corpus / "pipeline", tmp_path / "abstracts.txt", tmp_path / "out", output_format="pubtator",
                gold_spans=True, progress=False)

    def read(path):
        with path.open() as f:
            return [(d.pmid, d.title, d.abstract or "", [(a.start, a.end, a.text, a.type) for a in d.annotations])
                    for d in pubtator.load(f)]

    written = read(tmp_path / "out" / "shard-00000.pubtator")
    assert written == read(tmp_path / "abstracts.txt")
    assert written[0][1:3] == ("Breast cancer in carriers.", "Huntington chorea was absent.")
    ours = [(d.id, d.text, [(a.start, a.end) for a in d.annotations])
            for d in read_documents(tmp_path / "out" / "shard-00000.pubtator", "pubtator")]
    assert ours == [(d.id, d.text, [(a.start, a.end) for a in d.annotations])
                    for d in read_documents(tmp_path / "abstracts.txt", "pubtator")]


def test_threads_reach_the_encoders_onnx_runtime_session(tiny_encoder, disease_dictionary, tmp_path):
    """--threads is per worker for torch and for ONNX Runtime, whose session
    would otherwise take every core in each of a machine's workers."""
    from spacy_biosyn.corpus_linking.worker import RunSettings, ShardLinker

    make_nlp({"@misc": "spacy_biosyn.OnnxEncoder.v2", "name": tiny_encoder}, disease_dictionary).to_disk(tmp_path / "p")

    def session_threads(threads):
        settings = RunSettings(pipeline=str(tmp_path / "p"), output=str(tmp_path), output_format="jsonl",
                               gold_spans=False, labels=None, batch_size=8, threads=threads, gpu=False)
        encoder = ShardLinker(settings).nlp.get_pipe("biosyn_linker").engine.encoder
        return encoder._require_session().get_session_options().intra_op_num_threads

    assert session_threads(None) == 0  # the pipeline's own setting: ONNX Runtime's default
    assert session_threads(1) == 1
    assert session_threads(3) == 3
