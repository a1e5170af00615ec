"""From a process's start to its first linked sentence, in whichever
environment runs this file: import spacy, spacy.load, one sentence with two
entities, and which heavy libraries the process imported along the way.

    ENV/bin/python -m benchmarks.first_link PIPELINE

Run it with the python of an environment made as a user who only links
makes one (`pip install "spacy-biosyn[onnx,minilm]"`), where spaCy finds
no other plugin to import; it imports nothing from this folder, so it runs
in any environment that has spacy-biosyn.
"""
import time

START = time.perf_counter()
import sys  # noqa: E402

import spacy  # noqa: E402

TEXT = "Germline mutations of BRCA1 predispose to breast and ovarian cancer and to hereditary nonpolyposis colorectal cancer."
MENTIONS = ("breast and ovarian cancer", "hereditary nonpolyposis colorectal cancer")


def main() -> None:
    imported = time.perf_counter()
    nlp = spacy.load(sys.argv[1])
    loaded = time.perf_counter()
    doc = nlp.make_doc(TEXT)
    doc.ents = [doc.char_span(TEXT.index(m), TEXT.index(m) + len(m), label="Disease") for m in MENTIONS]
    nlp(doc)
    linked = time.perf_counter()
    print(f"import spacy {imported - START:.2f} s, spacy.load {loaded - imported:.2f} s, "
          f"first sentence {linked - loaded:.2f} s, process start to link {linked - START:.2f} s")
    print("links:", [(e.text, e._.cui) for e in doc.ents])
    print("imported:", {name: name in sys.modules for name in ("torch", "transformers", "sklearn", "onnxruntime")})


if __name__ == "__main__":
    main()
