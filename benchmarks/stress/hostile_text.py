"""A text pipeline (NER + linker) under the inputs and process set-ups that
hung it or made it silently wrong: one long unbroken token, nlp.pipe with
two processes, link-corpus with two workers of two threads, and
--gold-spans rows beside a pipeline that drops unlinked spans. Each case
runs in a fresh process with a time limit, so a hang is a row, not a stop.

    python -m benchmarks.stress.hostile_text PIPELINE [--docs 40] [--limit 600] [--checkout DIR]

--checkout runs the same cases against another checkout of spacy-biosyn
(its package first on the path), e.g. an older commit in a git worktree.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from benchmarks.common import RAW_ABSTRACTS, cpu_description, parser, print_table

LONG_TOKEN = textwrap.dedent("""
    import sys, time, spacy
    nlp = spacy.load(sys.argv[1]); nlp.max_length = 10**7
    n = int(sys.argv[2])
    nlp("Breast cancer and ovarian cancer.")  # warm
    start = time.perf_counter()
    doc = nlp("Breast cancer and ovarian cancer. " + "ACGT" * (n // 4) + " in carriers.")
    print(time.perf_counter() - start, [(e.text, e._.cui) for e in doc.ents])
""")

TWO_PROCESSES = textwrap.dedent("""
    import json, sys, time, spacy
    nlp = spacy.load(sys.argv[1])
    texts = [json.loads(line)["text"] for line in open(sys.argv[2])]
    links = lambda docs: [[(e.start_char, e.end_char, e._.cui) for e in d.ents] for d in docs]
    start = time.perf_counter(); one = links(nlp.pipe(texts)); one_s = time.perf_counter() - start
    start = time.perf_counter(); two = links(nlp.pipe(texts, n_process=2, batch_size=8)); two_s = time.perf_counter() - start
    print(json.dumps([one_s, two_s, one == two, sum(map(len, one))]))
""")

LINK_CORPUS = textwrap.dedent("""
    import json, sys, time, warnings
    from spacy_biosyn.corpus_linking import link_corpus, read_rows, row_differences
    pipeline, corpus, out = sys.argv[1:4]
    warnings.simplefilter("ignore")
    run = dict(shard_size=10, progress=False)
    start = time.perf_counter(); link_corpus(pipeline, corpus, out + "/one", **run); one_s = time.perf_counter() - start
    start = time.perf_counter(); link_corpus(pipeline, corpus, out + "/two", workers=2, threads=2, **run)
    two_s = time.perf_counter() - start
    one, two = read_rows(out + "/one"), read_rows(out + "/two")
    print(json.dumps([one_s, two_s, len(one), len(two), len(row_differences(one, two))]))
""")

GOLD_SPANS = textwrap.dedent("""
    import json, sys
    from spacy_biosyn.corpora.readers import read_pubtator
    from spacy_biosyn.corpus_linking import link_corpus, read_rows
    pipeline, corpus, out = sys.argv[1:4]
    link_corpus(pipeline, corpus, out, gold_spans=True, output_format="jsonl", progress=False)
    gold = {(d.doc_id, a.start, a.end): a.cui for d in read_pubtator(corpus) for a in d.annotations}
    rows = read_rows(out)
    wrong = sum(1 for r in rows if gold.get((r["doc_id"], r["start"], r["end"])) != r["gold_id"])
    print(json.dumps([len(gold), len(rows), wrong]))
""")


def run(script: str, args, limit: float, env) -> tuple:
    """(seconds, the script's last line or None when it ran past `limit`, stderr's tail)."""
    start = time.perf_counter()
    # A session of its own: a hung case's forked workers are ended with it, not left behind.
    process = subprocess.Popen([sys.executable, "-c", script, *map(str, args)], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return time.perf_counter() - start, None, "timed out"
    lines = stdout.strip().splitlines()
    return time.perf_counter() - start, (lines[-1] if lines and process.returncode == 0 else None), stderr[-300:]


def main() -> None:
    p = parser(__doc__)
    p.add_argument("pipeline", type=Path)
    p.add_argument("--docs", type=int, default=40, help="NCBI dev abstracts for the process and gold-span cases")
    p.add_argument("--limit", type=float, default=600.0, help="seconds a case may take before it counts as a hang")
    p.add_argument("--lengths", type=int, nargs="+", default=[2_000, 4_000, 8_000, 16_000, 200_000])
    p.add_argument("--checkout", type=Path, help="another spacy-biosyn checkout to run the cases against")
    args = p.parse_args()
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    if args.checkout:
        env["PYTHONPATH"] = str(args.checkout.resolve())
    print(f"CPU: {cpu_description()}; code: {args.checkout or 'this checkout'}; pipeline: {args.pipeline}")

    rows = []
    for n in args.lengths:
        seconds, line, error = run(LONG_TOKEN, [args.pipeline, n], args.limit, env)
        rows.append((f"one {n:,}-character token", f"{float(line.split()[0]):.2f} s" if line else f"> {seconds:.0f} s ({error})", ""))
    from spacy_biosyn.corpora.readers import read_pubtator

    documents = read_pubtator(args.data / RAW_ABSTRACTS["ncbi-disease"]["dev"])[: args.docs]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "abstracts.jsonl").write_text("".join(json.dumps({"id": d.doc_id, "text": d.text}) + "\n" for d in documents))
        blocks = [f"{d.doc_id}|t|{d.text}\n{d.doc_id}|a|\n" + "".join(
            f"{d.doc_id}\t{a.start}\t{a.end}\t{a.text}\t{a.label}\t{a.cui}\n" for a in d.annotations) for d in documents]
        (tmp / "abstracts.txt").write_text("\n".join(blocks))

        seconds, line, error = run(TWO_PROCESSES, [args.pipeline, tmp / "abstracts.jsonl"], args.limit, env)
        if line:
            one_s, two_s, same, n_ents = json.loads(line)
            rows.append((f"nlp.pipe, {args.docs} abstracts", f"1 process {one_s:.1f} s, n_process=2 {two_s:.1f} s",
                         f"{n_ents} entities, identical: {same}"))
        else:
            rows.append((f"nlp.pipe, {args.docs} abstracts", f"n_process=2: > {seconds:.0f} s ({error})", ""))
        seconds, line, error = run(LINK_CORPUS, [args.pipeline, tmp / "abstracts.jsonl", tmp / "corpus"], args.limit, env)
        if line:
            one_s, two_s, n_one, n_two, differences = json.loads(line)
            rows.append(("link-corpus", f"1 worker {one_s:.1f} s, --workers 2 --threads 2 {two_s:.1f} s",
                         f"rows {n_one} / {n_two}, {differences} differ"))
        else:
            rows.append(("link-corpus", f"--workers 2 --threads 2: > {seconds:.0f} s ({error})", ""))
        seconds, line, error = run(GOLD_SPANS, [args.pipeline, tmp / "abstracts.txt", tmp / "gold"], args.limit, env)
        if line:
            annotations, n_rows, wrong = json.loads(line)
            rows.append(("link-corpus --gold-spans", f"{annotations} annotations, {n_rows} rows",
                         f"{wrong} rows with another annotation's gold ID"))
        else:
            rows.append(("link-corpus --gold-spans", f"failed ({error})", ""))
    print_table(("case", "time or count", "result"), rows)


if __name__ == "__main__":
    main()
