"""Stress cases of saved pipelines, settings, corpus runs and scores, one
per finding of the review (issue 64): `CASES`, a list of (finding, run),
`run(workdir)` returning (held, what it did). They use only what older
versions had (spacy.blank + add_pipe, configure_linker, save_pipeline,
spacy.load, link_corpus, link_scores), so findings.py can run them
against an older checkout too. A tiny random encoder keeps each to seconds.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Callable, List, Tuple

Result = Tuple[bool, str]
# MEDIC's layout (CTD_diseases.tsv): "breast cancer" typed by its tree number C04.
MEDIC = (
    "# Fields:\n# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\t"
    "Synonyms\tSlimMappings\n#\n"
    "Breast Neoplasms\tMESH:D001943\t\t\t\tC04.588.180|C17.800.090.500\t\tBreast Cancer|Breast Tumors\t\n"
    "Neoplasms\tMESH:D009369\t\t\t\tC04\t\tTumors|Cancer\t\n"
    "Ovarian Neoplasms\tMESH:D010051\t\t\t\tC04.588.322.455\t\tOvarian Cancer\t\n"
    "Asthma\tMESH:D001249\t\t\t\tC08.127.108\t\tAsthmas\t\n"
    "Type 2 Diabetes\tMESH:D003924\t\t\t\tC18.452.394.750.149\t\tDiabetes Mellitus, Type 2\t\n"
)


def _quiet():
    warnings.simplefilter("ignore")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _pipeline(work: Path, **config):
    """A MEDIC linker pipeline over the rows above, saved in work/p."""
    import spacy

    from spacy_biosyn.encoders.tiny import make_tiny_encoder

    _quiet()
    (work / "CTD_diseases.tsv").write_text(MEDIC)
    encoder = str(make_tiny_encoder(work / "encoder"))
    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={
        "dictionary": {"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": str(work / "CTD_diseases.tsv")},
        "encoder": encoder, "sparse_weight": 10.0, **config,
    })
    nlp.initialize()
    nlp.to_disk(work / "p")
    return nlp


def _link(nlp, text: str, mention: str):
    doc = nlp.make_doc(text)
    start = text.index(mention)
    doc.ents = [doc.char_span(start, start + len(mention), label="Disease")]
    return nlp(doc).ents[0]._.cui


def _refused(action: Callable[[], object]) -> Tuple[bool, str]:
    """(refused, what): an exception's first line, or what the action returned."""
    try:
        value = action()
    except Exception as error:  # noqa: BLE001: the outcome is what is reported
        lines = str(error).strip().splitlines() or [""]
        return True, f"refused, {len(lines)} line(s): {type(error).__name__}: {lines[0][:110]}"
    return False, f"accepted: {value!r}"[:140]


def edited_type_moves_a_link(work: Path) -> Result:
    import spacy

    _pipeline(work, types=["C04"])
    concepts = work / "p" / "biosyn_linker" / "concepts.jsonl"
    concepts.write_text(concepts.read_text().replace("C04.588.180", "X99.588.180"))
    refused, what = _refused(lambda: _link(spacy.load(work / "p"), "Risk of breast cancer.", "breast cancer"))
    return refused and "concepts.jsonl" in what, what


def edited_correction_links(work: Path) -> Result:
    import spacy

    _pipeline(work)
    (work / "p" / "biosyn_linker" / "corrections.json").write_text(json.dumps({"cancer": "asthma"}))
    refused, what = _refused(lambda: _link(spacy.load(work / "p"), "Risk of cancer.", "cancer"))
    return refused and "corrections.json" in what, what


def deleted_concepts_file_loads(work: Path) -> Result:
    import spacy

    _pipeline(work)
    (work / "p" / "biosyn_linker" / "concepts.jsonl").unlink()
    refused, what = _refused(lambda: spacy.load(work / "p").get_pipe("biosyn_linker").engine.name)
    return refused and "concepts.jsonl" in what, what


def saved_threshold_edited(work: Path) -> Result:
    import spacy

    _pipeline(work)
    index = work / "p" / "biosyn_linker" / "index.json"
    meta = json.loads(index.read_text())
    meta["nil_default"]["threshold"] = 0.99
    index.write_text(json.dumps(meta))
    refused, what = _refused(lambda: _link(spacy.load(work / "p"), "Risk of breast cancer.", "breast cancer"))
    return refused and "index.json" in what, what


