"""Fuzz cases: random documents, spans, dictionaries, corpora and configs,
each run once and judged.

A case is made from a seeded `random.Random`, so the suite (test_fuzz.py,
driven by hypothesis) and the benchmark (benchmarks/stress/fuzz.py, thousands of
seeds in a watched worker process that may crash or hang) run the same
cases. `run_case` returns an outcome:
- "ok";
- "unclear error": an exception that is not a ValueError naming the file or
  the setting at fault;
- "wrong result": output of the wrong shape, a link that changes with the
  batch, a file read back differently than written.
Crashes and hangs are what the benchmark's watcher sees.
"""
import json
import os
import random
import select
import string
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import spacy
from spacy.tokens import Doc, Span

from spacy_biosyn.corpora.documents import Document
from spacy_biosyn.ner.tokenizer import add_biomedical_rules

CATEGORIES = ("documents", "spans", "dictionaries", "corpora", "configs", "texts", "outputs")

DICTIONARY = """\
114480|D001943||breast cancer
D001943||breast neoplasms
D010051|167000||ovarian cancer
D003924||type 2 diabetes
D006816||huntington disease
163000||cmc
D005348||cystic mastitis chronic
D010300||parkinson disease
"""
WORDS = ["breast", "cancer", "ovarian", "and", "or", "type", "2", "diabetes", "CMC", "(", ")", "SCA1",
         "Parkinson's", "disease", ",", "/", "-", ".", "café", "Schwartz–Jampel", "α", "患者", "🙂", "\t", "\n"]


def _text(rng: random.Random) -> str:
    """Text from disease words, punctuation, non-ASCII and, rarely, the
    inputs that break native code: huge words, deep parentheses."""
    roll = rng.random()
    if roll < 0.02:
        return "cancer " + "x" * rng.choice([100_001, 250_000])
    if roll < 0.04:
        depth = rng.choice([13_000, 25_000])
        return "Breast cancer (BC) " + "(" * depth + "x" + ")" * depth
    if roll < 0.06:
        return "breast cancer (BC) " * rng.randint(5_000, 20_000)
    if roll < 0.07:  # a definition across the edge of the 10,000 characters Ab3P is given at once
        return ("patients were studied " * 454)[: rng.randint(9_960, 9_999)] + " spinal muscular atrophy (SMA) is frequent. We saw SMA in 3 cases."
    words = [rng.choice(WORDS) if rng.random() < 0.8 else "".join(
        rng.choice(string.printable + "éü–—\u00a0\u200b") for _ in range(rng.randint(1, 8)))
        for _ in range(rng.randint(0, 60))]
    return " ".join(words)


def _doc(nlp: spacy.Language, text: str) -> Doc:
    """The text as the text pipelines tokenize it: with the biomedical rules,
    which keep 25,000 nested parentheses as one token where spaCy's own
    rules take minutes."""
    doc = nlp.make_doc(text)
    return doc if len(doc) else Doc(nlp.vocab, words=["."])


def _spans(rng: random.Random, doc: Doc, n: int) -> List[Span]:
    starts = sorted(rng.sample(range(len(doc)), min(n, len(doc))))
    spans, end = [], 0
    for start in starts:
        if start >= end:
            end = min(len(doc), start + rng.randint(1, 6))
            spans.append(Span(doc, start, end, label=rng.choice(["Disease", "DISEASE", "Chemical"])))
    return spans


def _check_links(doc: Doc, top_k: int) -> List[str]:
    """What is wrong with the links of a doc, if anything."""
    problems = []
    for span in doc.ents:
        kb_ents, cui, candidates = span._.kb_ents, span._.cui, span._.candidates
        if span._.biosyn_stored_kb_ents is None:
            continue  # a label no linker serves
        n_parts = len(span._.parts)
        if not all(isinstance(c, str) and isinstance(s, float) for c, s in kb_ents) or len(kb_ents) > top_k * n_parts:
            problems.append(f"kb_ents of {span.text!r:.40}: {kb_ents!r:.80}")
        if cui is not None and cui.split("|") != [c for c, _ in kb_ents[: len(cui.split("|"))]]:
            problems.append(f"cui {cui!r} does not join the first of kb_ents")
        if not all(hasattr(c, "name") and isinstance(c.score, float) for c in candidates):
            problems.append(f"candidates of {span.text!r:.40}: {candidates!r:.80}")
        if hasattr(span._, "concept_ids") and span.kb_id_ != (cui or "NIL"):
            problems.append(f"kb_id {span.kb_id_!r} is not cui {cui!r}")
    return problems


