"""Vocabulary readers: names, concepts and load time of each, and MEDIC read
from its raw file against BioSyn's train_dictionary.txt on NCBI Disease dev.

    python -m benchmarks.readers [--no-score]

No UMLS, OBO or scispaCy file can be had offline, so the raw MEDIC file is
also written out in each of those formats (and as CTD's TSV), one concept a
MEDIC line, and read back: each reader is timed at MEDIC's size (76k names)
and must find the same names and concepts as the MEDIC reader.

Scoring (unless --no-score): both dictionaries are indexed with MiniLM (the
names are encoded once: they are the same 71,924 strings) and linked on
NCBI dev, BioSyn's processed queries (Acc@1/5) and the raw abstracts' gold
spans (Acc@1 and cui_acc, the share whose span._.cui is gold).
"""
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import spacy

from benchmarks.common import offline_minilm, parser, pct, print_table, progress
from spacy_biosyn import MEDIC_NAMESPACES, IdPreference, read_biosyn, read_medic, read_obo, read_scispacy_kb, read_umls
from spacy_biosyn.corpora.docs import pubtator_to_examples
from spacy_biosyn.corpora.readers import read_concept_queries, read_pubtator
from spacy_biosyn.evaluation.pipelines import evaluate_examples
from spacy_biosyn.evaluation.queries import evaluate

K = 5


def medic_concepts(path: Path):
    """(IDs preferred first, names) of each line of BioSyn's raw MEDIC."""
    preference = IdPreference()
    for line in path.read_text(encoding="utf-8").splitlines():
        ids, _, names = line.partition("||")
        yield preference(tuple(ids.split("|"))), names.split("|")


def _namespaced(cui: str) -> str:
    return f"MESH:{cui}" if cui[0] in "CD" else f"OMIM:{cui}"