def index_json_not_an_object(work: Path) -> Result:
    import spacy

    _pipeline(work)
    (work / "p" / "biosyn_linker" / "index.json").write_text("[1, 2, 3]")
    try:
        spacy.load(work / "p")
    except Exception as error:  # noqa: BLE001
        lines = str(error).strip().splitlines()
        return len(lines) == 1 and "index.json" in lines[0], f"{type(error).__name__}, {len(lines)} line(s): {lines[0][:100]}"
    return False, "loaded"


def out_of_range_thresholds(work: Path) -> Result:
    import spacy

    _pipeline(work)
    outcomes = []
    for value in (1.05, 7, -3):
        refused, what = _refused(lambda: spacy.load(work / "p", config={"components.biosyn_linker.nil_threshold": value})
                                 .get_pipe("biosyn_linker").nil_threshold)
        outcomes.append(refused)
    return all(outcomes), f"{sum(outcomes)} of 3 refused (1.05, 7, -3); {what}"


def type_patterns_that_keep_nothing(work: Path) -> Result:
    _quiet()
    outcomes, last = [], ""
    for setting, value in (("types", []), ("types", ["c"]), ("types", ["C "]), ("exclude_types", ["c04"])):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir()
        refused, last = _refused(lambda: _pipeline(work, **{setting: value}) and "built")
        outcomes.append(refused)
    return all(outcomes), f"{sum(outcomes)} of 4 refused (types [], ['c'], ['C '], exclude_types ['c04']); {last}"


def config_strings_that_do_not_survive(work: Path) -> Result:
    import spacy

    from spacy_biosyn import configure_linker, save_pipeline

    _pipeline(work)
    outcomes, last = [], ""
    for change in ({"id_namespaces": {"A=B": "x"}}, {"id_namespaces": {"A\nB": "x"}}, {"types": ["${a}"]},
                   {"nil_threshold_encoder": "${x}"}):
        nlp = spacy.load(work / "p")
        refused, last = _refused(lambda: configure_linker(nlp, **change) and save_pipeline(nlp, work / "p"))
        loads, _ = _refused(lambda: spacy.load(work / "p"))
        outcomes.append(refused and not loads)
    return all(outcomes), f"{sum(outcomes)} of 4 refused before the save, the pipeline intact; {last}"


def encoder_override_on_load(work: Path) -> Result:
    import spacy

    _quiet()
    from spacy_biosyn.encoders.tiny import make_tiny_encoder

    encoder = {"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": str(make_tiny_encoder(work / "encoder")),
               "max_length": 25}
    _pipeline(work, encoder=encoder)
    refused, what = _refused(lambda: spacy.load(work / "p", config={"components.biosyn_linker.encoder.max_length": 10})
                             .config["components"]["biosyn_linker"]["encoder"]["max_length"])
    return refused, what


def from_bytes_odd_names(work: Path) -> Result:
    import srsly

    nlp = _pipeline(work)
    pipe = nlp.get_pipe("biosyn_linker")
    files = srsly.msgpack_loads(pipe.to_bytes())
    outcomes = []
    for name in (".", "", "cfg/x", "a\x00b", "/".join(["d"] * 2000)):
        try:
            pipe.from_bytes(srsly.msgpack_dumps({**files, name: b"x"}))
            outcomes.append((False, "accepted"))
        except Exception as error:  # noqa: BLE001
            lines = str(error).strip().splitlines()
            outcomes.append((len(lines) == 1 and "from_bytes" in str(error), f"{type(error).__name__}, {len(lines)} line(s)"))
    return all(ok for ok, _ in outcomes), f"{sum(ok for ok, _ in outcomes)} of 5 refused in one line; " + ", ".join(
        what for _, what in outcomes[:3])


def _ruled_pipeline(work: Path, seed: int) -> None:
    """The MEDIC pipeline with an entity_ruler for an NER, its encoder made with `seed`."""
    import spacy

    from spacy_biosyn.encoders.tiny import make_tiny_encoder

    _quiet()
    shutil.rmtree(work / "encoder", ignore_errors=True)
    encoder = str(make_tiny_encoder(work / "encoder", seed=seed))
    (work / "CTD_diseases.tsv").write_text(MEDIC)
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    nlp.add_pipe("biosyn_linker", config={
        "dictionary": {"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": str(work / "CTD_diseases.tsv")},
        "encoder": encoder, "sparse_weight": 10.0,
    })
    nlp.initialize()
    ruler.add_patterns([{"label": "Disease", "pattern": "breast cancer"}])  # after initialize, which empties it
    nlp.to_disk(work / "p")