def _links(doc: Doc):
    return [(s.start, s.end, s._.cui, [c for c, _ in s._.kb_ents]) for s in doc.ents]


class Context:
    """A small pipeline and a scratch folder, made once per process, and a
    saved text pipeline (NER + linker) for the "texts" cases."""

    def __init__(self, encoder: str, folder: Path, text_pipeline: Optional[str] = None):
        self.folder = folder
        self.encoder = encoder
        self.dictionary = folder / "dictionary.txt"
        self.dictionary.write_text(DICTIONARY)
        self.nlp = self.make_nlp()
        self.text_pipeline = text_pipeline
        self._text_nlp: Optional[spacy.Language] = None

    @property
    def text_nlp(self) -> spacy.Language:
        if self._text_nlp is None:
            if self.text_pipeline is None:
                raise RuntimeError("the texts cases need a text pipeline")
            self._text_nlp = spacy.load(self.text_pipeline)
            self._text_nlp.max_length = 2_000_000
        return self._text_nlp

    def make_nlp(self, **config) -> spacy.Language:
        nlp = add_biomedical_rules(spacy.blank("en"))
        nlp.max_length = 2_000_000  # the largest case is a megabyte
        nlp.add_pipe("biosyn_linker", config={
            "dictionary": str(self.dictionary), "encoder": self.encoder, "sparse_weight": 10.0, **config,
        })
        nlp.initialize()
        return nlp


def documents(rng: random.Random, ctx: Context) -> str:
    nlp = ctx.nlp
    docs = []
    for _ in range(rng.randint(1, 4)):
        doc = _doc(nlp, _text(rng))
        doc.ents = _spans(rng, doc, rng.randint(0, 6))
        docs.append(doc)
    alone = [_links(nlp(doc.copy())) for doc in docs]
    together = list(nlp.pipe([doc.copy() for doc in docs], batch_size=rng.randint(1, 4)))
    problems = [p for doc in together for p in _check_links(doc, nlp.get_pipe("biosyn_linker").top_k)]
    if [_links(doc) for doc in together] != alone:
        problems.append("links differ between one doc at a time and a batch")
    return "wrong result" if problems else "ok"


SCRIPTS = ["αβγ-synuclein", "患者の乳癌", "سرطان الثدي", "рак груди", "e\u0301\u0302", "\u200f\u202e", "🧬🙂", "ﬁbrosis"]


def _raw_text(rng: random.Random) -> str:
    """Raw text as corpora bring it: whitespace alone, control characters,
    lone surrogates, long unbroken tokens (DNA, base64), mixed scripts."""
    roll = rng.random()
    if roll < 0.15:
        return "".join(rng.choice(" \t\n\r\u3000\u00a0\u2028\u0085") for _ in range(rng.randint(0, 6)))
    words = []
    for _ in range(rng.randint(1, 40)):
        kind = rng.random()
        if kind < 0.05:
            words.append("".join(rng.choice("ACGT") for _ in range(rng.choice([150, 2_000, 20_000, 200_000]))))
        elif kind < 0.08:
            words.append("".join(rng.choice(string.ascii_letters + string.digits + "+/=") for _ in range(rng.randint(101, 5_000))))
        elif kind < 0.15:
            words.append("".join(chr(rng.choice([*range(32), 0x7F])) for _ in range(rng.randint(1, 3))))
        elif kind < 0.18:
            words.append(chr(rng.randint(0xD800, 0xDFFF)))
        elif kind < 0.3:
            words.append(rng.choice(SCRIPTS))
        else:
            words.append(rng.choice(WORDS + ["breast cancer (BC)", "BC", "ovarian cancer", "G6PD deficiency"]))
    return rng.choice([" ", "", "\n"]).join(words)


