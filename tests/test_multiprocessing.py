"""nlp.pipe(n_process=2) with the default fork start, and extension values
through DocBin: same links, same types, as one process."""
import pickle
import subprocess
import sys
import textwrap

from spacy.tokens import DocBin

from spacy_biosyn import Candidate, LinkedPart
from spacy_biosyn.preprocess.abbreviations import Abbreviation
from test_component import TEXT, doc_with_ents, make_nlp

FORK_AFTER_TORCH = textwrap.dedent("""
    import os, torch
    import spacy_biosyn.encoders.transformer  # noqa: F401 (the encoder's module registers the fork handler)
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
