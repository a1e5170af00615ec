"""nlp.pipe(n_process=2) with the default fork start, and extension values
through DocBin: same links, same types, as one process."""
import json
import pickle
import subprocess
import sys
import textwrap

from helpers import TEXT, doc_with_ents, make_nlp
from spacy.tokens import DocBin

from spacy_biosyn.corpus_linking import row_differences
from spacy_biosyn.ty import Abbreviation, Candidate, LinkedPart

FORK_AFTER_TORCH = textwrap.dedent("""
    import os, torch
    import spacy_biosyn  # noqa: F401 (the package registers the fork handler, whatever encoder serves)
    torch.ones(1500, 1500) @ torch.ones(1500, 1500)  # starts torch's thread pool, as spacy.load does
    pid = os.fork()
    if pid == 0:
        torch.ones(1500, 1500) @ torch.ones(1500, 1500)
        os._exit(0 if torch.get_num_threads() == 1 else 3)
    raise SystemExit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
""")


def test_a_child_forked_after_torch_ran_does_not_hang():
    result = subprocess.run([sys.executable, "-c", FORK_AFTER_TORCH], timeout=120, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


TEXT_PIPELINE_RUN = textwrap.dedent("""
    import json, sys, spacy
    from spacy_biosyn.corpus_linking import link_corpus, read_rows
    pipeline, corpus, output = sys.argv[1:]
    nlp = spacy.load(pipeline)
    texts = [json.loads(line)["text"] for line in open(corpus)]
    links = lambda docs: [[(e.text, e.label_, e._.cui, e._.kb_ents) for e in doc.ents] for doc in docs]
    one = links(nlp.pipe(texts))  # torch's thread pool runs in this process before the fork
    two = links(nlp.pipe(texts, n_process=2, batch_size=2))
    run = dict(shard_size=3, batch_size=2, progress=False)
    link_corpus(pipeline, corpus, output + "/one", **run)
    link_corpus(pipeline, corpus, output + "/two", workers=2, threads=2, **run)
    print(json.dumps({"one": one, "two": two, "rows_one": read_rows(output + "/one"), "rows_two": read_rows(output + "/two")}))
""")


def test_the_text_pipeline_links_in_two_processes_as_in_one(text_pipeline, tmp_path):
    """The README's shape of pipeline, small: a transformer NER in PyTorch and
    the linker in ONNX Runtime (so no module of the linker imports torch)."""
    texts = [f"Breast cancer and ovarian cancer in {i} carriers of BRCA1." for i in range(6)]
    (tmp_path / "texts.jsonl").write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(texts)))
    result = subprocess.run(
        [sys.executable, "-c", TEXT_PIPELINE_RUN, str(text_pipeline), str(tmp_path / "texts.jsonl"), str(tmp_path)],
        timeout=300, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["one"] == out["two"] and sum(map(len, out["one"])) >= 12
    assert row_differences(out["rows_one"], out["rows_two"]) == [] and len(out["rows_two"]) == len(out["rows_one"])


def links(doc):
    return [(e.text, e._.cui, e.kb_id_, e._.kb_ents, e._.concept_ids, e._.candidates, e._.parts) for e in doc.ents]


def test_two_processes_link_as_one_and_keep_the_types(tmp_path, tiny_encoder, disease_dictionary):
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    nlp.to_disk(tmp_path / "pipeline")
    script = textwrap.dedent(f"""
        import pickle, spacy
        nlp = spacy.load({str(tmp_path / "pipeline")!r})
        docs = pickle.load(open({str(tmp_path / "docs.pickle")!r}, "rb"))
        linked = list(nlp.pipe(docs, n_process=2, batch_size=2))
        pickle.dump([[(e.text, e._.cui, e.kb_id_, e._.kb_ents, e._.concept_ids, e._.candidates, e._.parts)
                      for e in doc.ents] for doc in linked], open({str(tmp_path / "links.pickle")!r}, "wb"))
    """)
    docs = [doc_with_ents(nlp, TEXT, "Breast-Cancer", "Ovarian Cancer", "Type 2 Diabetes") for _ in range(6)]
    (tmp_path / "docs.pickle").write_bytes(pickle.dumps(docs))
    result = subprocess.run([sys.executable, "-c", script], timeout=300, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    two = pickle.loads((tmp_path / "links.pickle").read_bytes())
    one = [links(doc) for doc in nlp.pipe(docs)]
    assert two == one
    first = two[0][0]
    assert isinstance(first[5][0], Candidate) and isinstance(first[6][0], LinkedPart)
    assert first[5][0].concepts == (("D001943",),)


def test_a_docbin_round_trip_keeps_links_and_types(tiny_encoder, disease_dictionary):
    nlp = make_nlp(tiny_encoder, disease_dictionary)
    doc = nlp(doc_with_ents(nlp, "Spinocerebellar ataxia type 1 (SCA1): SCA1 and breast cancer.", "SCA1", "breast cancer"))
    data = DocBin(docs=[doc], store_user_data=True).to_bytes()
    back = list(DocBin().from_bytes(data).get_docs(nlp.vocab))[0]
    assert links(back) == links(doc)
    assert isinstance(back.ents[1]._.candidates[0], Candidate)
    assert back._.biosyn_abbreviations == doc._.biosyn_abbreviations
    assert isinstance(back._.biosyn_abbreviations[0], Abbreviation)
