"""Every function the package registers can be named in a config and
resolved in a fresh process, where nothing of spacy_biosyn has been
imported yet: spaCy finds it through the entry point of its registry's
group in setup.cfg."""
import ast
import configparser
import inspect
import json
import subprocess
import sys
from pathlib import Path

import spacy_biosyn
from spacy.util import registry
from spacy_biosyn import parts
from helpers import EXTRA_MODULES, hiding

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
                    found[(decorator.func.attr, _registered_name(decorator.args[0]))] = f"{module}:{node.name}"
    return found


def _registered_name(node: ast.expr) -> str:
    """The name a decorator registers: a constant of the catalogue, or a string."""
    return getattr(parts, node.id) if isinstance(node, ast.Name) else node.value


def test_the_catalogue_lists_every_registered_name_once_with_its_registry():
    catalogue = {(part.registry, part.name) for part in parts.PARTS}
    assert len(catalogue) == len(parts.PARTS)
    assert catalogue == set(registered_in_source())
    for part in parts.PARTS:
        assert part.name in part.example and part.does and part.contract


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


# A registered name is a contract with every config that names it, so its
# arguments never change: a new signature gets a new version (X.v2) and the
# old name stays as a function that maps its arguments onto the new one, as
# ExactIndex.v1 does. This snapshot is that contract; edit it only by adding.
SIGNATURES = {
    "spacy_biosyn.BiomedicalTokenizer.v1": (),
    "spacy_biosyn.BertWordpieceEncoder.v1": (),
    "spacy_biosyn.DocTensor.v1": (("width", None),),
    "spacy_biosyn.BertTransformer.v1": (
        ("vocab_size", None), ("with_spans", None), ("piece_encoder", None), ("attention_probs_dropout_prob", 0.1),
        ("hidden_act", "gelu"), ("hidden_dropout_prob", 0.1), ("hidden_width", 768), ("intermediate_width", 3072),
        ("layer_norm_eps", 1e-12), ("max_position_embeddings", 512), ("model_max_length", 512),
        ("num_attention_heads", 12), ("num_hidden_layers", 12), ("padding_idx", 0), ("type_vocab_size", 2),
        ("torchscript", False), ("mixed_precision", False), ("grad_scaler_config", {}), ("wrapped_listener", None),
        ("precision", "auto"),
    ),
    "spacy_biosyn.HardEM.v1": (),
    "spacy_biosyn.MarginalNLL.v1": (),
    "spacy_biosyn.PairwiseBCE.v1": (),
    "spacy_biosyn.Ab3P.v1": (),
    "spacy_biosyn.SchwartzHearst.v1": (),
    "spacy_biosyn.ScispacyAbbreviations.v1": (),
    "spacy_biosyn.AliasCountReranker.v1": (
        ("pool_size", 20), ("name_weight", 1.0), ("mean_weight", 0.002), ("count_weight", 0.001)
    ),
    "spacy_biosyn.ConceptCentroids.v1": (("pool_size", 20),),
    "spacy_biosyn.CrossEncoderReranker.v1": (
        ("name", "sentence-transformers/all-MiniLM-L6-v2"), ("candidates", 8), ("context_chars", 100),
        ("first_stage_weight", 20.0), ("max_length", 96), ("batch_size", 64), ("device", "auto"),
        ("keep_exact_matches", True),
    ),
    "spacy_biosyn.ExactIndex.v1": (("pool_size", 64), ("chunk_size", 128)),
    "spacy_biosyn.ExactIndex.v2": (("chunk_scores", 2**23),),
    "spacy_biosyn.ExactIndex.v3": (("chunk_scores", 2**23), ("vector_precision", "int16")),
    "spacy_biosyn.ExactIndex.v4": (("chunk_scores", 2**23), ("vector_precision", "int16"), ("held_precision", "float32")),
    "spacy_biosyn.SizedIndex.v1": (
        ("faiss_from", 1_000_000), ("factory", "IVF4096,SQ8"), ("nprobe", 64), ("sparse_dims", 64),
        ("sparse_factory", "IVF1024,SQ8"),
    ),
    "spacy_biosyn.SizedIndex.v2": (
        ("faiss_from", 1_000_000), ("factory", "IVF4096,SQ8"), ("nprobe", 64), ("sparse_dims", 64),
        ("sparse_factory", "IVF1024,SQ8"), ("vector_precision", "int16"),
    ),
    "spacy_biosyn.SizedIndex.v3": (
        ("faiss_from", 1_000_000), ("factory", "IVF4096,SQ8"), ("nprobe", 64), ("sparse_dims", 64),
        ("sparse_factory", "IVF1024,SQ8"), ("vector_precision", "int16"), ("held_precision", "float32"),
    ),
    "spacy_biosyn.FaissIndex.v1": (
        ("factory", "HNSW32,SQfp16"), ("pool_size", 64), ("ef_search", 128), ("nprobe", 32), ("sparse_dims", 0),
        ("sparse_factory", "HNSW32"), ("max_training_names", 200000), ("chunk_size", 16), ("seed", 0),
    ),
    "spacy_biosyn.OnnxEncoder.v1": (
        ("name", None), ("pooling", "cls"), ("similarity", "cosine"), ("max_length", 25), ("batch_size", 128),
        ("quantize", False), ("threads", 0),
    ),
    "spacy_biosyn.OnnxEncoder.v2": (
        ("name", None), ("pooling", "cls"), ("similarity", "cosine"), ("max_length", 25), ("batch_size", 128),
        ("quantize", False), ("threads", 0), ("names_precision", "auto"),
    ),
    "spacy_biosyn.OnnxEncoder.v3": (
        ("name", None), ("pooling", "cls"), ("similarity", "cosine"), ("max_length", 25), ("batch_size", 128),
        ("weights", None), ("threads", 0), ("names_precision", "auto"),
    ),
    "spacy_biosyn.TransformerEncoder.v1": (
        ("name", None), ("pooling", "cls"), ("similarity", "cosine"), ("max_length", 25), ("batch_size", 128),
        ("device", "auto"),
    ),
    "spacy_biosyn.Sieve.v1": (("exact_match", True), ("threshold", None)),
    "spacy_biosyn.BiosynDictionary.v1": (("path", None), ("preferred_ids", [r"(MESH:)?[CD]\d+", r"(OMIM:)?\d+"])),
    "spacy_biosyn.MedicVocabulary.v1": (("path", None), ("preferred_ids", [r"(MESH:)?[CD]\d+", r"(OMIM:)?\d+"])),
    "spacy_biosyn.OboVocabulary.v1": (("path", None), ("synonym_scopes", ["EXACT", "RELATED"]), ("xref_prefixes", [])),
    "spacy_biosyn.ScispacyKb.v1": (("path", None), ("types", None)),
    "spacy_biosyn.CtdChemicals.v1": (("path", None),),
    "spacy_biosyn.MeshVocabulary.v1": (("path", None),),
    "spacy_biosyn.UmlsVocabulary.v1": (
        ("mrconso", None), ("languages", ["ENG"]), ("suppress", ["N"]), ("sources", None),
        ("alt_id_sources", ["MSH", "OMIM"]), ("mrsty", None), ("semantic_types", None),
    ),
}


