"""The README runs as written: its use snippet (on a small MEDIC excerpt in
place of the whole dictionary, with the default encoder), its links, and
every command line of it and of docs/, parsed as the code parses them."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MEDIC_EXCERPT = """\
114480|D001943||breast cancer
D001943||breast neoplasms
D010051|167000||ovarian cancer
D010051||ovarian neoplasms
D061325||hereditary breast and ovarian cancer syndrome
C567755|613097||tooth agenesis selective 6
"""


# A scispaCy KB file standing in for scispaCy's UMLS, with the concepts of its README's sentence.
UMLS_EXCERPT = """\
{"concept_id": "C1839259", "canonical_name": "Bulbo-Spinal Atrophy, X-Linked", "aliases": ["Kennedy disease", "Spinal and bulbar muscular atrophy", "X-linked bulbospinal neuronopathy"], "types": ["T047"], "definition": "An X-linked recessive form of spinal muscular atrophy."}
{"concept_id": "C0085084", "canonical_name": "Motor Neuron Disease", "aliases": ["motor neuron disease", "MND"], "types": ["T047"]}
{"concept_id": "C0034786", "canonical_name": "Androgen Receptor", "aliases": ["androgen receptor", "AR protein"], "types": ["T116", "T192"]}
{"concept_id": "C0002395", "canonical_name": "Alzheimer's Disease", "aliases": ["Alzheimer disease"], "types": ["T047"]}
"""


# A chemical of scispaCy's UMLS file, with the semantic types the README's filter drops.
UMLS_CHEMICAL = """\
{"concept_id": "C0000970", "canonical_name": "Acetaminophen", "aliases": ["paracetamol"], "types": ["T109", "T121"]}
"""


def python_block(section: str, number: int = 0) -> str:
    text = README.read_text(encoding="utf-8")
    body = text[text.index(f"\n## {section}\n"):]
    body = body[: body.index("\n## ", 1)]
    return re.findall(r"```python\n(.*?)```", body, re.S)[number]


def test_scispacys_snippet_runs_with_the_factory_name_changed(tmp_path):
    """The named-linker snippet as written, in a folder whose en_core_sci_sm
    is a stand-in NER (an entity ruler) and whose mirror holds scispaCy's UMLS
    file name with a few of its concepts."""
    import spacy

    snippet = python_block("Use")
    assert 'nlp.add_pipe("biosyn_linker", config={"resolve_abbreviations": True, "linker_name": "umls"})' in snippet
    stand_in = spacy.blank("en")
    stand_in.add_pipe("entity_ruler").add_patterns([
        {"label": "ENTITY", "pattern": "Spinal and bulbar muscular atrophy"}, {"label": "ENTITY", "pattern": "SBMA"},
        {"label": "ENTITY", "pattern": "motor neuron disease"}, {"label": "ENTITY", "pattern": "androgen receptor"},
    ])
    stand_in.to_disk(tmp_path / "en_core_sci_sm")
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / "umls_2022_ab_cat0129.jsonl").write_text(UMLS_EXCERPT)
    (tmp_path / "snippet.py").write_text(snippet)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SPACY_BIOSYN_MIRROR": str(tmp_path / "mirror"),
           "SPACY_BIOSYN_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    links = [line.split(" -> ")[1].split()[0] for line in done.stdout.splitlines()]
    assert links == ["C1839259", "C1839259", "C0085084", "C0034786", "C1839259"], done.stdout
    assert (tmp_path / "sci_linker" / "biosyn_linker").is_dir()


def test_the_type_filter_snippet_keeps_what_it_says_with_each_kbs_real_types(tmp_path):
    """The type filters as written, against NLM's MeSH XML and scispaCy's
    UMLS file in a mirror: MeSH's tree C keeps a supplementary concept
    through the descriptor it maps to; UMLS's chemical types drop none of
    its diseases. Neither filter is refused."""
    import gzip

    from vocabulary_files import MESH_DESCRIPTORS_XML, MESH_SUPPLEMENTARY_XML

    snippet = python_block("Use", 2)
    assert '"linker_name": "mesh-current", "types": ["C"]' in snippet
    mapped = MESH_SUPPLEMENTARY_XML.replace("  <Note>", "  <HeadingMappedToList><HeadingMappedTo><DescriptorReferredTo>"
                                            "<DescriptorUI>*D001943</DescriptorUI></DescriptorReferredTo></HeadingMappedTo>"
                                            "</HeadingMappedToList>\n  <Note>")
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / "desc2026.gz").write_bytes(gzip.compress(MESH_DESCRIPTORS_XML.encode()))
    (tmp_path / "mirror" / "supp2026.gz").write_bytes(gzip.compress(mapped.encode()))
    (tmp_path / "mirror" / "umls_2022_ab_cat0129.jsonl").write_text(UMLS_EXCERPT + UMLS_CHEMICAL)
    (tmp_path / "snippet.py").write_text("import json, spacy\nnlp = spacy.blank('en')\n" + snippet + (
        "\nmentions = ['STHAG6', 'Kennedy disease', 'paracetamol']\n"
        "print(json.dumps({name: [l.cui for l in nlp.get_pipe(name).engine.link(mentions)] for name in nlp.pipe_names}))\n"))
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SPACY_BIOSYN_MIRROR": str(tmp_path / "mirror"),
           "SPACY_BIOSYN_CACHE": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    mesh, umls = json.loads(done.stdout.splitlines()[-1]).values()
    assert mesh[0] == "C567755"  # a supplementary concept, in tree C through Breast Neoplasms in this fixture
    assert umls[1] == "C1839259" and umls[2] != "C0000970"  # the disease kept, the chemical dropped


def test_the_use_snippet_links_a_composite_and_looks_its_concepts_up(tmp_path):
    snippet = python_block("Use", 1)
    dictionary = '"../shared/data/ncbi-disease/train_dictionary.txt"'
    assert dictionary in snippet
    (tmp_path / "medic.txt").write_text(MEDIC_EXCERPT)
    (tmp_path / "snippet.py").write_text(snippet.replace(dictionary, '"medic.txt"'))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "snippet.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("breast and ovarian cancer -> D001943|D010051 [('D001943',")
    assert [line.split()[:2] for line in lines[1:3]] == [["D001943", "breast"], ["D010051", "ovarian"]]
    assert (tmp_path / "linker" / "config.cfg").exists()


def test_every_link_to_the_docs_leads_to_a_page():
    pages = [README, *sorted((README.parent / "docs").glob("*.md"))]
    for page in pages:
        for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if not target.startswith("http"):
                assert (page.parent / target).is_file(), f"{page.name} links to {target}"


def command_lines(page: Path) -> list:
    """Each command of a page's bash blocks: lines joined at a trailing
    backslash, comments cut, split at &&, || and pipes."""
    text = page.read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"(^|\s)#.*$", "", line).strip()
            # a pipe between commands has spaces around it; "a|b" is a placeholder's choices
            commands.extend(part.strip() for part in re.split(r"&&|\|\||\s\|\s", line) if part.strip())
    return commands


def check_spacy_biosyn_command(words: list) -> None:
    """Parsed as the CLI parses it: the subcommand exists, every option is
    one it has, and every required argument and option is given."""
    from typer.main import get_command

    from spacy_biosyn.cli import app

    group = get_command(app)
    if not words or words[0] == "--help":
        return
    name, args = words[0], [w for w in words[1:] if w != "--help"]
    assert name in group.commands, f"no command {name!r}"
    command = group.commands[name]
    parser = command.make_parser(command.make_context(name, [], resilient_parsing=True))
    given, extra, _ = parser.parse_args(list(args))  # an unknown option raises NoSuchOption
    missing = [p.name for p in command.params if p.required and given.get(p.name) is None]
    if command.context_settings.get("allow_extra_args"):  # config overrides: --section.key value
        extra = [w for key, w in zip(extra[::2], extra[1::2]) if not (key.startswith("--") and "." in key)]
    assert not missing and not extra, f"{' '.join(words)}: {missing} missing, {extra} left over"


def check_project_command(words: list) -> None:
    import yaml

    project = yaml.safe_load((README.parent / "project.yml").read_text(encoding="utf-8"))
    names = {c["name"] for c in project["commands"]} | set(project.get("workflows", {}))
    assert words[0] in names, f"spacy project run {words[0]}: no such command or workflow"
    for word in words[1:]:
        if word.startswith("--vars."):
            assert word[len("--vars."):].split("=")[0] in project["vars"], f"{word}: no such variable"


def check_pip_command(words: list) -> None:
    import configparser

    setup = configparser.ConfigParser()
    setup.read(README.parent / "setup.cfg")
    extras = set(setup["options.extras_require"])
    for word in words:
        for extra in re.findall(r"\[([^\]]+)\]", word):
            assert set(extra.split(",")) <= extras, f"{word}: no such extra"


def check_command(command: str) -> None:
    import shlex

    # [--option VALUE] marks an optional part: its option must exist all the same
    words = [word.strip("[]") for word in shlex.split(command)]
    while words and "=" in words[0] and not words[0].startswith("-"):  # VAR=value before the command
        words = words[1:]
    program = Path(words[0]).name if words else ""
    if program.startswith("python") and words[1:3] == ["-m", "spacy_biosyn"]:
        check_spacy_biosyn_command(words[3:])
    elif program == "spacy" and words[1:3] == ["project", "run"]:
        check_project_command(words[3:])
    elif program == "pip" or (program.startswith("python") and words[1:3] == ["-m", "pip"]):
        check_pip_command(words)
    elif program in ("bash", "sh") or (program.startswith("python") and words[1].endswith(".py")):
        assert (README.parent / words[1]).is_file(), f"{command}: no file {words[1]}"


PAGES = [README, *sorted((README.parent / "docs").glob("*.md"))]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_command_line_of_the_docs_parses_as_the_code_reads_it(page):
    for command in command_lines(page):
        check_command(command)


def test_the_readme_commands_of_the_first_screen_run(tmp_path):
    """The two set-up commands' programs answer --help, and the README's
    command-line summary names only commands that exist."""
    first = command_lines(README)[:4]
    assert first[0] == "bash scripts/setup.sh" and first[1].startswith(".venv/bin/python examples/link_abstract.py")
    example = subprocess.run([sys.executable, str(README.parent / "examples" / "link_abstract.py"), "--help"],
                             capture_output=True, text=True, timeout=120)
    assert example.returncode == 0 and "--data" in example.stdout, example.stderr[-2000:]


def test_a_command_the_code_does_not_take_is_caught():
    with pytest.raises(AssertionError, match="missing"):
        check_command("python -m spacy_biosyn link-corpus PIPELINE_DIR")
    with pytest.raises(Exception, match="--no-such-option"):
        check_command("python -m spacy_biosyn build --dictionary D --no-such-option OUT")
    with pytest.raises(AssertionError, match="no such variable"):
        check_command("spacy project run all . --vars.no_such_var 1")


def test_the_settings_page_has_a_row_for_every_setting_the_factory_takes_and_no_other():
    import inspect

    from spacy_biosyn.pipeline.factory import make_biosyn_linker

    page = (README.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([^|]*`[^|]*) \|", page, re.M)
    documented = {name for cell in rows for name in re.findall(r"`(\w+)`", cell)}
    taken = set(inspect.signature(make_biosyn_linker).parameters) - {"nlp", "name"}
    assert documented == taken
    # the README's short list names settings that exist
    listed = re.search(r"The ones most changed: (.*?)\n\n", README.read_text(encoding="utf-8"), re.S).group(1)
    assert set(re.findall(r"`(\w+)`", listed)) <= taken
