"""Every function the package registers can be named in a config and
resolved in a fresh process, where nothing of spacy_biosyn has been
imported yet: spaCy finds it through the entry point of its registry's
group in setup.cfg."""
import ast
import configparser
import json
import subprocess
import sys
from pathlib import Path

import spacy_biosyn
from spacy.util import registry

PACKAGE = Path(spacy_biosyn.__file__).parent
SETUP_CFG = PACKAGE.parent / "setup.cfg"


def registered_in_source() -> dict:
    """(registry, name) -> "module:object" of every @registry.X("...") in the package."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for decorator in getattr(node, "decorator_list", []):
                if (
                    isinstance(decorator, ast.Call)
                    and isinstance(decorator.func, ast.Attribute)
                    and getattr(decorator.func.value, "id", None) == "registry"
                ):
                    found[(decorator.func.attr, decorator.args[0].value)] = f"{module}:{node.name}"
    return found


def entry_points() -> dict:
    """(registry, name) -> "module:object" of setup.cfg's entry points of registries."""
    config = configparser.ConfigParser()
    config.optionxform = str  # names are case-sensitive
    config.read(SETUP_CFG)
    found = {}
    for group, lines in config["options.entry_points"].items():
        if group == "spacy_factories":
            continue
        for line in filter(None, lines.split("\n")):
            name, _, target = (part.strip() for part in line.partition("="))
            found[(group.partition("_")[2], name)] = target
    return found


def test_every_registered_function_has_the_entry_point_of_its_registry():
    registered = registered_in_source()
    assert len(registered) >= 20
    for (kind, name), target in registered.items():
        group = getattr(registry, kind).entry_point_namespace
        assert entry_points().get((kind, name)) == target, f"setup.cfg needs [{group}] {name} = {target}"
    assert set(entry_points()) == set(registered), "an entry point names nothing the package registers"


def test_every_registered_name_resolves_in_a_fresh_process():
    wanted = sorted(registered_in_source())
    script = (
        "import json, sys\nfrom spacy.util import registry\n"
        "assert 'spacy_biosyn' not in sys.modules\n"
        "out = {}\n"
        f"for kind, name in {wanted!r}:\n"
        "    found = getattr(registry, kind).get(name)\n"
        "    out[name] = found.__module__ + ':' + found.__qualname__\n"
        "print(json.dumps(out))\n"
    )
    resolved = json.loads(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout)
    assert resolved == {name: target for (_, name), target in registered_in_source().items()}
