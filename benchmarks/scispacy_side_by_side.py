"""spacy-biosyn beside scispacy's linker on the same dictionary (issue 5, benchmark 4).

    python -m benchmarks.scispacy_side_by_side PIPELINE [PIPELINE ...] --scispacy-python VENV/bin/python
                                               [--dataset ncbi-disease]

scispacy pins numpy < 2 and its index builder needs scipy < 1.11 (Python
3.10), so it cannot share this project's environment; it runs in its own,
made for example with

    python3.10 -m venv /tmp/scivenv && /tmp/scivenv/bin/pip install scispacy==0.6.2 "scipy<1.11"

Both linkers are built, in the same run and in fresh processes, over the
dataset's dev dictionary (MEDIC for NCBI), and link BioSyn's processed dev
mentions, one single-entity Doc each, through their spaCy components:
- scispacy: `create_tfidf_ann_index` (char-3-gram tf-idf in an nmslib HNSW
  index, its own hyper-parameters) and its `EntityLinker` with abbreviation
  resolution off, no definition filter (MEDIC has no definitions) and no
  score threshold, so that every mention gets its ranked concepts;
- spacy-biosyn: PIPELINE's linker rebuilt over the dictionary (encoding every
  name), its settings as saved (the mentions arrive split already).
Acc@k is scored by the same code for both. Peak memory is each process's
VmHWM, building and linking included. Each spacy-biosyn row also gives its
mentions/s over scispacy's and over its encoder's alone on the same
(normalized) strings.
"""
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

K = 5
SCISPACY_THRESHOLD = 0.7  # scispacy's default, reported as the share of mentions it would leave unlinked


def main() -> None:
    from benchmarks.common import REPO, parser, pct, print_table
    from spacy_biosyn.corpora.readers import read_concept_queries
    from spacy_biosyn.pipeline.accuracy import accuracy
    from spacy_biosyn.ty import Candidate

    p = parser(__doc__)
    p.add_argument("pipelines", type=Path, nargs="+", help="spacy-biosyn pipelines, each measured")
    p.add_argument("--scispacy-python", required=True, help="python of an environment with scispacy")
    p.add_argument("--dataset", default="ncbi-disease")
    args = p.parse_args()
    queries = read_concept_queries(args.data / args.dataset / "processed_dev")
    parts = [q.mention.replace("+", "|").split("|") for q in queries]
    dictionary = args.data / args.dataset / "dev_dictionary.txt"
    rows, scispacy_rate = [], None
    with tempfile.TemporaryDirectory() as tmp:
        texts = Path(tmp) / "texts.json"
        texts.write_text(json.dumps([p for query_parts in parts for p in query_parts]))
        for system, python, pipeline in (
            ("scispacy 0.6.2 (tf-idf char-3-grams, nmslib HNSW)", args.scispacy_python, "-"),
            *((f"spacy-biosyn ({pipeline})", sys.executable, str(pipeline)) for pipeline in args.pipelines),
        ):
            out = subprocess.run(
                [python, "-m", "benchmarks.scispacy_side_by_side", "--link", system.split()[0], str(dictionary), str(texts),
                 pipeline, str(Path(tmp) / "index")],
                check=True, stdout=subprocess.PIPE, text=True, cwd=REPO,
            ).stdout
            result = json.loads(out.strip().splitlines()[-1])
            ranked = iter([[Candidate("", (tuple(cuis),), s) for cuis, s in r] for r in result["ranked"]])
            predictions = [[next(ranked) for _ in query_parts] for query_parts in parts]
            m = accuracy(predictions, [q.cui for q in queries], K)
            n = len(result["ranked"])
            rate = n / result["link_s"]
            scispacy_rate = scispacy_rate or rate  # scispacy runs first
            rows.append((
                system, pct(m['link_acc_1']), pct(m['link_acc_5']), f"{result['build_s']:.0f}",
                f"{rate:.0f}", f"{rate / scispacy_rate:.2f}",
                f"{result['raw_encoder_s'] / result['link_s']:.2f}" if "raw_encoder_s" in result else "",
                f"{result['peak_gib']:.2f}",
                f"{result['below_threshold']:.1f}" if "below_threshold" in result else "",
            ))
            print(json.dumps({k: v for k, v in result.items() if k != "ranked"}), flush=True)
    print(f"\n{len(queries)} {args.dataset} dev queries ({n} mentions), dictionary {dictionary}\n")
    header = ("linker", "acc@1", "acc@5", "build s", "mentions/s", "x scispacy's mentions/s",
              "x its raw encoder on the same strings", "peak GiB", f"% top-1 below {SCISPACY_THRESHOLD}")
    print_table(header, rows)


