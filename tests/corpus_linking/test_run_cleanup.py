"""A killed corpus run leaves nothing behind that stops the next one: its
forked workers die with it (even by SIGKILL) and release the output
folder, and a run resumes only with the very pipeline it started with."""
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
import spacy

from spacy_biosyn.corpus_linking import link_corpus
from spacy_biosyn.errors import CorpusError
from helpers import DISEASES

TEXTS = ["Breast cancer and type 2 diabetes in carriers {i}.", "Huntington chorea, case {i}."]
PATTERNS = [{"label": "Disease", "pattern": [{"LOWER": "breast"}, {"LOWER": "cancer"}]},
            {"label": "Disease", "pattern": [{"LOWER": "huntington"}, {"LOWER": "chorea"}]}]


def _pipeline(folder, encoder, sparse_weight=10.0):
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    nlp.add_pipe("biosyn_linker", config={"dictionary": str(folder / "diseases.txt"), "encoder": encoder,
                                          "sparse_weight": sparse_weight})
    nlp.initialize()
    ruler.add_patterns(PATTERNS)
    nlp.to_disk(folder / "pipeline")


@pytest.fixture
def corpus(tmp_path, tiny_encoder):
    (tmp_path / "diseases.txt").write_text(DISEASES)
    _pipeline(tmp_path, tiny_encoder)
    documents = [{"id": f"pmid{i}", "text": TEXTS[i % 2].format(i=i)} for i in range(4000)]
    (tmp_path / "abstracts.jsonl").write_text("".join(json.dumps(d) + "\n" for d in documents))
    return tmp_path


@pytest.mark.skipif(sys.platform != "linux", reason="workers die with their run through Linux's PR_SET_PDEATHSIG")
def test_workers_of_a_killed_run_die_with_it_and_the_rerun_takes_the_folder(corpus):
    command = [sys.executable, "-m", "spacy_biosyn", "link-corpus", str(corpus / "pipeline"), str(corpus / "abstracts.jsonl"),
               str(corpus / "out"), "--workers", "2", "--shard-size", "20", "--output-format", "jsonl"]
    run = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list((corpus / "out").glob("*.jsonl")) and time.monotonic() < deadline:  # linking by now
        time.sleep(0.2)
    workers = psutil.Process(run.pid).children(recursive=True)
    assert len(workers) >= 2 and run.poll() is None
    os.kill(run.pid, signal.SIGKILL)
    run.wait()
    gone, alive = psutil.wait_procs(workers, timeout=10)
    assert alive == []
    summary = link_corpus(corpus / "pipeline", corpus / "abstracts.jsonl", corpus / "out", output_format="jsonl",
                          shard_size=20, progress=False)  # resumed, not "another run is writing"
    assert summary["skipped_shards"] > 0


def test_a_pipeline_rebuilt_in_place_is_not_resumed(corpus, other_tiny_encoder):
    first = dict(output_format="jsonl", shard_size=1000, progress=False)
    link_corpus(corpus / "pipeline", corpus / "abstracts.jsonl", corpus / "out", **first)
    _pipeline(corpus, other_tiny_encoder)  # the same files, of the same sizes, other weights
    with pytest.raises(CorpusError, match="holds a run of another pipeline"):
        link_corpus(corpus / "pipeline", corpus / "abstracts.jsonl", corpus / "out", **first)


@pytest.mark.skipif(sys.platform != "linux", reason="workers die with their run through Linux's PR_SET_PDEATHSIG")
def test_a_workers_own_children_are_its_business():
    from spacy_biosyn.corpus_linking.worker import workers_die_with_this_process

    with workers_die_with_this_process():
        worker = os.fork()
        if worker == 0:  # a worker whose component forks a process of its own
            grandchild = os.fork()
            if grandchild == 0:
                os._exit(0)
            os._exit(os.waitpid(grandchild, 0)[1] >> 8)
        assert os.waitpid(worker, 0)[1] >> 8 == 0
