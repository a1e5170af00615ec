"""Every name the package registers with spaCy: what the part does, the
contract a part of your own must meet to take its place (a Protocol of
ty.py, or spaCy's), and a config block that uses it. Code that names a part
takes the name from here; setup.cfg's entry points are checked against
this catalogue (tests/test_registry.py). A leaf module, cheap to import."""
from typing import NamedTuple

import catalogue


class registry:
    """spaCy's registries of the linker's parts, by their catalogue
    namespaces: what registers here is what `spacy.util.registry.misc` and
    `.readers` find, without importing spaCy into the modules below the
    pipe (the linking engine has no spaCy below it)."""

    misc = catalogue.Registry(("spacy", "misc"), entry_points=True)
    readers = catalogue.Registry(("spacy", "readers"), entry_points=True)


class Part(NamedTuple):
    name: str
    registry: str  # spaCy's registry: misc, readers, architectures, callbacks, losses
    does: str
    contract: str
    example: str


# The linker's encoders
TRANSFORMER_ENCODER = "spacy_biosyn.TransformerEncoder.v1"
ONNX_ENCODER_V1 = "spacy_biosyn.OnnxEncoder.v1"
ONNX_ENCODER_V2 = "spacy_biosyn.OnnxEncoder.v2"
ONNX_ENCODER = "spacy_biosyn.OnnxEncoder.v3"
# The name search
EXACT_INDEX_V1 = "spacy_biosyn.ExactIndex.v1"
EXACT_INDEX_V2 = "spacy_biosyn.ExactIndex.v2"
EXACT_INDEX_V3 = "spacy_biosyn.ExactIndex.v3"
EXACT_INDEX = "spacy_biosyn.ExactIndex.v4"
FAISS_INDEX = "spacy_biosyn.FaissIndex.v1"
SIZED_INDEX_V1 = "spacy_biosyn.SizedIndex.v1"
SIZED_INDEX_V2 = "spacy_biosyn.SizedIndex.v2"
SIZED_INDEX = "spacy_biosyn.SizedIndex.v3"
# Versions that only added a setting a load may choose (held_precision):
# each reads what the one before it saved, so a load may name it instead.
SAME_SAVED_STATE = {EXACT_INDEX_V3: EXACT_INDEX, SIZED_INDEX_V2: SIZED_INDEX}
# Abbreviations
AB3P = "spacy_biosyn.Ab3P.v1"
SCHWARTZ_HEARST = "spacy_biosyn.SchwartzHearst.v1"
SCISPACY_ABBREVIATIONS = "spacy_biosyn.ScispacyAbbreviations.v1"
# Search strategies and re-rankers
SIEVE = "spacy_biosyn.Sieve.v1"
ALIAS_COUNT_RERANKER = "spacy_biosyn.AliasCountReranker.v1"
CONCEPT_CENTROIDS = "spacy_biosyn.ConceptCentroids.v1"
CROSS_ENCODER_RERANKER = "spacy_biosyn.CrossEncoderReranker.v1"
# Vocabulary readers
BIOSYN_DICTIONARY = "spacy_biosyn.BiosynDictionary.v1"
MEDIC_VOCABULARY = "spacy_biosyn.MedicVocabulary.v1"
CTD_CHEMICALS = "spacy_biosyn.CtdChemicals.v1"
UMLS_VOCABULARY = "spacy_biosyn.UmlsVocabulary.v1"
OBO_VOCABULARY = "spacy_biosyn.OboVocabulary.v1"
SCISPACY_KB = "spacy_biosyn.ScispacyKb.v1"
MESH_VOCABULARY = "spacy_biosyn.MeshVocabulary.v1"
# The NER
BERT_TRANSFORMER = "spacy_biosyn.BertTransformer.v1"
BERT_WORDPIECE_ENCODER = "spacy_biosyn.BertWordpieceEncoder.v1"
BIOMEDICAL_TOKENIZER = "spacy_biosyn.BiomedicalTokenizer.v1"
DOC_TENSOR = "spacy_biosyn.DocTensor.v1"
# The factory that runs a transformer NER's BERT without PyTorch
ONNX_TRANSFORMER = "biosyn_onnx_transformer"
# Training objectives of the bi-encoder
MARGINAL_NLL = "spacy_biosyn.MarginalNLL.v1"
HARD_EM = "spacy_biosyn.HardEM.v1"
PAIRWISE_BCE = "spacy_biosyn.PairwiseBCE.v1"