def killed_run_leaves_workers(work: Path) -> Result:
    import psutil

    _ruled_pipeline(work, seed=0)
    texts = [{"id": f"d{i}", "text": f"Risk of breast cancer in carriers {i}."} for i in range(4000)]
    (work / "in.jsonl").write_text("".join(json.dumps(t) + "\n" for t in texts))
    command = [sys.executable, "-m", "spacy_biosyn", "link-corpus", str(work / "p"), str(work / "in.jsonl"),
               str(work / "out"), "--workers", "2", "--shard-size", "20", "--output-format", "jsonl"]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list((work / "out").glob("*.jsonl")) and time.monotonic() < deadline:
        time.sleep(0.2)
    workers = psutil.Process(run.pid).children(recursive=True)
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    _, alive = psutil.wait_procs(workers, timeout=10)
    rerun = subprocess.run(command, capture_output=True, text=True, timeout=300)
    for process in alive:
        process.kill()
    said = (rerun.stderr.strip().splitlines() or [""])[-1][:90]
    return not alive and rerun.returncode == 0, (
        f"{len(alive)} of {len(workers)} workers alive 10 s after kill -9; re-run exit {rerun.returncode}"
        + ("" if rerun.returncode == 0 else f": {said}")
    )


def rebuilt_pipeline_resumes(work: Path) -> Result:
    from spacy_biosyn.corpus_linking import link_corpus

    _ruled_pipeline(work, seed=0)
    texts = [{"id": f"d{i}", "text": f"Risk of breast cancer in carriers {i}."} for i in range(40)]
    (work / "in.jsonl").write_text("".join(json.dumps(t) + "\n" for t in texts))
    options = dict(output_format="jsonl", shard_size=20, progress=False)
    link_corpus(work / "p", work / "in.jsonl", work / "out", **options)
    sorted((work / "out").glob("*.jsonl"))[-1].unlink()  # as a run killed before its last shard
    _ruled_pipeline(work, seed=1)  # rebuilt in place: other weights, files of the same sizes
    refused, what = _refused(lambda: f"resumed, {link_corpus(work / 'p', work / 'in.jsonl', work / 'out', **options)['shards']} "
                             "shard(s) linked by the new pipeline beside the old one's")
    return refused, what


def composite_gold_full_credit(work: Path) -> Result:
    import spacy
    from spacy.tokens import Span
    from spacy.training import Example

    from spacy_biosyn.pipeline.accuracy import link_scores

    nlp = _pipeline(work)
    text = "Breast cancer in carriers."

    def doc(kb_id=""):
        d = nlp.make_doc(text)
        d.ents = [Span(d, 0, 2, label="Disease", kb_id=kb_id)]
        return d

    predicted = nlp(doc())
    scores = link_scores([Example(predicted, doc("MESH:D001943|MESH:D010051"))])
    held = scores["link_acc_1"] == 1.0 and scores["link_cui_acc"] == 0.0
    return held, f"gold D001943|D010051, linked {predicted.ents[0]._.cui}: Acc@1 {scores['link_acc_1']:.0%}, cui_acc {scores['link_cui_acc']:.0%}"


CASES: List[Tuple[str, Callable[[Path], Result]]] = [
    ("edited type in concepts.jsonl", edited_type_moves_a_link),
    ("edited corrections.json", edited_correction_links),
    ("deleted concepts.jsonl", deleted_concepts_file_loads),
    ("edited saved threshold (index.json)", saved_threshold_edited),
    ("index.json valid JSON, not an object", index_json_not_an_object),
    ("nil_threshold 1.05, 7, -3", out_of_range_thresholds),
    ("types that keep nothing", type_patterns_that_keep_nothing),
    ("config strings that do not survive a save", config_strings_that_do_not_survive),
    ("encoder.max_length overridden on load", encoder_override_on_load),
    ("from_bytes with odd file names", from_bytes_odd_names),
    ("kill -9 of link-corpus --workers 2", killed_run_leaves_workers),
    ("pipeline rebuilt in place, run resumed", rebuilt_pipeline_resumes),
    ("composite gold, one part linked", composite_gold_full_credit),
]