def texts(rng: random.Random, ctx: Context) -> str:
    """Raw text through the text pipeline, alone and in a batch: entities
    lie on the text, links are well formed and equal either way. A lone
    surrogate is no text: spaCy's tokenizer refuses it (link-corpus's
    readers replace it), and nothing else may fail."""
    nlp = ctx.text_nlp
    batch = [_raw_text(rng) for _ in range(rng.randint(1, 4))]
    try:
        alone = [nlp(text) for text in batch]
    except UnicodeEncodeError:
        return "ok" if any(0xD800 <= ord(c) <= 0xDFFF for text in batch for c in text) else "unclear error"
    together = list(nlp.pipe(batch, batch_size=rng.randint(1, 4)))
    problems = [p for doc in together for p in _check_links(doc, nlp.get_pipe("biosyn_linker").top_k)]
    for text, doc in zip(batch, together):
        if any(doc.text[e.start_char:e.end_char] != e.text or not e.text.strip() for e in doc.ents) or doc.text != text:
            problems.append("an entity off its text")
    if [_links(doc) for doc in together] != [_links(doc) for doc in alone]:
        problems.append("links differ between one doc at a time and a batch")
    return "wrong result" if problems else "ok"


def span_text(rng: random.Random) -> str:
    return rng.choice([
        "(-)", "...;--", " ", "and and or , / /", "\u00a0", "a and b or c / d cancer",
        ", ".join(f"type {i}" for i in range(rng.randint(1, 3000))) + " and type 2 diabetes",
        "breast and ovarian cancer", "CMC", "x" * rng.randint(1, 50_000), _text(rng),
        # A composite splitter that rescans the rest of the text at every
        # space takes half an hour on this megabyte: a hang.
        "w " * rng.choice([100_000, 500_000]) + "and ovarian cancer",
    ])


def spans(rng: random.Random, ctx: Context) -> str:
    text = span_text(rng)
    doc = _doc(ctx.nlp, f"{text} .")
    if len(doc) > 1:
        doc.ents = [Span(doc, 0, len(doc) - 1, label="Disease")]
    linked = ctx.nlp(doc)
    return "wrong result" if _check_links(linked, ctx.nlp.get_pipe("biosyn_linker").top_k) else "ok"


def _file(rng: random.Random, lines: List[str], folder: Path) -> Path:
    path = folder / f"case-{rng.randrange(10**9)}.txt"
    text = "\n".join(lines) + rng.choice(["\n", "", "\r\n"])
    if rng.random() < 0.1:
        text = "\ufeff" + text
    encoding = rng.choices(["utf-8", "latin-1", "utf-16", "gzip"], [0.85, 0.05, 0.05, 0.05])[0]
    if encoding == "gzip":
        import gzip

        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_bytes(text.encode(encoding, "replace"))
    return path


def _clear(error: Exception, *names: str) -> bool:
    return isinstance(error, ValueError) and any(name in str(error) for name in names)


def dictionaries(rng: random.Random, ctx: Context) -> str:
    from spacy_biosyn import Dictionary

    pieces = ["D001943", "114480", "", " ", "|", "||", "+", "breast cancer", "Ovarian Cancer", "café",
              "---", "a|b", "x" * 300, "\t", "é"]
    lines = ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 5))) for _ in range(rng.randint(0, 8))]
    path = _file(rng, lines, ctx.folder)
    try:
        dictionary = Dictionary.from_file(path)
    except Exception as error:  # noqa: BLE001 (judged, not hidden)
        return "ok" if _clear(error, str(path)) else "unclear error"
    copy = path.with_suffix(".copy")
    try:
        dictionary.to_file(copy)
        back = Dictionary.from_file(copy)
    except Exception:  # noqa: BLE001
        return "wrong result"
    if not len(dictionary) or (list(back.names), list(back.cuis)) != (list(dictionary.names), list(dictionary.cuis)):
        return "wrong result"
    return "ok"


