#!/usr/bin/env bash
# Creates .venv with the CPU build of torch and spacy-biosyn (editable): its
# torch extra (training, the PyTorch encoder), test tools, the offline MiniLM
# encoder, what the spaCy project needs (the transformer NER recipe included)
# and the Ray and Dask engines of link-corpus.
# Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
. .venv/bin/activate
# torch first and pinned: anything installed before it, or with -U, can pull
# a multi-GB CUDA build. constraints.txt keeps the pin for everything after.
# --no-compile: Python writes the bytecode of the modules a run imports, a
# small part of what is installed (torch alone: 22 s to compile, 7 s without).
python -m pip install -q --no-compile --disable-pip-version-check torch==2.13.0
python -m pip install -q --no-compile --disable-pip-version-check -c constraints.txt \
    -e ".[torch,test,minilm,project,transformer-ner,ray,dask,serve,browser]"
# The page's browser test drives Chromium: installed from the system's packages
# where this runs as root with apt-get; elsewhere that test skips, saying why.
if ! command -v chromedriver >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 \
        || echo "Chromium was not installed: the page's browser test will skip" >&2
fi
