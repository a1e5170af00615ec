"""A scispaCy user's first week, case by case: answers that looked right
and were wrong without a word. Each row says what the public API gives
now (or the one-line error it raises), with all-MiniLM-L6-v2.

    python -m benchmarks.stress.first_week [--workdir DIR] [--checkout DIR]

MEDIC is the named linker `medic`, built once from a mirror folder holding
a CTD_diseases.tsv.gz written from the data's MEDIC; scispaCy's `mesh` KB
and NLM's MeSH release are small files in their real formats written here.
--workdir keeps the mirror and the cache between runs; --checkout runs the
cases against another checkout of spacy-biosyn (an older commit in a git
worktree), its package first on the path.
"""
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

from benchmarks.common import DATA, cpu_description, parser, print_table

# scispaCy's mesh KB (umls_mesh_2022.jsonl) carries UMLS semantic types, not tree numbers.
SCISPACY_MESH = [
    {"concept_id": "D001943", "canonical_name": "Breast Neoplasms", "aliases": ["Breast Cancer"], "types": ["T191"]},
    {"concept_id": "D003920", "canonical_name": "Diabetes Mellitus", "aliases": ["diabetes"], "types": ["T047"]},
    {"concept_id": "D000082", "canonical_name": "Acetaminophen", "aliases": ["paracetamol"], "types": ["T109", "T121"]},
]
DESCRIPTOR = """<DescriptorRecord><DescriptorUI>{ui}</DescriptorUI><DescriptorName><String>{name}</String></DescriptorName>
<TreeNumberList><TreeNumber>{tree}</TreeNumber></TreeNumberList><ConceptList><Concept PreferredConceptYN="Y">
<TermList><Term><String>{name}</String></Term></TermList></Concept></ConceptList></DescriptorRecord>"""
MESH_DESCRIPTORS = "<DescriptorRecordSet>" + "".join(DESCRIPTOR.format(ui=u, name=n, tree=t) for u, n, t in [
    ("D001943", "Breast Neoplasms", "C04.588.180"), ("D000082", "Acetaminophen", "D02.065.199.092.040"),
]) + "</DescriptorRecordSet>"
MESH_SUPPLEMENTARY = """<SupplementalRecordSet><SupplementalRecord><SupplementalRecordUI>C535734</SupplementalRecordUI>
<SupplementalRecordName><String>Breast Cancer 3</String></SupplementalRecordName>
<HeadingMappedToList><HeadingMappedTo><DescriptorReferredTo><DescriptorUI>*D001943</DescriptorUI></DescriptorReferredTo>
</HeadingMappedTo></HeadingMappedToList><ConceptList><Concept PreferredConceptYN="Y"><TermList>
<Term><String>Breast Cancer 3</String></Term><Term><String>BRCA3</String></Term></TermList></Concept></ConceptList>
</SupplementalRecord></SupplementalRecordSet>"""


def write_mirror(mirror: Path) -> None:
    from benchmarks.named_linkers import write_ctd_diseases

    mirror.mkdir(parents=True, exist_ok=True)
    if not (mirror / "CTD_diseases.tsv.gz").exists():
        write_ctd_diseases(DATA / "resources" / "medic_06Jul2012.txt", mirror / "CTD_diseases.tsv.gz")
    (mirror / "umls_mesh_2022.jsonl").write_text("".join(json.dumps(c) + "\n" for c in SCISPACY_MESH))
    (mirror / "desc2026.gz").write_bytes(gzip.compress(MESH_DESCRIPTORS.encode()))
    (mirror / "supp2026.gz").write_bytes(gzip.compress(MESH_SUPPLEMENTARY.encode()))


def outcome(call) -> str:
    """What a call gives, or the first line of the error it raises."""
    try:
        return str(call())
    except Exception as error:  # noqa: BLE001: the row says what was raised
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"


def linked(nlp, text: str, *mentions: str) -> str:
    from spacy.tokens import Span

    doc = nlp.make_doc(text)
    doc.ents = [Span(doc, *_tokens(doc, text, m), label="Disease") for m in mentions]
    return ", ".join(f"{s.text} -> {s._.cui}" for s in nlp(doc).ents)


def _tokens(doc, text, mention):
    span = doc.char_span(text.index(mention), text.index(mention) + len(mention))
    return span.start, span.end