def corpora(rng: random.Random, ctx: Context) -> str:
    from spacy_biosyn.corpora.readers import read_concept_queries, read_pubtator

    title, abstract = _text(rng)[:200].replace("\n", " "), _text(rng)[:400].replace("\n", " ")
    text = f"{title} {abstract}"
    lines = [f"1|t|{title}"] + ([f"1|a|{abstract}"] if rng.random() < 0.9 else [])
    for _ in range(rng.randint(0, 5)):
        start = rng.randint(-2, len(text) + 2)
        end = start + rng.randint(-2, 20)
        mention = text[max(start, 0):max(end, 0)] if rng.random() < 0.8 else "goat"
        lines.append("\t".join(["1", str(start), str(end), mention, "Disease", rng.choice(["D1", "-1", "D1|D2", ""])]))
    if rng.random() < 0.2:
        lines.insert(rng.randrange(len(lines) + 1), rng.choice(["garbage", "1\tCID\tD1\tD2", "1|x|y", ""]))
    pubtator = rng.random() < 0.7
    if not pubtator:
        lines = [f"1||{rng.randint(-5, 50)}|{rng.randint(-5, 50)}||Disease||{rng.choice(WORDS)}||{rng.choice(['D1', '-1'])}"
                 if rng.random() < 0.8 else rng.choice(["1||x||y", "", "a||b||c||d||e||f"]) for _ in range(rng.randint(0, 5))]
    path = _file(rng, lines, ctx.folder)
    if not pubtator:
        path = path.rename(path.with_suffix(".concept"))
    try:
        documents = read_pubtator(path) if pubtator else read_concept_queries(path)
    except Exception as error:  # noqa: BLE001
        return "ok" if _clear(error, str(path)) else "unclear error"
    if pubtator:
        for document in documents:
            if "None" in document.text and "None" not in text:
                return "wrong result"
            for a in document.annotations:
                if not (0 <= a.start < a.end <= len(document.text)) or document.text[a.start:a.end].strip() != a.text.strip():
                    return "wrong result"
    return "ok"


def configs(rng: random.Random, ctx: Context) -> str:
    settings: Dict[str, Tuple] = {
        "top_k": (0, -1, 1, 3, 10**6, 2.5, "5", True),
        "sparse_weight": (-5.0, 0.0, 0.125, float("nan"), float("inf"), True, "x", [1]),
        "split_composites": (True, False, "yes", 2),
        "nil_threshold": (None, 0.5, -1.0, "high"),
        "drop_nil": (False, True, "yes"),
        "resolve_shared_names": (True, False, "no", 0),
        "routes": ({}, {"Chemical": str(ctx.dictionary)}, {"Chemical": "/no/such/file"}, {"A": "x", "a": "y"}),
        "dictionary_labels": (None, ["Disease"], ["DISEASE", "Chemical"], [], "Disease", [""], [3]),
    }
    name = rng.choice(sorted(settings))
    value = rng.choice(settings[name])
    try:
        nlp = ctx.make_nlp(**{name: value})
        doc = nlp.make_doc("breast and ovarian cancer")
        doc.ents = [Span(doc, 0, 4, label="Disease")]
        linked = nlp(doc)
    except Exception as error:  # noqa: BLE001
        return "ok" if _clear(error, name, "/no/such/file") or isinstance(error, OSError) and "/no/such/file" in str(error) else "unclear error"
    return "wrong result" if _check_links(linked, nlp.get_pipe("biosyn_linker").top_k) else "ok"


# The character classes an output format may not carry as they are.
OUTPUT_PIECES = {
    "words": ["breast cancer", "BRCA1", "ovarian", " ", "é", "患者", "🧬"],
    "NUL and controls": ["\x00", "\x01", "\x1b", "\x7f"],
    "tabs": ["\t"],
    "line breaks": ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"],
    "PubTator tags": ["|t|", "|a|", "|"],
    "other whitespace": ["\u00a0", "\u3000", "\u200b", "  "],
}