def link_with_scispacy(dictionary: Path, texts, index_dir: Path) -> dict:
    import spacy
    from scispacy.candidate_generation import CandidateGenerator, create_tfidf_ann_index
    from scispacy.linking import EntityLinker
    from scispacy.linking_utils import Entity, KnowledgeBase

    # One KB entity per CUI field: a MEDIC name listing a MeSH and an OMIM ID
    # stays one candidate carrying both, as it is for spacy-biosyn and under
    # BioSyn's rule. One entity per ID would split it into two candidates
    # that tie, and rank 1 would be a coin toss between them.
    aliases = {}
    for line in dictionary.read_text(encoding="utf-8").splitlines():
        cui_field, _, name = line.partition("||")
        aliases.setdefault(cui_field, []).append(name)
    kb = KnowledgeBase([
        Entity(concept_id=field, canonical_name=names[0], aliases=names[1:]) for field, names in aliases.items()
    ])
    index_dir.mkdir()
    start = time.perf_counter()
    concept_aliases, vectorizer, ann_index = create_tfidf_ann_index(str(index_dir), kb)
    build_s = time.perf_counter() - start
    nlp = spacy.blank("en")
    linker = EntityLinker(
        nlp,
        candidate_generator=CandidateGenerator(ann_index, vectorizer, concept_aliases, kb),
        resolve_abbreviations=False, threshold=0.0, filter_for_definitions=False,
        max_entities_per_mention=K,
    )
    docs = _single_entity_docs(nlp, texts)
    start = time.perf_counter()
    docs = [linker(doc) for doc in docs]
    link_s = time.perf_counter() - start
    ranked = [[[field.split("|"), score] for field, score in doc.ents[0]._.kb_ents] for doc in docs]
    below = sum(not r or r[0][1] <= SCISPACY_THRESHOLD for r in ranked)
    return {"build_s": build_s, "link_s": link_s, "ranked": ranked,
            "below_threshold": 100 * below / len(ranked)}


def link_with_biosyn(pipeline: Path, dictionary: Path, texts) -> dict:
    import spacy

    from spacy_biosyn.kb.dictionary import Dictionary
    from spacy_biosyn.preprocess.text import normalize

    nlp = spacy.load(pipeline)
    component = nlp.get_pipe("biosyn_linker")
    component.top_k = K
    docs = _single_entity_docs(nlp, texts)
    start = time.perf_counter()
    component.engine.set_dictionary(Dictionary.from_file(dictionary), refit_sparse=True)
    # The build ends with the first link, which derives the NIL default (2.5 s, once).
    list(component.pipe(docs[:1]))
    build_s = time.perf_counter() - start
    component.engine.clear_caches()
    start = time.perf_counter()
    docs = list(component.pipe(docs))
    link_s = time.perf_counter() - start
    ranked = [[[list(c.cuis), c.score] for c in doc.ents[0]._.candidates] for doc in docs]
    # The encoder alone on the same strings, as the component gets them (normalized).
    strings = [normalize(text) for text in texts]
    start = time.perf_counter()
    component.engine.encoder.encode(strings)
    return {"build_s": build_s, "link_s": link_s, "raw_encoder_s": time.perf_counter() - start, "ranked": ranked}


def _single_entity_docs(nlp, texts):
    from spacy.tokens import Doc, Span

    docs = []
    for text in texts:
        doc = Doc(nlp.vocab, words=text.split())
        doc.ents = [Span(doc, 0, len(doc), label="ENTITY")]
        docs.append(doc)
    return docs


def _link_main() -> None:
    from benchmarks.common import memory_gib

    system, dictionary, texts, pipeline, index_dir = sys.argv[2:]
    texts = json.loads(Path(texts).read_text())
    if system == "scispacy":
        # Not on the path: spaCy would load the entry points that this
        # checkout's egg-info names, from a package scispacy's environment lacks.
        checkout = Path(__file__).resolve().parents[1]
        sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != checkout]
        result = link_with_scispacy(Path(dictionary), texts, Path(index_dir))
    else:
        result = link_with_biosyn(Path(pipeline), Path(dictionary), texts)
    print(json.dumps({"system": system, **result, "peak_gib": memory_gib("VmHWM")}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--link"]:
        _link_main()
    else:
        main()