def test_registered_names_keep_their_arguments_and_defaults():
    """None stands for a required argument."""
    assert set(SIGNATURES) == {name for _, name in registered_in_source()}, "a name was added or removed"
    for (kind, name) in registered_in_source():
        parameters = inspect.signature(getattr(registry, kind).get(name)).parameters.values()
        found = tuple(
            (p.name, None if p.default is inspect.Parameter.empty else p.default) for p in parameters
        )
        assert found == SIGNATURES[name], f"{name} changed its arguments: register a new version instead"


# The optional extras' modules, and ONNX Runtime, hidden as if they were not installed.
WITHOUT_EXTRAS = hiding(*EXTRA_MODULES, "onnxruntime", "onnx")


def test_every_registered_name_enumerates_and_resolves_without_the_extras():
    """catalogue imports every entry point of a registry it lists: one that
    raised at import broke any tool listing spaCy's registry."""
    script = WITHOUT_EXTRAS + (
        "from importlib.metadata import distribution\n"
        "from spacy.util import registry\n"
        "for entry_point in distribution('spacy-biosyn').entry_points:  # as catalogue's get_all loads them\n"
        "    entry_point.load()\n"
        f"for kind, name in {sorted(registered_in_source())!r}:\n"
        "    getattr(registry, kind).get(name)\n"
        "try:\n"
        "    registry.misc.get('spacy_biosyn.FaissIndex.v1')()\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert 'pip install "spacy-biosyn[faiss]"' in result.stdout


# Each registered plug-in and the contract (spacy_biosyn.ty) it fulfils.
CONTRACTS = {
    "spacy_biosyn.TransformerEncoder.v1": "Encoder",
    "spacy_biosyn.OnnxEncoder.v1": "Encoder",
    "spacy_biosyn.OnnxEncoder.v2": "Encoder",
    "spacy_biosyn.OnnxEncoder.v3": "Encoder",
    "spacy_biosyn.ExactIndex.v1": "SearchIndex",
    "spacy_biosyn.ExactIndex.v2": "SearchIndex",
    "spacy_biosyn.ExactIndex.v3": "SearchIndex",
    "spacy_biosyn.ExactIndex.v4": "SearchIndex",
    "spacy_biosyn.FaissIndex.v1": "SearchIndex",
    "spacy_biosyn.SizedIndex.v1": "SearchIndex",
    "spacy_biosyn.SizedIndex.v2": "SearchIndex",
    "spacy_biosyn.SizedIndex.v3": "SearchIndex",
    "spacy_biosyn.Sieve.v1": "Sieve",
    "spacy_biosyn.AliasCountReranker.v1": "ConceptScorer",
    "spacy_biosyn.ConceptCentroids.v1": "ConceptScorer",
    "spacy_biosyn.CrossEncoderReranker.v1": "Reranker",
    "spacy_biosyn.Ab3P.v1": "AbbreviationDetector",
    "spacy_biosyn.SchwartzHearst.v1": "AbbreviationDetector",
    "spacy_biosyn.ScispacyAbbreviations.v1": "AbbreviationDetector",
}


def test_every_registered_part_fulfils_its_contract():
    from spacy_biosyn import ty

    assert set(CONTRACTS) == {name for kind, name in registered_in_source() if kind == "misc"}
    for name, contract in CONTRACTS.items():
        arguments = {"name": "x"} if "Encoder.v" in name else {}
        part = registry.misc.get(name)(**arguments)
        assert ty.fulfils(part, getattr(ty, contract)), f"{name} does not fulfil ty.{contract}"


def test_the_linker_refuses_a_part_that_breaks_its_contract_naming_the_setting(tiny_encoder, disease_dictionary):
    import pytest
    import spacy

    @registry.misc("test.NotAnIndex.v1")
    def not_an_index():
        return object()

    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match=r"biosyn_linker: index must be spacy_biosyn.SizedIndex.v3, .*"
                                         r"ty.SearchIndex asks for; got object, which lacks __len__, add, build"):
        nlp.add_pipe("biosyn_linker", config={"dictionary": disease_dictionary, "encoder": tiny_encoder,
                                              "index": {"@misc": "test.NotAnIndex.v1"}})