PARTS = (
    Part(TRANSFORMER_ENCODER, "misc", "a Hugging Face model in PyTorch: the encoder that trains", "ty.Encoder",
         '{"@misc": "spacy_biosyn.TransformerEncoder.v1", "name": "cambridgeltl/SapBERT-from-PubMedBERT-fulltext"}'),
    Part(ONNX_ENCODER_V1, "misc", "the ONNX encoder whose builds encode names in fp32, kept for configs that name it",
         "ty.Encoder", '{"@misc": "spacy_biosyn.OnnxEncoder.v1", "name": "..."}'),
    Part(ONNX_ENCODER_V2, "misc", "the ONNX encoder whose graph is fp32 (or int8 with quantize), kept for configs "
         "that name it", "ty.Encoder", '{"@misc": "spacy_biosyn.OnnxEncoder.v2", "name": "...", "quantize": true}'),
    Part(ONNX_ENCODER, "misc", "the same model run by ONNX Runtime, its weights compact (fp16, int8 embeddings), fp32 "
         "or int8, names in bf16 where the CPU has it: links, does not train", "ty.Encoder",
         '{"@misc": "spacy_biosyn.OnnxEncoder.v3", "name": "...", "weights": "fp32"}'),
    Part(EXACT_INDEX_V1, "misc", "the exact index's first signature, kept for configs that name it", "ty.SearchIndex",
         '{"@misc": "spacy_biosyn.ExactIndex.v1"}'),
    Part(EXACT_INDEX_V2, "misc", "the exact index with float32 vectors on disk, kept for configs that name it",
         "ty.SearchIndex", '{"@misc": "spacy_biosyn.ExactIndex.v2"}'),
    Part(EXACT_INDEX_V3, "misc", "the exact index with float32 vectors in memory, kept for configs that name it",
         "ty.SearchIndex", '{"@misc": "spacy_biosyn.ExactIndex.v3"}'),
    Part(EXACT_INDEX, "misc", "every name scored: S = dense + lambda * tf-idf", "ty.SearchIndex",
         '{"@misc": "spacy_biosyn.ExactIndex.v4", "held_precision": "int16"}'),
    Part(FAISS_INDEX, "misc", "approximate search for millions of names (extra faiss)", "ty.SearchIndex",
         '{"@misc": "spacy_biosyn.FaissIndex.v1", "factory": "HNSW32,SQfp16"}'),
    Part(SIZED_INDEX_V1, "misc", "the sized index with float32 vectors on disk, kept for configs that name it",
         "ty.SearchIndex", '{"@misc": "spacy_biosyn.SizedIndex.v1"}'),
    Part(SIZED_INDEX_V2, "misc", "the sized index with float32 vectors in memory, kept for configs that name it",
         "ty.SearchIndex", '{"@misc": "spacy_biosyn.SizedIndex.v2"}'),
    Part(SIZED_INDEX, "misc", "exact below a million names, faiss from there on: the default", "ty.SearchIndex",
         '{"@misc": "spacy_biosyn.SizedIndex.v3"}'),
    Part(AB3P, "misc", "Ab3P's abbreviation pairs, as BioSyn's preprocessing found them", "ty.AbbreviationDetector",
         '{"@misc": "spacy_biosyn.Ab3P.v1"}'),
    Part(SCHWARTZ_HEARST, "misc", "Schwartz and Hearst's pairs, in Python", "ty.AbbreviationDetector",
         '{"@misc": "spacy_biosyn.SchwartzHearst.v1"}'),
    Part(SCISPACY_ABBREVIATIONS, "misc", "the pairs scispaCy's abbreviation_detector set on the doc",
         "ty.AbbreviationDetector", '{"@misc": "spacy_biosyn.ScispacyAbbreviations.v1"}'),
    Part(SIEVE, "misc", "added synonyms searched first", "ty.Sieve", '{"@misc": "spacy_biosyn.Sieve.v1"}'),
    Part(ALIAS_COUNT_RERANKER, "misc", "concepts ranked by their best name, mean and count in the pool",
         "ty.ConceptScorer", '{"@misc": "spacy_biosyn.AliasCountReranker.v1"}'),
    Part(CONCEPT_CENTROIDS, "misc", "concepts ranked by the mean vectors of all their names", "ty.ConceptScorer",
         '{"@misc": "spacy_biosyn.ConceptCentroids.v1"}'),
    Part(CROSS_ENCODER_RERANKER, "misc", "the first stage's names re-scored with the mention's context",
         "ty.Reranker", '{"@misc": "spacy_biosyn.CrossEncoderReranker.v1", "name": "training/reranker"}'),
    Part(BIOSYN_DICTIONARY, "readers", "BioSyn's CUI||name file", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.BiosynDictionary.v1", "path": "dev_dictionary.txt"}'),
    Part(MEDIC_VOCABULARY, "readers", "CTD's MEDIC (CTD_diseases.tsv), or BioSyn's raw MEDIC", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.MedicVocabulary.v1", "path": "CTD_diseases.tsv.gz"}'),
    Part(CTD_CHEMICALS, "readers", "CTD's chemical vocabulary (CTD_chemicals.tsv)", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.CtdChemicals.v1", "path": "CTD_chemicals.tsv.gz"}'),
    Part(UMLS_VOCABULARY, "readers", "UMLS's MRCONSO.RRF, by language, source and semantic type", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.UmlsVocabulary.v1", "mrconso": "MRCONSO.RRF"}'),
    Part(OBO_VOCABULARY, "readers", "an OBO ontology (MONDO, DOID, HPO)", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.OboVocabulary.v1", "path": "mondo.obo"}'),
    Part(SCISPACY_KB, "readers", "a scispaCy KB's JSONL", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.ScispacyKb.v1", "path": "umls_2022_ab_cat0129.jsonl"}'),
    Part(MESH_VOCABULARY, "readers", "NLM's MeSH (desc/supp XML or ASCII)", "() -> Dictionary",
         '{"@readers": "spacy_biosyn.MeshVocabulary.v1", "path": "desc2026.xml"}'),
    Part(BERT_TRANSFORMER, "architectures", "the NER's BERT, bf16 where the hardware has it", "thinc Model",
         '{"@architectures": "spacy_biosyn.BertTransformer.v1", ...}'),
    Part(BERT_WORDPIECE_ENCODER, "architectures", "word pieces of bounded length for the NER's BERT", "thinc Model",
         '{"@architectures": "spacy_biosyn.BertWordpieceEncoder.v1"}'),
    Part(DOC_TENSOR, "architectures", "the token vectors biosyn_onnx_transformer set, read by the NER",
         "thinc Model", '{"@architectures": "spacy_biosyn.DocTensor.v1", "width": 384}'),
    Part(BIOMEDICAL_TOKENIZER, "callbacks", "token boundaries where biomedical annotations end",
         "spaCy's before_creation callback", '{"@callbacks": "spacy_biosyn.BiomedicalTokenizer.v1"}'),
    Part(MARGINAL_NLL, "losses", "BioSyn's synonym marginalization", "a loss over candidate scores",
         '{"@losses": "spacy_biosyn.MarginalNLL.v1"}'),
    Part(HARD_EM, "losses", "the best gold candidate's likelihood", "a loss over candidate scores",
         '{"@losses": "spacy_biosyn.HardEM.v1"}'),
    Part(PAIRWISE_BCE, "losses", "each candidate judged on its own", "a loss over candidate scores",
         '{"@losses": "spacy_biosyn.PairwiseBCE.v1"}'),
)