def _output_case(rng: random.Random):
    """1-3 documents from two input files, their texts pieced from every
    class, with rows on random spans, labels and IDs."""
    pieces = [piece for group in OUTPUT_PIECES.values() for piece in group]
    documents, rows = [], []
    for number in range(rng.randint(1, 3)):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        file = rng.choice(["in/a.txt", "in/b.txt"])
        doc_id = _rarely(rng, [str(number + 1), f"PMC{number}", "1", f"doc {number}"], [f"x|{number}", f" {number}", f"{number}\x85"])
        if any(d.id == doc_id and d.file == file for d in documents):
            continue  # one file's ids are unique: its reader refuses a second
        document = Document(doc_id, text, None, file)
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, 2 * rng.randint(0, 3))))
        document_rows = [
            {"file": file, "doc_id": doc_id, "start": a, "end": b, "text": text[a:b],
             "label": _rarely(rng, ["Disease", "Chemical", "Dis ease"], ["DISEASE|t|x", "Disease\t"]),
             "id": _rarely(rng, ["D001943", "MESH:D001943|OMIM:114480", None], ["D1 ", "D1\x00"]),
             "score": rng.choice([0.9, None]), "nil_reason": None, "nil_best": None, "ties": [], "gold_id": None, "candidates": []}
            for a, b in zip(cuts[::2], cuts[1::2]) if a < b
        ]
        documents.append(document)
        rows.append(document_rows)
    return documents, rows


def _rarely(rng: random.Random, usual: List[str], odd: List[str]) -> str:
    """A usual value, or one time in 20 an odd one (that PubTator refuses)."""
    return rng.choice(odd if rng.random() < 0.05 else usual)


def _expected_pubtator(documents, rows) -> Tuple[list, list]:
    """What this package's reader and bioc.pubtator read back: the same
    lines, but bioc.pubtator strips the end of each (title and abstract)."""
    from spacy_biosyn.corpora.pubtator_form import mention_field, pubtator_form

    ours, theirs = [], []
    for document, document_rows in zip(documents, rows):
        form = pubtator_form(document.text, [(r["start"], r["end"]) for r in document_rows])
        if form.text.strip():
            text = form.text
            annotations = [(s, e, mention_field(text[s:e]), r["label"], r["id"] or "-1")
                           for r, (s, e) in ((r, span) for r, span in zip(document_rows, form.spans) if span)]
            ours.append((document.id, text, annotations))
            title, abstract = form.title.rstrip(), (form.abstract or "").rstrip()
            theirs.append((document.id, f"{title} {abstract}" if abstract else title, annotations))
    return ours, theirs


def _expected_bioc(documents, rows) -> list:
    import re

    safe = lambda text: re.sub("[\x00-\x08\x0b\x0c\x0e-\x1f]", "\ufffd", text)  # noqa: E731
    return [(safe(d.id), safe(d.text), [(r["start"], r["end"], safe(r["text"]), safe(r["label"]), r["id"] and safe(r["id"]))
                                        for r in document_rows])
            for d, document_rows in zip(documents, rows)]


def _read_back(path: Path, format: str) -> Tuple[list, list]:
    """What this package's reader and the community's read from a file."""
    import bioc
    from bioc import biocxml, pubtator

    from spacy_biosyn.corpus_linking.text_sources import read_documents

    ours = [(d.id, d.text, [(a.start, a.end, a.text, a.label, a.cui) for a in d.annotations])
            for d in read_documents(path, "pubtator" if format == "pubtator" else "bioc-xml")]
    with path.open(encoding="utf-8") as f:
        if format == "pubtator":
            theirs = [(d.pmid, d.text.replace("\n", " "), [(a.start, a.end, a.text, a.type, a.id) for a in d.annotations])
                      for d in pubtator.load(f)]
            return ours, theirs
        collection = biocxml.load(f)
    theirs = [(d.id, bioc.get_text(d)[1], [(a.total_span.offset, a.total_span.end, a.text, a.infons.get("type"),
                                           a.infons.get("identifier")) for p in d.passages for a in p.annotations])
              for d in collection.documents]
    ours = [(i, text, [(s, e, t, label, None if cui == "-1" else cui) for s, e, t, label, cui in annotations])
            for i, text, annotations in ours]
    return ours, theirs


