"""The package's modules import one another without a circle and only
from their own layer or those below it (text -> entities -> preprocessing
-> candidates -> scores -> span attributes), counting imports made only for
type checking and those inside functions: each module can be read, tested
and replaced from the ones below it."""
import ast
import subprocess
import sys
from pathlib import Path

import spacy_biosyn

PACKAGE = Path(spacy_biosyn.__file__).parent


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set) -> set:
    """The package modules `path` imports, wherever the import statement is."""
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from . import x` imports the module x when there is one
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        found.update(name for name in names if name in modules)
    return found - {module_name(path)}


def import_graph() -> dict:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {name: imported_modules(path, set(paths)) for name, path in paths.items()}


def find_circle(graph: dict):
    """One import circle as a list of modules, or None."""
    state = {}

    def visit(module, trail):
        state[module] = "open"
        for imported in sorted(graph[module]):
            if state.get(imported) == "open":
                return trail[trail.index(imported):] + [imported]
            if imported not in state:
                circle = visit(imported, trail + [imported])
                if circle:
                    return circle
        state[module] = "done"
        return None

    for module in sorted(graph):
        if module not in state:
            circle = visit(module, [module])
            if circle:
                return circle
    return None


def test_no_module_imports_one_that_imports_it_back():
    circle = find_circle(import_graph())
    assert circle is None, " -> ".join(circle)


def test_the_circle_finder_finds_a_circle():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]


def test_leaf_modules_import_nothing_of_the_package():
    graph = import_graph()
    for leaf in ("spacy_biosyn.errors", "spacy_biosyn.checks", "spacy_biosyn.search.scoring", "spacy_biosyn.names", "spacy_biosyn.parts",
                 "spacy_biosyn.ty"):
        assert graph[leaf] == set(), leaf


def external_imports(path: Path) -> set:
    """The top-level names of what `path` imports from outside the package."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            found.add(node.module.split(".")[0])
    return found - {"spacy_biosyn"}


def below(module: str, graph: dict) -> set:
    """`module` and every package module it imports, at any depth."""
    seen, todo = set(), [module]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(graph[current])
    return seen


def modules_importing(library: str, modules: set) -> list:
    paths = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return sorted(module for module in modules if library in external_imports(paths[module]))


def test_no_module_below_the_linking_engine_imports_spacy():
    # The engine is what training, evaluation and notebooks use without a
    # pipeline; spaCy comes in at the pipe, which adapts the engine to it.
    engine_and_below = below("spacy_biosyn.linking.engine", import_graph())
    assert len(engine_and_below) > 30
    assert modules_importing("spacy", engine_and_below) == []


def test_the_check_below_the_engine_finds_spacy_at_any_depth():
    graph = {"engine": {"routes"}, "routes": {"corpus"}, "corpus": set()}
    assert below("engine", graph) == {"engine", "routes", "corpus"}


def test_importing_the_linking_engine_imports_no_spacy():
    script = ("import sys\nimport spacy_biosyn.linking.engine\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'spacy'))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


# Lowest first; a module may import from its own layer and those below it.
LAYERS = [
    {"spacy_biosyn", "errors", "checks", "names", "parts", "ty", "files"},
    {"preprocess"},
    {"encoders"},
    # the dictionary and its IDs
    {"kb"},
    # vocabulary readers; the name search and what sits around it
    {"vocabularies", "search", "strategies"},
    # vocabularies by name; annotated corpora (readers.py for the engine, docs.py for spaCy)
    {"named", "corpora"},
    # the linking engine: mentions to linked parts, with no spaCy below it
    {"linking"},
    {"pipeline"},
    # the NER side: its tokenizer, transformer, training data and the document-level entities before the linker
    {"ner"},
    {"evaluation"},
    {"training", "corpus_linking"},
    # the linking service over HTTP
    {"service"},
    {"cli", "__main__"},
]


def layer_of(module: str) -> int:
    top = module.split(".")[1] if "." in module else module
    return next((i for i, layer in enumerate(LAYERS) if top in layer), -1)


def test_no_module_imports_from_a_layer_above_it():
    upward = [
        f"{module} -> {imported}"
        for module, imports in import_graph().items()
        for imported in imports
        if layer_of(imported) > layer_of(module)
    ]
    assert upward == []


def test_every_module_has_a_layer():
    assert [module for module in import_graph() if layer_of(module) < 0] == []
