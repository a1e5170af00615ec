"""Small vocabulary files in each real format, as their publishers write
them, for the readers' and the named linkers' tests."""

# BioSyn's copy of MEDIC: IDs||Name|Synonym|..., IDs in no meaningful order.
MEDIC_PIPES = """\
C565588||Epidermolysis Bullosa With Diaphragmatic Hernia
114480|D001943||Breast Neoplasms|Breast Cancer|Mammary Carcinoma, Human
145250||Hyperphosphatasemia, Idiopathic|HPP
266140|C563004||Hypophosphatasia, Infantile|HPP
"""

CTD_TSV = """\
# Comparative Toxicogenomics Database (CTD) - http://ctdbase.org/
# Fields:
# DiseaseName\tDiseaseID\tAltDiseaseIDs\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms\tSlimMappings
#
Breast Neoplasms\tMESH:D001943\tDO:DOID:1612|OMIM:114480\tTumors or cancer of the human BREAST.\tMESH:D001941|MESH:D009371\tC04.588.180|C17.800.090.500\tC04.588|C17.800.090\tBreast Cancer|Breast Carcinoma|Mammary Carcinoma, Human\tCancer|Skin disease
Ovarian Neoplasms\tMESH:D010051\t\tTumors or cancer of the OVARY.\tMESH:D004701\tC04.588.322.455\tC04.588.322\tCancer of Ovary|Ovarian Cancer\tCancer|Endocrine system disease
"""

MRCONSO = """\
C0006142|ENG|P|L0006142|PF|S0014128|Y|A0027669||M0002779|D001943|MSH|MH|D001943|Breast Neoplasms|0|N|256|
C0006142|ENG|S|L0006144|PF|S0014131|Y|A0027671||M0002779|D001943|MSH|EN|D001943|Breast Cancer|0|N|256|
C0006142|FRE|P|L0215744|PF|S0300563|Y|A1432178||M0002779|D001943|MSHFRE|MH|D001943|Tumeurs du sein|3|N||
C0006142|ENG|S|L1272010|PF|S1523421|N|A1404123||||MTH|OET|NOCODE|Breast tumour, obsolete|0|O||
C0006142|ENG|P|L0006142|PF|S0014128|Y|A8360519||||OMIM|PTAV|114480|Breast cancer|0|N||
C0011849|ENG|P|L0011849|PF|S0028779|Y|A0041908||M0006050|D003920|MSH|MH|D003920|Diabetes Mellitus|0|N|256|
"""

MRSTY = """\
C0006142|T191|B2.2.1.2|Neoplastic Process|AT17683839|256|
C0011849|T047|B2.2.1.2.1|Disease or Syndrome|AT17586397|256|
"""

OBO = """\
format-version: 1.2
ontology: mondo

[Term]
id: MONDO:0007254
name: breast cancer
alt_id: MONDO:0016419
synonym: "breast carcinoma" EXACT [NCIT:C4872]
synonym: "cancer of breast" RELATED []
synonym: "malignant neoplasm of the \\"breast\\"" EXACT []
synonym: "neoplasm" BROAD []
xref: MESH:D001943 {source="MONDO:equivalentTo"}
xref: OMIM:114480
is_a: MONDO:0021100 ! breast neoplasm

[Term]
id: MONDO:0000009
name: obsolete inherited bleeding disorder
is_obsolete: true

[Typedef]
id: part_of
name: part of
"""

SCISPACY = """\
{"concept_id": "C0006142", "canonical_name": "Malignant neoplasm of breast", "aliases": ["Breast Cancer", "breast carcinoma"], "types": ["T191"], "definition": "A malignant tumor of the breast."}
{"concept_id": "C0011849", "canonical_name": "Diabetes Mellitus", "aliases": [], "types": ["T047"]}
"""