def _obo_quoted(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


def write_formats(medic: Path, folder: Path) -> dict:
    """MEDIC rewritten as CTD's TSV, MRCONSO.RRF, OBO and scispaCy JSONL."""
    concepts = list(medic_concepts(medic))
    paths = {name: folder / name for name in ("CTD_diseases.tsv", "MRCONSO.RRF", "medic.obo", "medic.jsonl")}
    with paths["CTD_diseases.tsv"].open("w") as f:
        f.write("# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n")
        for ids, names in concepts:
            alt = "|".join(map(_namespaced, ids[1:]))
            f.write(f"{names[0]}\t{_namespaced(ids[0])}\t{alt}\t\t\t\t\t{'|'.join(names[1:])}\t\n")
    with paths["MRCONSO.RRF"].open("w") as f:
        for i, (ids, names) in enumerate(concepts):
            for j, name in enumerate(names):
                for cui in ids:  # one atom per source code, as UMLS keeps MeSH and OMIM atoms apart
                    sab = "MSH" if cui[0] in "CD" else "OMIM"
                    f.write(f"C{i:07d}|ENG|P|L{i:07d}|PF|S{i:07d}|Y|A{i:07d}{j}||||{sab}|PT|{cui}|{name}|0|N||\n")
    with paths["medic.obo"].open("w") as f:
        f.write("format-version: 1.2\nontology: medic\n")
        for ids, names in concepts:
            f.write(f"\n[Term]\nid: {ids[0]}\nname: {names[0]}\n")
            f.writelines(f"alt_id: {cui}\n" for cui in ids[1:])
            f.writelines(f'synonym: "{_obo_quoted(name)}" EXACT []\n' for name in names[1:])
    with paths["medic.jsonl"].open("w") as f:
        for ids, names in concepts:
            f.write(json.dumps({"concept_id": ids[0], "canonical_name": names[0], "aliases": names[1:], "types": []}) + "\n")
    return paths


def summary(dictionary) -> tuple:
    concepts = {ids[0] for concepts in dictionary.concepts for ids in concepts}
    return len(dictionary), len(concepts)


def timed(read):
    start = time.perf_counter()
    dictionary = read()
    return dictionary, time.perf_counter() - start


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--no-score", action="store_true", help="only load the vocabularies")
    args = p.parse_args()
    medic_path = args.data / "resources" / "medic_06Jul2012.txt"
    biosyn_path = args.data / "ncbi-disease" / "train_dictionary.txt"
    rows, loaded = [], {}
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_formats(medic_path, Path(tmp))
        readers = [
            ("BiosynDictionary", "ncbi-disease/train_dictionary.txt", lambda: read_biosyn(biosyn_path)),
            ("MedicVocabulary", "resources/medic_06Jul2012.txt (raw)", lambda: read_medic(medic_path)),
            ("MedicVocabulary", "MEDIC as CTD_diseases.tsv", lambda: read_medic(paths["CTD_diseases.tsv"])),
            ("UmlsVocabulary", "MEDIC as MRCONSO.RRF", lambda: read_umls(paths["MRCONSO.RRF"])),
            ("OboVocabulary", "MEDIC as OBO", lambda: read_obo(paths["medic.obo"])),
            ("ScispacyKb", "MEDIC as scispaCy JSONL", lambda: read_scispacy_kb(paths["medic.jsonl"])),
        ]
        for reader, source, read in readers:
            dictionary, seconds = timed(read)
            loaded[source] = dictionary
            names, concepts = summary(dictionary)
            rows.append((reader, source, names, concepts, f"{seconds:.2f}"))
            progress(rows[-1])
    raw = loaded["resources/medic_06Jul2012.txt (raw)"]
    same = all(set(d.names) == set(raw.names) for source, d in loaded.items() if "MEDIC" in source)
    print()
    print_table(("reader", "file", "names", "concepts", "load s"), rows)
    print(f"\nevery MEDIC rewrite has the raw file's names: {same}; "
          f"BioSyn's train_dictionary has them too: {set(loaded[readers[0][1]].names) == set(raw.names)}")
    if not args.no_score:
        score(args, {"BioSyn train_dictionary.txt": loaded[readers[0][1]], "raw MEDIC (MedicVocabulary)": raw})


def score(args, dictionaries: dict) -> None:
    nlp = spacy.blank("en")
    # The raw corpus writes OMIM:217000, BioSyn's file 217000 and raw MEDIC MESH:D001943
    component = nlp.add_pipe("biosyn_linker", config={"encoder": args.encoder or offline_minilm(),
                                                      "id_namespaces": MEDIC_NAMESPACES})
    component.top_k = K
    encoder = component.engine.encoder.load()
    names = list(dict.fromkeys(n for d in dictionaries.values() for n in d.names))
    start = time.perf_counter()
    vectors = dict(zip(names, encoder.encode(names)))
    print(f"\nencoded {len(names)} distinct names once in {time.perf_counter() - start:.0f}s", flush=True)
    queries = read_concept_queries(args.data / "ncbi-disease" / "processed_dev")
    documents = read_pubtator(args.data / "ncbi-disease" / "raw" / "NCBIdevelopset_corpus.txt")
    rows = []
    for label, dictionary in dictionaries.items():
        component.engine.set_dictionary(dictionary, vectors=np.stack([vectors[n] for n in dictionary.names]), refit_sparse=True)
        processed = evaluate(component.rank, queries, K, id_namespaces=MEDIC_NAMESPACES)
        raw = evaluate_examples(component.pipe, pubtator_to_examples(nlp, documents), K, id_namespaces=MEDIC_NAMESPACES)
        rows.append((label, pct(processed['link_acc_1']), pct(processed['link_acc_5']),
                     pct(raw['link_acc_1']), pct(raw['link_cui_acc']), raw["n"]))
        progress(rows[-1])
    print()
    print_table(("dictionary", "processed_dev acc@1", "acc@5", "raw dev acc@1", "raw dev cui_acc", "n raw"), rows)


if __name__ == "__main__":
    main()