def outputs(rng: random.Random, ctx: Context) -> str:
    """Documents holding what PubTator or XML cannot carry as is (NUL, tabs,
    line breaks, |t|, whitespace at line ends), in every output format: a
    clear refusal naming the document, or files that this package's
    readers and the community's (bioc.pubtator, bioc.biocxml) read back
    alike, as the format's rules (pubtator_form; U+FFFD in XML) write them,
    but for the ends of lines bioc.pubtator strips; JSONL and Parquet give
    back every row as it was."""
    from spacy_biosyn.corpus_linking.writers import OUTPUT_FORMATS, SUFFIXES, DocumentIds, write_rows
    from spacy_biosyn.errors import CorpusError

    documents, rows = _output_case(rng)
    for format in OUTPUT_FORMATS:
        path = ctx.folder / f"outputs.{SUFFIXES[format]}"
        try:
            ids = DocumentIds(format)
            for document in documents:
                ids.check(document)
            write_rows(path, documents, rows, format)
        except CorpusError as error:
            if not any(repr(d.id) in str(error) or f"document {d.id}" in str(error) for d in documents):
                return "unclear error"
            continue
        if format == "jsonl":
            back = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        elif format == "parquet":
            import pyarrow.parquet as pq

            back = pq.read_table(path).to_pylist()
        else:
            ours, theirs = _read_back(path, format)
            if format == "pubtator":
                expected_ours, expected_theirs = _expected_pubtator(documents, rows)
            else:
                expected_ours = expected_theirs = _expected_bioc(documents, rows)
            if ours != expected_ours or theirs != expected_theirs:
                return "wrong result"
            continue
        if back != [row for document_rows in rows for row in document_rows]:
            return "wrong result"
    return "ok"


CASES: Dict[str, Callable[[random.Random, Context], str]] = {
    "documents": documents, "spans": spans, "dictionaries": dictionaries, "corpora": corpora, "configs": configs,
    "texts": texts, "outputs": outputs,
}


def run_case(category: str, seed: int, ctx: Context) -> str:
    try:
        return CASES[category](random.Random(seed), ctx)
    except Exception:  # noqa: BLE001: an error on input the case does not judge is an unclear one
        return "unclear error"


class Worker:
    """Runs cases in a child process, so that a case which kills its process
    (native code) is a "crash" and one that never returns a "hang", and the
    next case gets a fresh child. Outcomes come back on a pipe of their own:
    native code may print to stdout."""

    def __init__(self, encoder: str, timeout_s: float = 120.0, env: Optional[dict] = None, text_pipeline: Optional[str] = None):
        self.encoder, self.timeout_s, self.env, self.text_pipeline = encoder, timeout_s, env, text_pipeline
        self.process = None

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.encoder, str(write_end), *([self.text_pipeline] if self.text_pipeline else [])],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_end,), text=True, env=self.env,
        )
        os.close(write_end)
        self.results = os.fdopen(read_end)

    def run(self, category: str, seed: int) -> str:
        if self.process is None:
            self._start()
        self.process.stdin.write(json.dumps([category, seed]) + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.results], [], [], self.timeout_s)
        line = self.results.readline() if ready else None
        if line:
            return json.loads(line)
        self.close()
        return "crash" if line == "" else "hang"

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.results.close()
            self.process = None


def _serve(encoder: str, fd: int, text_pipeline: Optional[str] = None) -> None:
    with tempfile.TemporaryDirectory() as tmp, os.fdopen(fd, "w") as results:
        ctx = Context(encoder, Path(tmp), text_pipeline)
        for line in sys.stdin:
            category, seed = json.loads(line)
            results.write(json.dumps(run_case(category, seed, ctx)) + "\n")
            results.flush()


if __name__ == "__main__":
    _serve(sys.argv[1], int(sys.argv[2]), *sys.argv[3:])
