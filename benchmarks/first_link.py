"""From a process's start to its first linked sentence, in whichever
environment runs this file: import spacy, spacy.load, one sentence with two
entities, and which heavy libraries the process imported along the way.

    ENV/bin/python -m benchmarks.first_link PIPELINE [--raw] [--json]

--raw gives a text pipeline the sentence as raw text, its NER finding the
entities; --json prints the stages as one JSON line (text_warm_start.py
reads it).

Run it with the python of an environment made as a user who only links
makes one (`pip install "spacy-biosyn[onnx,minilm]"`), where spaCy finds
no other plugin to import; it imports nothing from this folder, so it runs
in any environment that has spacy-biosyn.
"""
import time

START = time.perf_counter()
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402

import spacy  # noqa: E402

TEXT = "Germline mutations of BRCA1 predispose to breast and ovarian cancer and to hereditary nonpolyposis colorectal cancer."
MENTIONS = ("breast and ovarian cancer", "hereditary nonpolyposis colorectal cancer")


def main() -> None:
    imported = time.perf_counter()
    nlp = spacy.load(sys.argv[1])
    loaded = time.perf_counter()
    if "--raw" in sys.argv:
        doc = nlp(TEXT)
    else:
        doc = nlp.make_doc(TEXT)
        doc.ents = [doc.char_span(TEXT.index(m), TEXT.index(m) + len(m), label="Disease") for m in MENTIONS]
        nlp(doc)
    linked = time.perf_counter()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    stages = {"import_spacy": imported - START, "load": loaded - imported, "first_text": linked - loaded,
              "start_to_link": linked - START, "peak_mib": peak_mib, "links": [(e.text, e._.cui) for e in doc.ents],
              "imported": {name: name in sys.modules for name in ("torch", "transformers", "sklearn", "onnxruntime")}}
    if "--json" in sys.argv:
        print(json.dumps(stages))
        return
    print(f"import spacy {stages['import_spacy']:.2f} s, spacy.load {stages['load']:.2f} s, "
          f"first sentence {stages['first_text']:.2f} s, process start to link {stages['start_to_link']:.2f} s")
    print("links:", stages["links"])
    print("imported:", stages["imported"])


if __name__ == "__main__":
    main()