def cases(workdir: Path):
    import spacy

    def pipe(config):
        nlp = spacy.blank("en")
        nlp.add_pipe("biosyn_linker", config=config)
        return nlp

    medic = pipe({"linker_name": "medic"})
    linker = medic.get_pipe("biosyn_linker")
    engine = linker.engine
    yield "medic: link a, the, protein, xyzzy syndrome", lambda: [
        (l.cui, round(l.kb_ents[0][1], 3) if l.kb_ents else None)
        for l in engine.link(["a", "the", "protein", "xyzzy syndrome"])]
    yield 'medic: engine.link("breast cancer"), a str', lambda: len(engine.link("breast cancer"))
    yield "medic: an exact name's score", lambda: engine.link(["breast cancer"])[0].kb_ents[0]
    yield 'medic: kb.cui_to_entity["D001943"]', lambda: linker.kb.cui_to_entity["D001943"].canonical_name
    yield 'medic: kb.alias_to_cuis["Breast Cancer"]', lambda: linker.kb.alias_to_cuis["Breast Cancer"]
    yield "medic: a composite cui looked up", lambda: [e.canonical_name for e in linker.kb.entities("OMIM:114480|MESH:D010051")]
    yield "medic: scores say MESH:D001943 is gold D001943", lambda: _gold_spans_score(medic)
    # last of the medic pipe's cases: where it is taken, every later link goes through it
    yield "medic (no tree numbers): linker.types = ['C'], then link", lambda: (
        setattr(linker, "types", ["C"]), linked(medic, "Breast cancer.", "Breast cancer"))[1]
    mesh = pipe({"linker_name": "mesh", "types": ["C"]})
    text = "Breast cancer, diabetes and paracetamol."
    yield "scispaCy mesh, types ['C']", lambda: linked(mesh, text, "Breast cancer", "diabetes", "paracetamol")
    yield "mesh-current, types ['C']: BRCA3", lambda: linked(
        pipe({"linker_name": "mesh-current", "types": ["C"]}), "BRCA3 carriers.", "BRCA3")
    yield "umls-style k=20, max_entities_per_mention=3: saved", lambda: _saved_aliases(workdir)
    yield "an empty types list", lambda: pipe({"linker_name": "medic", "types": []}).get_pipe("biosyn_linker").types
    no_definition = next(c for c in linker.kb.cui_to_entity if not c.startswith("MESH:D"))
    yield f"medic: definition of {no_definition}", lambda: repr(linker.kb.cui_to_entity[no_definition].definition)


def _gold_spans_score(nlp) -> str:
    from spacy.training import Example

    text = "Breast cancer and ovarian cancer."
    reference = nlp.make_doc(text)
    reference.ents = [reference.char_span(0, 13, label="Disease", kb_id="D001943"),
                      reference.char_span(18, 32, label="Disease", kb_id="D010051")]
    predicted = nlp.make_doc(text)
    predicted.ents = [predicted.char_span(0, 13, label="Disease"), predicted.char_span(18, 32, label="Disease")]
    scores = nlp.evaluate([Example(predicted, reference)])
    return f"link_cui_acc {scores['link_cui_acc']}, nel_micro_f {scores['nel_micro_f']}"


def _saved_aliases(workdir: Path) -> str:
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("biosyn_linker", config={"linker_name": "medic", "k": 20, "max_entities_per_mention": 3})
    nlp.to_disk(workdir / "aliases")
    config = (workdir / "aliases" / "config.cfg").read_text()
    saved = {line.split(" = ")[0]: line.split(" = ")[1] for line in config.splitlines()
             if line.split(" = ")[0] in ("k", "max_entities_per_mention", "names_searched", "top_k")}
    (workdir / "aliases" / "config.cfg").write_text(config.replace("top_k = 3", "top_k = 4").replace("top_k = 5", "top_k = 4"))
    loaded = outcome(lambda: spacy.load(workdir / "aliases").get_pipe("biosyn_linker").top_k)
    return f"{saved}; top_k edited to 4 loads as {loaded}"


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--workdir", type=Path, help="keeps the mirror and the cache (default: a new temporary folder)")
    p.add_argument("--checkout", type=Path, help="another spacy-biosyn checkout to run the cases against")
    args = p.parse_args()
    if args.checkout:
        sys.path.insert(0, str(args.checkout.resolve()))
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="first-week-"))
    write_mirror(workdir / "mirror")
    os.environ.update(HF_HUB_OFFLINE="1", SPACY_BIOSYN_MIRROR=str(workdir / "mirror"),
                      SPACY_BIOSYN_CACHE=str(workdir / "cache"))
    print(f"CPU: {cpu_description()}; code: {args.checkout or 'this checkout'}")
    print_table(("case", "gives"), [(name, outcome(call)[:160]) for name, call in cases(workdir)])


if __name__ == "__main__":
    main()
