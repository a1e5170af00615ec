import json
import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import hiding, make_nlp
import spacy
import srsly
from spacy.util import load_config
from typer.testing import CliRunner

from spacy_biosyn import MEDIC_NAMESPACES
from spacy_biosyn.cli import app
from spacy_biosyn.errors import CorpusError, MismatchError


def test_build_then_evaluate_against_another_dictionary(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    pipeline = tmp_path / "pipelines" / "tiny"  # parent folders do not exist yet
    result = runner.invoke(
        app,
        ["build", str(pipeline), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
         "--sparse-weight", "10", "--pooling", "mean"],
    )
    assert result.exit_code == 0, result.output
    # Too few synonyms in this vocabulary to derive a NIL threshold from, and it says so.
    assert 'nil_threshold "auto" is None here: none: the vocabulary has 6 concepts' in " ".join(result.output.split())
    component = load_config(pipeline / "config.cfg")["components"]["biosyn_linker"]
    assert (component["encoder"]["pooling"], component["sparse_weight"]) == ("mean", 10.0)
    queries = tmp_path / "queries"
    queries.mkdir()
    (queries / "1.concept").write_text(
        "1||0|13||Disease||breast cancer||D001943\n"
        "1||20|40||Disease||huntington s chorea||D006816\n"
        "1||50|70||Disease||familial hypercholesterolemia||D006938\n"
    )
    dev_dictionary = tmp_path / "dev.txt"
    dev_dictionary.write_text(open(disease_dictionary).read() + "D006938||familial hypercholesterolemia\n")
    metrics_path = tmp_path / "metrics" / "dev.json"
    result = runner.invoke(
        app,
        ["evaluate", str(pipeline), str(queries), "--dictionary", str(dev_dictionary),
         "--output", str(metrics_path)],
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(metrics_path.read_text())
    assert metrics["n"] == 3 and metrics["link_acc_1"] == 1.0
    assert set(metrics) >= {"link_acc_1", "link_acc_2", "link_acc_3", "link_acc_4", "link_acc_5"}


def test_build_with_a_missing_dictionary_fails_naming_it(tmp_path, tiny_encoder):
    result = CliRunner().invoke(
        app, ["build", str(tmp_path / "p"), "--encoder", tiny_encoder, "--dictionary", str(tmp_path / "nope.txt")]
    )
    assert result.exit_code != 0
    # the path as the error panel wraps it at its border, wherever the temporary folder puts the cut
    assert "nope.txt" in "".join(result.output.replace("│", "").split())


def test_evaluate_links_the_gold_spans_of_a_pubtator_file(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    pipeline = tmp_path / "tiny"
    args = ["build", str(pipeline), "--encoder", tiny_encoder, "--dictionary", disease_dictionary]
    assert runner.invoke(app, args + ["--sparse-weight", "10"]).exit_code == 0
    title = "Type 2 diabetes (T2D) and cisplatin"
    abstract = "T2D carriers had breast and ovarian cancer; CIPS was seen."
    text = f"{title} {abstract}"

    def annotation(mention, label, cui):
        start = text.rindex(mention)
        return f"7\t{start}\t{start + len(mention)}\t{mention}\t{label}\t{cui}\n"

    corpus = tmp_path / "dev.PubTator.txt"
    corpus.write_text(
        f"7|t|{title}\n7|a|{abstract}\n"
        + annotation("T2D", "Disease", "D003924")  # the later use, linked through its long form
        + annotation("breast and ovarian cancer", "Disease", "D001943|D010051")
        + annotation("CIPS", "Disease", "-1")  # CUI-less: not scored
        + annotation("cisplatin", "Chemical", "D002945")  # not a Disease: not linked
    )
    metrics_path = tmp_path / "metrics.json"
    result = runner.invoke(
        app, ["evaluate", str(pipeline), str(corpus), "--labels", "Disease", "--output", str(metrics_path)]
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(metrics_path.read_text())
    assert (metrics["n"], metrics["unscored"], metrics["link_acc_1"], metrics["link_cui_acc"]) == (2, 1, 1.0, 1.0)


def test_a_corpus_that_prefixes_ids_is_scored_through_declared_namespaces(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    pipeline = tmp_path / "tiny"
    args = ["build", str(pipeline), "--encoder", tiny_encoder, "--dictionary", disease_dictionary, "--sparse-weight", "10"]
    assert runner.invoke(app, args).exit_code == 0
    corpus = tmp_path / "dev.PubTator.txt"  # the raw NCBI corpus's habit; the dictionary writes D003924
    corpus.write_text("7|t|Type 2 diabetes was seen.\n7\t0\t15\tType 2 diabetes\tDisease\tMESH:D003924\n")

    def acc_1(*options):
        output = tmp_path / "metrics.json"
        result = runner.invoke(app, ["evaluate", str(pipeline), str(corpus), "--output", str(output), *options])
        assert result.exit_code == 0, result.output
        return json.loads(output.read_text())["link_acc_1"]

    assert acc_1() == 1.0  # the vocabulary's bare IDs are recognized as MeSH's
    assert acc_1("--id-namespaces", "medic") == 1.0
    # D003924 is no OMIM ID: declared so, it never meets MESH:D003924, and scoring stops saying why
    result = runner.invoke(app, ["evaluate", str(pipeline), str(corpus), "--id-namespaces", '{"OMIM": "\\\\d{6}"}'])
    assert isinstance(result.exception, MismatchError) and "written MESH: (MESH:D003924)" in str(result.exception)
    assert runner.invoke(app, args + ["--id-namespaces", "medic"]).exit_code == 0
    assert spacy.load(pipeline).get_pipe("biosyn_linker").settings.id_namespaces == MEDIC_NAMESPACES
    assert acc_1() == 1.0  # the pipeline's own
    result = runner.invoke(app, ["evaluate", str(pipeline), str(corpus), "--id-namespaces", "{MESH"])
    assert result.exit_code == 2 and "--id-namespaces" in result.output


def test_build_adds_synonyms_and_saves_them(tmp_path, tiny_encoder, disease_dictionary):
    synonyms = tmp_path / "domain.txt"
    synonyms.write_text("D006816||st vitus dance\n")
    pipeline = tmp_path / "p"
    args = ["build", str(pipeline), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
            "--sparse-weight", "10", "--synonyms", str(synonyms)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert (pipeline / "biosyn_linker" / "synonyms.txt").read_text() == "D006816||st vitus dance\n"
    linker = spacy.load(pipeline).get_pipe("biosyn_linker")
    assert linker.rank(["St. Vitus' dance"])[0][0].cuis == ("D006816",)


def test_index_takes_preferred_ids_from_an_annotated_corpus(tmp_path, tiny_encoder):
    runner = CliRunner()
    dictionary = tmp_path / "d.txt"
    dictionary.write_text("C566443|610102||c7 deficiency\nD001943||breast cancer\n")
    train = tmp_path / "train"
    train.mkdir()
    (train / "1.concept").write_text("1||0|13||Disease||c7 deficiency||610102\n")
    build = ["build", str(tmp_path / "p"), "--encoder", tiny_encoder, "--dictionary", str(dictionary),
             "--sparse-weight", "10"]
    assert runner.invoke(app, build).exit_code == 0
    index = ["index", str(tmp_path / "p"), str(tmp_path / "q"), "--dictionary", str(dictionary),
             "--preferred-ids-from", str(train)]
    result = runner.invoke(app, index)
    assert result.exit_code == 0, result.output

    def cui(pipeline):
        nlp = spacy.load(pipeline)
        doc = nlp.make_doc("C7 deficiency")
        doc.ents = [doc.char_span(0, 13, label="Disease")]
        return nlp(doc).ents[0]._.cui

    assert (cui(tmp_path / "p"), cui(tmp_path / "q")) == ("C566443", "610102")


def test_build_and_index_route_a_label_to_its_own_vocabulary(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    chemicals = tmp_path / "chemical_train"
    chemicals.mkdir()
    (chemicals / "1.concept").write_text("1||0|9||Chemical||cisplatin||D002945\n")

    def linked(pipeline):
        nlp = spacy.load(pipeline)
        doc = nlp.make_doc("cisplatin and breast cancer")
        doc.ents = [doc.char_span(0, 9, label="CHEMICAL"), doc.char_span(14, 27, label="Disease")]
        return [e._.cui for e in nlp(doc).ents]

    build = ["build", str(tmp_path / "p"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
             "--sparse-weight", "10", "--route", f"Chemical={chemicals}"]
    assert runner.invoke(app, build).exit_code == 0
    assert linked(tmp_path / "p") == ["D002945", "D001943"]
    plain = build[:-2]
    plain[1] = str(tmp_path / "plain")
    assert runner.invoke(app, plain).exit_code == 0
    index = ["index", str(tmp_path / "plain"), str(tmp_path / "q"), "--dictionary", disease_dictionary,
             "--route", f"Chemical={chemicals}"]
    assert runner.invoke(app, index).exit_code == 0
    assert linked(tmp_path / "q") == ["D002945", "D001943"]
    routes_dir = tmp_path / "routes"  # what the project's data step writes
    routes_dir.mkdir()
    chemicals.rename(routes_dir / "Chemical")
    by_folder = index[:-2] + ["--routes-dir", str(routes_dir)]
    by_folder[2] = str(tmp_path / "r")
    assert runner.invoke(app, by_folder).exit_code == 0
    assert linked(tmp_path / "r") == ["D002945", "D001943"]
    for bad in ("Chemical", f"={routes_dir}", "Chemical=/no/such/folder"):
        refused = index[:-1] + [bad]
        refused[2] = str(tmp_path / "q2")
        result = runner.invoke(app, refused)
        assert result.exit_code == 2 and "--route" in result.output and not (tmp_path / "q2").exists()


def test_spacy_evaluate_reports_linking_of_a_pipeline_with_entities(tmp_path, tiny_encoder, disease_dictionary):
    from spacy.cli.evaluate import evaluate as spacy_evaluate
    from spacy.tokens import DocBin

    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")  # stands in for an NER: spacy evaluate gives the pipeline raw text
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
    nlp.initialize()  # clears the ruler's patterns, so they come after
    ruler.add_patterns([{"label": "Disease", "pattern": "breast cancer"}, {"label": "Disease", "pattern": "gout"}])
    nlp.to_disk(tmp_path / "pipeline")
    gold = nlp.make_doc("breast cancer and gout")
    gold.ents = [
        spacy.tokens.Span(gold, 0, 2, label="Disease", kb_id="D001943"),
        spacy.tokens.Span(gold, 3, 4, label="Disease", kb_id="D006073"),  # not in the dictionary: a miss
    ]
    DocBin(docs=[gold]).to_disk(tmp_path / "dev.spacy")
    scores = spacy_evaluate(str(tmp_path / "pipeline"), tmp_path / "dev.spacy", output=tmp_path / "scores.json")
    assert (scores["link_cui_acc"], scores["link_acc_1"]) == (0.5, 0.5)
    assert json.loads((tmp_path / "scores.json").read_text())["link_cui_acc"] == 0.5


def test_evaluate_with_no_mention_to_score_says_so(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    assert runner.invoke(app, ["build", str(tmp_path / "p"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary]).exit_code == 0
    corpus = tmp_path / "cuiless.PubTator.txt"
    corpus.write_text("1|t|CIPS was seen.\n1|a|\n1\t0\t4\tCIPS\tDisease\t-1\n")
    result = runner.invoke(app, ["evaluate", str(tmp_path / "p"), str(corpus)])
    assert result.exit_code == 1 and "no mention with a gold ID to score" in result.output
    assert "cuiless.PubTator.txt" in result.output


def test_build_replaces_a_pipeline_but_not_a_folder_of_other_files(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    build = ["build", "--encoder", tiny_encoder, "--dictionary", disease_dictionary]
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    result = runner.invoke(app, build + [str(notes)])
    # wasabi wraps long messages where the tmp path makes them long
    assert result.exit_code == 1 and "is not empty and holds no spaCy pipeline" in " ".join(result.output.split())
    assert [p.name for p in notes.iterdir()] == ["todo.txt"]
    result = runner.invoke(app, build + [str(notes / "todo.txt")])
    assert result.exit_code == 1 and "todo.txt is a file" in " ".join(result.output.split())
    assert (notes / "todo.txt").read_text() == "mine"
    assert runner.invoke(app, build + [str(tmp_path / "p")]).exit_code == 0
    result = runner.invoke(app, ["index", str(tmp_path / "p"), str(notes / "todo.txt"), "--dictionary", disease_dictionary])
    assert result.exit_code == 1 and (notes / "todo.txt").read_text() == "mine"  # refused before indexing, kept
    (tmp_path / "p" / "stale.txt").write_text("from an older save")
    assert runner.invoke(app, build + [str(tmp_path / "p"), "--top-k", "3"]).exit_code == 0
    assert not (tmp_path / "p" / "stale.txt").exists()  # the new pipeline replaced the old whole
    assert spacy.load(tmp_path / "p").get_pipe("biosyn_linker").top_k == 3


def test_an_error_in_the_users_input_is_one_line_not_a_traceback(tmp_path, tiny_encoder):
    import subprocess
    import sys

    dictionary = tmp_path / "medic.txt"
    dictionary.write_text("D1||gout\n114480|D001943||Breast Neoplasms|Breast Cancer\n")
    command = [sys.executable, "-m", "spacy_biosyn", "build", str(tmp_path / "p"), "--encoder", tiny_encoder,
               "--dictionary", str(dictionary), "--format", "biosyn"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"✘ {dictionary}, line 2: the name") and "MedicVocabulary" in line


def test_commands_say_what_is_wrong_in_a_line_or_two(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    build = ["build", str(tmp_path / "linker"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary]
    assert runner.invoke(app, build).exit_code == 0
    corpus = tmp_path / "dev.txt"
    corpus.write_text("1|t|gout\n1\t0\t4\tgout\tDisease\tD006073\n")
    no_ner = runner.invoke(app, ["link", str(tmp_path / "linker"), "Gout in carriers."])
    assert isinstance(no_ner.exception, CorpusError) and "no component before biosyn_linker finds entities" in str(no_ner.exception)
    assert "--mentions" in str(no_ner.exception)
    scored = runner.invoke(app, ["evaluate", str(tmp_path / "linker"), str(corpus), "--end-to-end"])
    assert isinstance(scored.exception, CorpusError) and "evaluate without --end-to-end" in str(scored.exception)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.txt").write_text("mine")
    for command in (["link", str(tmp_path / "notes"), "--mentions", "gout"], ["evaluate", str(tmp_path / "notes"), str(corpus)]):
        result = runner.invoke(app, command)
        assert result.exit_code == 1 and "not a saved spaCy pipeline (no config.cfg)" in " ".join(result.output.split())
    # offline as a user is, from the process's start: the hub, imported already here, would retry for 47 s
    offline = subprocess.run([sys.executable, "-m", "spacy_biosyn", *build[:1], str(tmp_path / "x"), "--encoder",
                              "nobody/no-such-encoder", "--dictionary", disease_dictionary],
                             capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1", "COLUMNS": "200"})
    assert offline.returncode == 1 and "encoder 'nobody/no-such-encoder' cannot be loaded" in offline.stderr
    assert "the hub is off (HF_HUB_OFFLINE)" in offline.stderr


def test_link_mentions_ranks_mention_strings_from_arguments_or_standard_input(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    build = ["build", str(tmp_path / "linker"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
             "--sparse-weight", "10"]
    assert runner.invoke(app, build).exit_code == 0
    table = runner.invoke(app, ["link", str(tmp_path / "linker"), "--mentions", "Breast Cancer", "paralysis agitans"])
    assert table.exit_code == 0, table.output
    assert "D001943" in table.output and "breast cancer" in table.output
    piped = runner.invoke(app, ["link", str(tmp_path / "linker"), "--mentions", "--json"],
                          input="breast cancer\n\nhuntington chorea\n")
    assert piped.exit_code == 0, piped.output
    assert [(row["text"], row["id"]) for row in map(json.loads, piped.output.splitlines())] == [
        ("breast cancer", "D001943"), ("huntington chorea", "D006816")]


def test_link_mentions_opens_the_linkers_engine_without_spacy_and_reads_config_cfgs_edits(
    tmp_path, tiny_encoder, disease_dictionary
):
    runner = CliRunner()
    build = ["build", str(tmp_path / "linker"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
             "--sparse-weight", "10"]
    assert runner.invoke(app, build).exit_code == 0
    config = tmp_path / "linker" / "config.cfg"  # an edit the docs allow: top_k, which the engine.cfg says is 5
    config.write_text(config.read_text().replace("top_k = 5", "top_k = 2"))
    mentions = ["breast cancer", "Huntington chorea", "the"]
    loaded = runner.invoke(app, ["link", str(tmp_path / "linker"), "--mentions", "--json", *mentions])
    assert loaded.exit_code == 0, loaded.output
    rows = [json.loads(line) for line in loaded.output.splitlines()]
    assert [row["id"] for row in rows] == ["D001943", "D006816", None] and len(rows[0]["candidates"]) == 2
    script = hiding("spacy", "thinc") + f"""
import sys
from spacy_biosyn.cli import app
sys.argv = ["spacy_biosyn", "link", {str(tmp_path / "linker")!r}, "--mentions", "--json", *{mentions!r}]
app()
"""
    alone = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                           env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert alone.returncode == 0, alone.stderr[-3000:]
    assert [json.loads(line) for line in alone.stdout.splitlines()] == rows


def test_link_json_names_each_ranked_concept_when_ids_get_a_namespace(tmp_path, tiny_encoder, disease_dictionary):
    # kb_ents say MESH:D001943 where the dictionary says D001943: the name must still be found
    make_nlp(tiny_encoder, disease_dictionary, id_namespaces=MEDIC_NAMESPACES).to_disk(tmp_path / "linker")
    piped = CliRunner().invoke(app, ["link", str(tmp_path / "linker"), "--mentions", "--json"], input="breast cancer\n")
    assert piped.exit_code == 0, piped.output
    row = json.loads(piped.output)
    assert row["id"] == "MESH:D001943"
    assert row["candidates"][0] == {"id": "MESH:D001943", "name": "breast cancer", "concept_name": "breast cancer",
                                    "score": row["candidates"][0]["score"]}
    assert all(candidate["name"] for candidate in row["candidates"])


def test_link_mentions_are_lines_ended_by_a_line_feed_and_json_lines_split_alike_in_every_reader(
    tmp_path, tiny_encoder, disease_dictionary
):
    runner = CliRunner()
    build = ["build", str(tmp_path / "linker"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary]
    assert runner.invoke(app, build).exit_code == 0
    piped = runner.invoke(app, ["link", str(tmp_path / "linker"), "--mentions", "--json"],
                          input="breast cancer\u2028of carriers\r\ntype 2\x85diabetes\rmellitus\n")
    assert piped.exit_code == 0, piped.output
    # U+2028 and U+0085 are no line ends, but str.splitlines() takes them for some: JSON escapes them
    assert "\u2028" not in piped.output and "\x85" not in piped.output
    assert [json.loads(line)["text"] for line in piped.output.splitlines()] == [
        "breast cancer\u2028of carriers", "type 2\x85diabetes\rmellitus"]


def test_evaluate_end_to_end_runs_the_pipelines_own_ner(tmp_path, tiny_encoder, disease_dictionary):
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")  # stands in for a trained NER
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
    nlp.initialize()
    ruler.add_patterns([{"label": "DISEASE", "pattern": "breast cancer"}, {"label": "DISEASE", "pattern": "gout"}])
    nlp.to_disk(tmp_path / "pipeline")
    corpus = tmp_path / "dev.txt"
    corpus.write_text(
        "1|t|breast cancer, gout and ovarian cancer\n1|a|\n"
        "1\t0\t13\tbreast cancer\tSpecificDisease\tD001943\n"
        "1\t24\t38\tovarian cancer\tSpecificDisease\tD010051\n"
    )
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "pipeline"), str(corpus), "--end-to-end",
                                      "--output", str(tmp_path / "m.json")])
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "m.json").read_text())
    # the ruler finds breast cancer (right) and gout (not gold); it misses ovarian cancer
    assert (metrics["ents_p"], metrics["ents_r"], metrics["link_p"], metrics["link_r"]) == (0.5, 0.5, 0.5, 0.5)
    assert set(metrics) >= {"ents_f", "link_f", "doc_p", "doc_r", "doc_f", "n_docs", "per_type"}
    # a folder of corpora (the project's pooled datasets): each file scored on its own, by its name
    (tmp_path / "pool").mkdir()
    corpus.rename(tmp_path / "pool" / "ncbi-disease.PubTator.txt")
    (tmp_path / "pool" / "other.PubTator.txt").write_text(
        "2|t|gout\n2|a|\n2\t0\t4\tgout\tDisease\tD006073\n")
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "pipeline"), str(tmp_path / "pool"), "--end-to-end",
                                      "--output", str(tmp_path / "pooled.json")])
    assert result.exit_code == 0, result.output
    pooled = json.loads((tmp_path / "pooled.json").read_text())
    assert sorted(pooled) == ["ncbi-disease.PubTator.txt", "other.PubTator.txt"]
    assert pooled["ncbi-disease.PubTator.txt"]["ents_p"] == 0.5 and pooled["other.PubTator.txt"]["ents_f"] == 1.0
    # nothing pooled: nothing scored, said, and an empty record
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["evaluate", str(tmp_path / "pipeline"), str(tmp_path / "empty"), "--end-to-end",
                                      "--output", str(tmp_path / "none.json")])
    assert result.exit_code == 0 and "holds no PubTator file" in result.output
    assert json.loads((tmp_path / "none.json").read_text()) == {}


def test_tune_nil_leaves_an_ner_false_positive_unlinked_and_saves_the_threshold(tmp_path, tiny_encoder, disease_dictionary):
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")  # stands in for a trained NER
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
    nlp.initialize()
    # "hematopoiesis" is no disease: the NER's false positive, whose best name scores low
    ruler.add_patterns([{"label": "Disease", "pattern": p} for p in ("breast cancer", "type 2 diabetes", "hematopoiesis")])
    nlp.to_disk(tmp_path / "pipeline")
    corpus = tmp_path / "dev.txt"
    corpus.write_text("\n".join(
        f"{pmid}|t|breast cancer and type 2 diabetes impair hematopoiesis\n{pmid}|a|\n"
        f"{pmid}\t0\t13\tbreast cancer\tSpecificDisease\tD001943\n"
        f"{pmid}\t18\t33\ttype 2 diabetes\tSpecificDisease\tD003924\n"
        for pmid in range(1, 6)  # 10 gold spans: the fewest tune-nil chooses on
    ))
    result = CliRunner().invoke(app, ["tune-nil", str(tmp_path / "pipeline"), str(corpus), str(tmp_path / "tuned")])
    assert result.exit_code == 0, result.output
    block = load_config(tmp_path / "tuned" / "config.cfg")["components"]["biosyn_linker"]
    threshold = block["nil_threshold"]
    assert threshold is not None and block["nil_threshold_encoder"] == Path(tiny_encoder).name
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # the encoder it was chosen with: no warning
        tuned = spacy.load(tmp_path / "tuned")
    # the threshold copied to a pipe that encodes with another encoder
    with pytest.warns(UserWarning, match=r"nil_threshold .* was chosen with the encoder 'cambridgeltl/SapBERT-from-PubMedBERT-fulltext'"):
        spacy.load(tmp_path / "tuned", config={
            "components": {"biosyn_linker": {"nil_threshold_encoder": "cambridgeltl/SapBERT-from-PubMedBERT-fulltext"}}
        })
    assert tuned.get_pipe("biosyn_linker").nil_threshold == threshold
    doc = tuned("breast cancer and type 2 diabetes impair hematopoiesis")
    assert [(e.text, e._.cui) for e in doc.ents] == [
        ("breast cancer", "D001943"), ("type 2 diabetes", "D003924"), ("hematopoiesis", None)
    ]
    assert spacy.load(tmp_path / "pipeline")(doc.text).ents[2]._.cui is not None  # the source is unchanged
    result = CliRunner().invoke(app, ["tune-nil", str(tmp_path / "pipeline"), str(corpus), str(tmp_path / "dropping"), "--nil-spans", "choose"])
    assert result.exit_code == 0, result.output
    dropping = spacy.load(tmp_path / "dropping")
    assert dropping.get_pipe("biosyn_linker").nil_threshold == threshold
    # dropping the false positive raises dev NER F, so `choose` drops it
    assert [(e.text, e._.cui) for e in dropping(doc.text).ents] == [("breast cancer", "D001943"), ("type 2 diabetes", "D003924")]
    result = CliRunner().invoke(app, ["tune-nil", str(tmp_path / "pipeline"), str(corpus), str(tmp_path / "x"), "--nil-spans", "all"])
    assert result.exit_code != 0 and "--nil-spans" in result.output and not (tmp_path / "x").exists()


def test_evaluate_and_tune_nil_read_the_corpus_types_through_the_label_map(tmp_path, tiny_encoder, disease_dictionary):
    """A corpus typed DiseaseOrSyndrome scores against a Disease NER only
    once --label-map says so; NCBI's four types are the default map."""
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")  # stands in for a trained NER
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
    nlp.initialize()
    ruler.add_patterns([{"label": "Disease", "pattern": p} for p in ("breast cancer", "gout")])
    nlp.to_disk(tmp_path / "pipeline")
    corpus = tmp_path / "dev.txt"
    corpus.write_text("\n".join(
        f"{pmid}|t|breast cancer and gout\n{pmid}|a|\n{pmid}\t0\t13\tbreast cancer\tDiseaseOrSyndrome\tD001943\n"
        f"{pmid}\t18\t22\tgout\tDiseaseOrSyndrome\tD006073\n"
        for pmid in range(1, 6)
    ))
    runner = CliRunner()
    for label_map, f in (([], 0.0), (["--label-map", "DiseaseOrSyndrome=Disease"], 1.0)):
        result = runner.invoke(app, ["evaluate", str(tmp_path / "pipeline"), str(corpus), "--end-to-end",
                                     "--output", str(tmp_path / "metrics.json"), *label_map])
        assert result.exit_code == 0, result.output
        assert srsly.read_json(tmp_path / "metrics.json")["ents_f"] == f
    result = runner.invoke(app, ["tune-nil", str(tmp_path / "pipeline"), str(corpus), str(tmp_path / "tuned"),
                                 "--labels", "Disease"])
    assert result.exit_code != 0 and "0 gold span(s) of the labels Disease" in str(result.exception)
    result = runner.invoke(app, ["tune-nil", str(tmp_path / "pipeline"), str(corpus), str(tmp_path / "tuned"),
                                 "--labels", "Disease", "--label-map", "DiseaseOrSyndrome=Disease"])
    assert result.exit_code == 0, result.output
    # gold spans are linked under their corpus types: a map there would be silently unused
    result = runner.invoke(app, ["evaluate", str(tmp_path / "pipeline"), str(corpus), "--label-map", "A=B"])
    assert result.exit_code != 0 and "--label-map" in result.output
    result = runner.invoke(app, ["tune-nil", str(tmp_path / "pipeline"), str(corpus), str(tmp_path / "x"),
                                 "--label-map", "DiseaseOrSyndrome"])
    assert result.exit_code != 0 and "--label-map" in result.output and not (tmp_path / "x").exists()


@pytest.mark.parametrize("dev", [
    "1|t|breast cancer and type 2 diabetes\n1|a|\n\n2|t|gout\n2|a|\n",  # no annotations
    "1|t|breast cancer and type 2 diabetes\n1|a|\n1\t0\t13\tbreast cancer\tDisease\tD001943\n",  # one document
])
def test_tune_nil_refuses_a_dev_file_too_thin_to_choose_on_and_saves_nothing(tmp_path, tiny_encoder, disease_dictionary, dev):
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "Disease", "pattern": "breast cancer"}])
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "nil_threshold": 0.9})
    nlp.initialize()
    nlp.to_disk(tmp_path / "pipeline")
    (tmp_path / "dev.txt").write_text(dev)
    result = subprocess.run(
        [sys.executable, "-m", "spacy_biosyn", "tune-nil", str(tmp_path / "pipeline"), str(tmp_path / "dev.txt"), str(tmp_path / "tuned")],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert f"{tmp_path / 'dev.txt'}: " in result.stderr and "too few to choose a NIL threshold on" in result.stderr
    assert not (tmp_path / "tuned").exists()
    assert load_config(tmp_path / "pipeline" / "config.cfg")["components"]["biosyn_linker"]["nil_threshold"] == 0.9


def test_assemble_makes_one_pipeline_from_text_to_ids(tmp_path, tiny_encoder, disease_dictionary):
    runner = CliRunner()
    finder = spacy.blank("en")
    finder.add_pipe("entity_ruler").add_patterns([{"label": "Disease", "pattern": [{"LOWER": "breast"}, {"LOWER": "cancer"}]}])
    finder.to_disk(tmp_path / "ner")
    build = ["build", str(tmp_path / "linker"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
             "--sparse-weight", "10"]
    assert runner.invoke(app, build).exit_code == 0
    result = runner.invoke(app, ["assemble", str(tmp_path / "ner"), str(tmp_path / "linker"), str(tmp_path / "both")])
    assert result.exit_code == 0, result.output
    missing = runner.invoke(app, ["assemble", str(tmp_path / "no-ner"), str(tmp_path / "linker"), str(tmp_path / "x")])
    assert missing.exit_code == 1 and "no-ner" in missing.output and not (tmp_path / "x").exists()
    twice = runner.invoke(app, ["assemble", str(tmp_path / "both"), str(tmp_path / "linker"), str(tmp_path / "x")])
    assert twice.exit_code == 1 and "already holds biosyn_linker" in " ".join(twice.output.split())
    swapped = runner.invoke(app, ["assemble", str(tmp_path / "linker"), str(tmp_path / "ner"), str(tmp_path / "x")])
    assert swapped.exit_code == 1 and "no biosyn_linker in it" in " ".join(swapped.output.split())
    nlp = spacy.load(tmp_path / "both")
    assert nlp.pipe_names == ["entity_ruler", "biosyn_document_entities", "biosyn_linker"]
    doc = nlp("Carriers develop Breast Cancer early.")
    assert [(e.text, e._.cui) for e in doc.ents] == [("Breast Cancer", "D001943")]
    alone = ["assemble", str(tmp_path / "ner"), str(tmp_path / "linker"), str(tmp_path / "alone"), "--no-document-entities"]
    assert runner.invoke(app, alone).exit_code == 0
    assert spacy.load(tmp_path / "alone").pipe_names == ["entity_ruler", "biosyn_linker"]


def test_a_scispacy_style_ner_with_upper_case_labels_feeds_the_routes(tmp_path, tiny_encoder, disease_dictionary):
    # en_ner_bc5cdr_md emits DISEASE and CHEMICAL; the corpora and routes say Disease and Chemical.
    runner = CliRunner()
    scispacy_like = spacy.blank("en")
    scispacy_like.add_pipe("entity_ruler").add_patterns([
        {"label": "DISEASE", "pattern": [{"LOWER": "ovarian"}, {"LOWER": "cancer"}]},
        {"label": "CHEMICAL", "pattern": [{"LOWER": "cisplatin"}]},
        {"label": "GENE", "pattern": "BRCA1"},  # a label with no linker: left as it came
    ])
    scispacy_like.to_disk(tmp_path / "ner")
    chemicals = tmp_path / "chemicals.txt"
    chemicals.write_text("D002945||cisplatin\nD004317||doxorubicin\n")
    build = ["build", str(tmp_path / "linker"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
             "--sparse-weight", "10", "--route", f"Chemical={chemicals}", "--dictionary-labels", "Disease"]
    assert runner.invoke(app, build).exit_code == 0
    assemble = ["assemble", str(tmp_path / "ner"), str(tmp_path / "linker"), str(tmp_path / "both")]
    assert runner.invoke(app, assemble).exit_code == 0
    doc = spacy.load(tmp_path / "both")("BRCA1 carriers with ovarian cancer got Cisplatin.")
    assert [(e.text, e.label_, e._.cui, e.kb_id_) for e in doc.ents] == [
        ("BRCA1", "GENE", None, ""), ("ovarian cancer", "DISEASE", "D010051", "D010051"),
        ("Cisplatin", "CHEMICAL", "D002945", "D002945"),
    ]


def test_a_built_pipeline_keeps_no_path_of_this_machine_and_links_as_before(tmp_path, tiny_encoder, disease_dictionary):
    synonyms = tmp_path / "domain.txt"
    synonyms.write_text("D006816||st vitus dance\n")
    chemicals = tmp_path / "chemicals.txt"
    chemicals.write_text("D002945||cisplatin\n")
    train = tmp_path / "train"
    train.mkdir()
    (train / "1.concept").write_text("1||0|13||Disease||breast cancer||D001943\n")
    pipeline = tmp_path / "p"
    args = ["build", str(pipeline), "--encoder", tiny_encoder, "--dictionary", disease_dictionary,
            "--sparse-weight", "10", "--synonyms", str(synonyms), "--preferred-ids-from", str(train),
            "--route", f"Chemical={chemicals}"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    config = (pipeline / "config.cfg").read_text()
    assert str(tmp_path) not in config and str(Path(tiny_encoder).parent) not in config
    moved = tmp_path / "elsewhere" / "p"
    moved.parent.mkdir()
    pipeline.rename(moved)
    nlp = spacy.load(moved)
    doc = nlp.make_doc("St. Vitus' dance and cisplatin")
    doc.ents = [doc.char_span(0, 16, label="Disease"), doc.char_span(21, 30, label="Chemical")]
    assert [e._.cui for e in nlp(doc).ents] == ["D006816", "D002945"]


def test_build_reads_a_mesh_file_and_the_saved_pipeline_says_what_its_ids_mean(tmp_path, tiny_encoder):
    from vocabulary_files import MESH_DESCRIPTORS_BIN

    (tmp_path / "d2025.bin").write_text(MESH_DESCRIPTORS_BIN)
    result = CliRunner().invoke(app, [
        "build", str(tmp_path / "p"), "--encoder", tiny_encoder, "--dictionary", str(tmp_path / "d2025.bin"),
        "--sparse-weight", "10",
    ])
    assert result.exit_code == 0, result.output
    assert "read as mesh (detected" in " ".join(result.output.split())
    nlp = spacy.load(tmp_path / "p")
    doc = nlp.make_doc("Breast cancer in carriers.")
    doc.ents = [doc.char_span(0, 13, label="Disease")]
    span = nlp(doc).ents[0]
    entity = nlp.get_pipe("biosyn_linker").kb.cui_to_entity[span._.cui]
    assert (span._.cui, entity.canonical_name, entity.definition) == ("D001943", "Breast Neoplasms", "Tumors or cancer of the human BREAST.")
    assert entity.types[:2] == ("T191", "C04.588.180")


def test_build_names_a_format_it_does_not_know(tmp_path, tiny_encoder, disease_dictionary):
    result = CliRunner().invoke(app, [
        "build", str(tmp_path / "p"), "--encoder", tiny_encoder, "--dictionary", disease_dictionary, "--format", "rrf",
    ])
    assert result.exit_code != 0 and "--format" in result.output and "ctd-chemicals" in result.output


def _ruler_pipeline(folder, tiny_encoder, disease_dictionary):
    """A pipeline from text to IDs whose entity_ruler stands in for an NER."""
    nlp = spacy.blank("en")
    nlp.add_pipe("entity_ruler").add_patterns([{"label": "Disease", "pattern": "breast cancer"}])
    nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder, "sparse_weight": 10.0})
    nlp.initialize()
    nlp.get_pipe("entity_ruler").add_patterns([{"label": "Disease", "pattern": "breast cancer"}])
    nlp.to_disk(folder)


def test_link_prints_one_texts_entities_from_an_argument_or_standard_input(tmp_path, tiny_encoder, disease_dictionary):
    _ruler_pipeline(tmp_path / "p", tiny_encoder, disease_dictionary)
    text = "Germline breast cancer in carriers."
    table = CliRunner().invoke(app, ["link", str(tmp_path / "p"), text])
    assert table.exit_code == 0, table.output
    assert "breast cancer" in table.stdout and "D001943" in table.stdout
    piped = CliRunner().invoke(app, ["link", str(tmp_path / "p"), "--json"], input=text)
    assert piped.exit_code == 0, piped.output
    (row,) = [json.loads(line) for line in piped.stdout.splitlines()]
    assert (row["start"], row["end"], row["text"], row["id"]) == (9, 22, "breast cancer", "D001943")
    assert row["candidates"][0] == {"id": "D001943", "name": "breast cancer", "concept_name": "breast cancer",
                                    "score": row["score"]}
    # Ab3P's native code prints "tokens differ: <token>" to stdout for a token of ~1,000+ characters:
    # in a process of its own, whose stdout is the file descriptor native code writes to
    dna = "".join(random.Random(0).choice("ACGT") for _ in range(2000))
    long_token = subprocess.run([sys.executable, "-m", "spacy_biosyn", "link", str(tmp_path / "p"), "--json",
                                 f"The sequence ({dna}) of breast cancer (BC) in carriers."],
                                capture_output=True, text=True, timeout=300)
    assert long_token.returncode == 0, long_token.stderr[-2000:]
    assert [json.loads(line)["text"] for line in long_token.stdout.splitlines()] == ["breast cancer"]


def test_link_refuses_a_text_over_max_length_in_one_line_saying_what_to_do(tmp_path, tiny_encoder, disease_dictionary):
    _ruler_pipeline(tmp_path / "p", tiny_encoder, disease_dictionary)
    too_long = subprocess.run([sys.executable, "-m", "spacy_biosyn", "link", str(tmp_path / "p")],
                              input="Germline breast cancer in carriers." * 28572, capture_output=True, text=True,
                              timeout=300)
    assert too_long.returncode == 1 and "Traceback" not in too_long.stderr
    (line,) = too_long.stderr.splitlines()
    assert "1,000,020 characters, over the pipeline's nlp.max_length of 1,000,000: split it" in line


@pytest.mark.parametrize("device, pytorch, runtime", [
    (None, False, "spacy_biosyn.OnnxEncoder.v3"),
    (None, True, "spacy_biosyn.TransformerEncoder.v1"),
    ("cuda", False, "spacy_biosyn.TransformerEncoder.v1"),
])
def test_a_named_linker_is_built_for_the_components_default_runtime_unless_pytorch_is_asked_for(device, pytorch, runtime):
    from spacy_biosyn.cli.common import _named_config

    config = _named_config("medic", None, device, pytorch)
    assert config["encoder"]["@misc"] == runtime
    assert config["encoder"].get("device") == device


@pytest.mark.parametrize("missing", ["fastapi", "pydantic_settings"])
def test_serve_without_the_serve_extra_says_how_to_install_it(tmp_path, missing):
    # In a process of its own, as where the extra is not installed: this one has imported the service already.
    script = hiding(missing) + f"""
import sys
from spacy_biosyn.cli import app
sys.argv = ["spacy_biosyn", "serve", {str(tmp_path)!r}]
app()
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 1 and f"{missing} is missing" in done.stdout and "spacy-biosyn[serve]" in done.stdout, done.stderr


@pytest.mark.parametrize("option, value, says", [
    ("--host", "", "every network"), ("--host", " ", "every network"), ("--request-timeout", "inf", "request-timeout"),
    ("--request-timeout", "nan", "request-timeout"), ("--batch-texts", "1000000000", "batch-texts"),
    ("--port", "0", "port"),
])
def test_serve_refuses_an_address_or_a_number_out_of_range_in_one_line_before_loading(tmp_path, option, value, says):
    result = CliRunner().invoke(app, ["serve", str(tmp_path), option, value])
    assert result.exit_code == 2 and says in result.output and "Traceback" not in result.output


def test_serve_on_a_taken_port_says_so_before_loading_the_pipeline(tmp_path):
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # tmp_path holds no pipeline: the port is told first, before any load
        result = CliRunner().invoke(app, ["serve", str(tmp_path), "--port", str(port)])
    assert result.exit_code == 1 and f"cannot listen on 127.0.0.1:{port}" in result.output
