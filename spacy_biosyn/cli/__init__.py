"""The command line, `python -m spacy_biosyn COMMAND`: a module per command
(or family of commands), each registering on the app in common.py, so that
`--help` lists every one. `main` makes an error about the user's input one
line naming the file, line or setting at fault, not a traceback."""
import importlib
import os
import sys

from wasabi import msg

from ..errors import BiosynError
from .common import app

# Each registers its commands on `app` when imported: this order is --help's.
COMMAND_MODULES = (
    "vocabularies", "build", "evaluate", "tune_nil", "assemble", "onnx", "convert", "train", "link", "link_corpus", "serve",
)
for _module in COMMAND_MODULES:
    importlib.import_module(f"{__name__}.{_module}")


def main() -> None:
    if os.environ.get("NO_COLOR") or not sys.stdout.isatty():
        # wasabi colours by platform alone: output redirected to a file, or
        # NO_COLOR (no-color.org), would carry ANSI codes.
        os.environ["ANSI_COLORS_DISABLED"] = "1"
        msg.show_color = False
    try:
        app(prog_name="python -m spacy_biosyn")
    except BiosynError as error:
        print(f"✘ {error}", file=sys.stderr)  # one line: wasabi would wrap it
        sys.exit(1)
