#!/usr/bin/env bash
# Packs what the GPU recipe's check (benchmarks/gpu_check.py) needs on a GPU
# machine that has Python 3.12, torch, transformers and tokenizers but no
# spaCy and no network: the wheels of spacy-biosyn's other dependencies for
# CPython 3.12 on x86-64 Linux, unzipped into one folder with their .so
# files stripped, caches, tests and wordfreq's non-English data removed,
# packed as .device-bundle/site.tar.xz (git-ignored: carry it). There:
#   mkdir -p /tmp/site && tar -xJf .device-bundle/site.tar.xz -C /tmp/site && export PYTHONPATH=/tmp/site:$PWD
# The versions are this machine's .venv's where it has them, so the device
# runs what the tests ran here.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.device-bundle
rm -rf "$out" && mkdir -p "$out/wheels" "$out/site"
packages=(spacy thinc blis cymem preshed murmurhash srsly wasabi catalogue confection weasel spacy-legacy
          spacy-loggers cloudpathlib smart-open pydantic pydantic-core annotated-types typing-inspection
          typing-extensions pyab3p pytorch-metric-learning spacy-curated-transformers curated-transformers
          curated-tokenizers numpy wordfreq ftfy langcodes msgpack regex wcwidth)
pinned=()
for name in "${packages[@]}"; do
    version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)
    pinned+=("$name${version:+==$version}")
done
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
    platforms+=(--platform "$tag")
done
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    "${platforms[@]}" -d "$out/wheels" "${pinned[@]}"
for wheel in "$out"/wheels/*.whl; do
    python3 -m zipfile -e "$wheel" "$out/site"
done
find "$out/site" -name '*.so' -exec strip --strip-unneeded {} +
find "$out/site" \( -name __pycache__ -o -name tests -o -name test \) -type d -prune -exec rm -rf {} +
find "$out/site/wordfreq/data" -type f ! -name '*_en.msgpack.gz' -delete
tar -C "$out/site" -cf - . | xz -6 -T0 > "$out/site.tar.xz"
rm -rf "$out/wheels" "$out/site"
du -h "$out/site.tar.xz"