# NLM's MeSH ASCII release: a record per *NEWRECORD, "FIELD = value" lines;
# ENTRY keeps the term before its first '|'.
MESH_DESCRIPTORS_BIN = """\
*NEWRECORD
RECTYPE = D
MH = Breast Neoplasms
AQ = BL CF CI CL CO
ENTRY = Breast Cancer|T191|EQV|NLM (1990)|900101|abbcdef|
ENTRY = Mammary Carcinoma, Human|T191|NON|NLM (1990)|900101|abbcdef|
PRINT ENTRY = Tumors, Breast|T191|EQV|NLM (1990)|900101|abbcdef|
MN = C04.588.180
MN = C17.800.090.500
ST = T191
MS = Tumors or cancer of the human BREAST.
UI = D001943

*NEWRECORD
RECTYPE = D
MH = Ovarian Neoplasms
ENTRY = Ovarian Cancer
MN = C04.588.322.455
ST = T191
MS = Tumors or cancer of the OVARY.
UI = D010051
"""
MESH_SUPPLEMENTARY_BIN = """\
*NEWRECORD
RECTYPE = C
NM = tooth agenesis, selective, 6
SY = STHAG6|NLM (2009)|090917|abbcdef|
HM = *Anodontia
ST = T019
NO = autosomal dominant; OMIM 613097
UI = C567755
"""
MESH_DESCRIPTORS_XML = """\
<?xml version="1.0"?>
<!DOCTYPE DescriptorRecordSet SYSTEM "https://www.nlm.nih.gov/databases/dtd/nlmdescriptorrecordset_20250101.dtd">
<DescriptorRecordSet LanguageCode = "eng">
<DescriptorRecord DescriptorClass = "1">
  <DescriptorUI>D001943</DescriptorUI>
  <DescriptorName><String>Breast Neoplasms</String></DescriptorName>
  <TreeNumberList><TreeNumber>C04.588.180</TreeNumber><TreeNumber>C17.800.090.500</TreeNumber></TreeNumberList>
  <ConceptList>
    <Concept PreferredConceptYN="Y">
      <ConceptUI>M0002781</ConceptUI>
      <ConceptName><String>Breast Neoplasms</String></ConceptName>
      <ScopeNote>Tumors or cancer of the human BREAST.</ScopeNote>
      <TermList>
        <Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y">
          <TermUI>T005249</TermUI><String>Breast Neoplasms</String></Term>
        <Term ConceptPreferredTermYN="N" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="N">
          <TermUI>T005250</TermUI><String>Breast Cancer</String></Term>
      </TermList>
    </Concept>
  </ConceptList>
</DescriptorRecord>
</DescriptorRecordSet>
"""
# CTD_chemicals.tsv: ChemicalName, ChemicalID, CasRN, Definition, ParentIDs,
# TreeNumbers, ParentTreeNumbers, Synonyms
CTD_CHEMICALS = """\
# Comparative Toxicogenomics Database (CTD) - http://ctdbase.org/
# Fields:
# ChemicalName\tChemicalID\tCasRN\tDefinition\tParentIDs\tTreeNumbers\tParentTreeNumbers\tSynonyms
#
Doxorubicin\tMESH:D004317\t23214-92-8\tAntineoplastic antibiotic obtained from Streptomyces peucetius.\tMESH:D000903\tD02.455.326.271.665.202.495.500|D04.615.638.325\tD02.455.326.271.665.202.495|D04.615.638\tAdriamycin|Adriblastin
Cisplatin\tMESH:D002945\t15663-27-1\tAn inorganic platinum compound.\tMESH:D017673\tD01.210.375.250|D01.710.100.250\tD01.210.375|D01.710.100\tcis-Diamminedichloroplatinum(II)|Platinol
"""
MONDO_OBO = """\
format-version: 1.2
ontology: mondo

[Term]
id: MONDO:0007254
name: breast cancer
namespace: disease_and_phenotype
def: "A primary or metastatic malignant neoplasm involving the breast." [MONDO:sssom]
synonym: "malignant neoplasm of breast" EXACT []
xref: MESH:D001943
"""
MESH_SUPPLEMENTARY_XML = """\
<?xml version="1.0"?>
<!DOCTYPE SupplementalRecordSet SYSTEM "https://www.nlm.nih.gov/databases/dtd/nlmsupplementalrecordset_20250101.dtd">
<SupplementalRecordSet LanguageCode = "eng">
<SupplementalRecord SCRClass = "3">
  <SupplementalRecordUI>C567755</SupplementalRecordUI>
  <SupplementalRecordName><String>tooth agenesis, selective, 6</String></SupplementalRecordName>
  <Note>autosomal dominant; OMIM 613097</Note>
  <ConceptList>
    <Concept PreferredConceptYN="Y">
      <ConceptUI>M0500263</ConceptUI>
      <ConceptName><String>tooth agenesis, selective, 6</String></ConceptName>
      <TermList>
        <Term ConceptPreferredTermYN="Y" IsPermutedTermYN="N" LexicalTag="NON" RecordPreferredTermYN="Y">
          <TermUI>T000973021</TermUI><String>tooth agenesis, selective, 6</String></Term>
        <Term ConceptPreferredTermYN="N" IsPermutedTermYN="N" LexicalTag="ABB" RecordPreferredTermYN="N">
          <TermUI>T000973022</TermUI><String>STHAG6</String></Term>
      </TermList>
    </Concept>
  </ConceptList>
</SupplementalRecord>
</SupplementalRecordSet>
"""
