"""A disease and chemical vocabulary with MeSH-style types, for measuring the
type filters (types / exclude_types) where no MeSH tree numbers can be had.

    python -m benchmarks.typed_vocabulary OUT.tsv

Written as CTD's CTD_diseases.tsv, which the MEDIC reader takes: the concepts
of NCBI Disease's dev_dictionary.txt (MEDIC and the training mentions) with
the tree number "C" (MeSH's Diseases), then the names of BC5CDR-Chemical's
training mentions grouped by ID with "D" (MeSH's Chemicals and Drugs): the
top level of each tree, since the real tree numbers are not on this machine.
"""
from collections import defaultdict

from benchmarks.common import parser
from benchmarks.readers import _namespaced
from spacy_biosyn.kb.ids import IdPreference, split_cuis

HEADER = "# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings\n"


def main() -> None:
    p = parser(__doc__)
    p.add_argument("output")
    args = p.parse_args()
    diseases = defaultdict(list)
    for line in (args.data / "ncbi-disease" / "dev_dictionary.txt").read_text(encoding="utf-8").splitlines():
        ids, _, name = line.partition("||")
        diseases[ids].append(name)
    chemicals = defaultdict(list)
    for path in sorted((args.data / "bc5cdr-chemical" / "train").glob("*.concept")):
        for line in path.read_text(encoding="utf-8").splitlines():
            fields = line.split("||")
            cui, mention = fields[4], fields[3]
            if cui != "-1" and "|" not in cui and mention not in chemicals[cui]:
                chemicals[cui].append(mention)
    # MeSH first, as CTD's MEDIC gives DiseaseID (BioSyn's dictionary leads some concepts with OMIM).
    preference = IdPreference()
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(HEADER)
        for concepts, tree in ((diseases, "C"), (chemicals, "D")):
            for ids, names in concepts.items():
                first, *alt = preference(split_cuis(ids))  # split as the BioSyn reader splits "|" and "+"
                alt_ids = "|".join(map(_namespaced, alt))
                f.write(f"{names[0]}\t{_namespaced(first)}\t{alt_ids}\t\t\t{tree}\t\t{'|'.join(names[1:])}\t\n")
    print(f"{args.output}: {len(diseases)} disease concepts (C), {len(chemicals)} chemical concepts (D)")


if __name__ == "__main__":
    main()
