"""The char tf-idf: fitted and applied as scikit-learn's TfidfVectorizer
fits and applies it, byte for byte, without importing it."""
import numpy as np
import pytest

from spacy_biosyn.search.tfidf import SparseEncoder

NAMES = [
    "breast cancer", "breast neoplasms", "ovarian cancer", "hereditary breast and ovarian cancer syndrome",
    "huntington disease", "huntington chorea", "colorectal adenoma", "adenomatous polyposis coli",
    "g6pd deficiency", "glucose 6 phosphate dehydrogenase deficiency", "type 2 diabetes mellitus", "ataxia telangiectasia",
]


def test_fit_transform_equals_fit_then_transform():
    apart = SparseEncoder().fit(NAMES)
    rows_apart = apart.transform(NAMES)
    together = SparseEncoder()
    rows_together = together.fit_transform(NAMES)

    assert together.vocabulary == apart.vocabulary
    np.testing.assert_array_equal(together._idf, apart._idf)
    for part in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(rows_together, part), getattr(rows_apart, part))
    # and the fitted encoder goes on to transform new text as the other does
    unseen = ["brest cancer", "huntingtons"]
    assert (together.transform(unseen) != apart.transform(unseen)).nnz == 0


def test_fit_transform_gives_scikit_learns_vocabulary_weights_and_rows_a_chunk_at_a_time(monkeypatch):
    from sklearn.feature_extraction.text import TfidfVectorizer

    from spacy_biosyn.search import tfidf

    monkeypatch.setattr(tfidf, "_CHUNK", 5)  # chunks of names that split the list unevenly
    monkeypatch.setattr(tfidf, "_WEIGHED_AT_ONCE", 7)  # and of entries, weighed a few rows at a time
    names = NAMES + ["brest  cancer", "café au lait spots", "ß-thalassemia", "breast cancer"]
    encoder = SparseEncoder()
    ours = encoder.fit_transform(names)
    reference = TfidfVectorizer(analyzer="char", ngram_range=(1, 2), lowercase=False, dtype=np.float32)
    theirs = reference.fit_transform(names).tocsr().sorted_indices()  # as a build kept them
    assert encoder.vocabulary == {gram: int(column) for gram, column in reference.vocabulary_.items()}
    np.testing.assert_array_equal(encoder._idf, reference.idf_)
    assert encoder._idf.dtype == np.float32
    for part in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(ours, part), getattr(theirs, part))
    with pytest.raises(TypeError, match="not the str"):
        SparseEncoder().fit("breast cancer")


def test_a_large_vocabularys_rows_are_kept_in_an_unnamed_file_and_mapped(tmp_path, monkeypatch):
    from spacy_biosyn.files import spill
    from spacy_biosyn.search import tfidf

    in_memory = SparseEncoder().fit_transform(NAMES)
    monkeypatch.setattr(spill, "FILE_FROM_BYTES", 1)  # every vocabulary counts as large
    monkeypatch.setattr(tfidf, "_CHUNK", 5)
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path))
    mapped = SparseEncoder().fit_transform(NAMES)
    for part in ("indptr", "indices", "data"):
        array = getattr(mapped, part)
        np.testing.assert_array_equal(array, getattr(in_memory, part))
        while not isinstance(array, np.memmap):
            array = array.base
    assert list((tmp_path / "spill").iterdir()) == []  # unnamed: nothing left if the process dies


def test_transform_gives_scikit_learns_rows_without_importing_it(tmp_path):
    import subprocess
    import sys

    from sklearn.feature_extraction.text import TfidfVectorizer

    texts = [
        "breast cancer", "brest  cancer", "breast\tcancer", "breast \t\n cancer", " huntington ", "",
        "zzz", "qqq xx", "g6pd-deficiency (type ii)", "café au lait spots", "ß-thalassemia", "a" * 40,
        "type 2 diabetes mellitus, non-insulin-dependent",
    ]
    encoder = SparseEncoder().fit(NAMES)
    reference = TfidfVectorizer(analyzer="char", ngram_range=(1, 2), lowercase=False, dtype=np.float32).fit(NAMES)
    ours, theirs = encoder.transform(texts), reference.transform(texts).tocsr()
    for part in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(ours, part), getattr(theirs, part))
    assert ours.dtype == np.float32 and ours.shape == (len(texts), encoder.n_features)

    # A loaded pipeline's first mentions: the saved state, transformed, with scikit-learn never imported.
    encoder.to_disk(tmp_path / "tfidf.json")
    script = (
        "import sys; from spacy_biosyn.search.tfidf import SparseEncoder; "
        f"rows = SparseEncoder().from_disk({str(tmp_path / 'tfidf.json')!r}).transform(['brest cancer']); "
        "print(rows.nnz, 'sklearn' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == [str(encoder.transform(["brest cancer"]).nnz), "False"]


@pytest.mark.parametrize("state", [
    {"vocabulary": {"a": 0, "b": 2}, "idf": [1.0, 1.5]},  # a column past the weights
    {"vocabulary": {"a": 0, "b": 1}, "idf": [1.0]},
    {"vocabulary": {"a": 0, "b": 1}, "idf": [1.0, -2.0]},
    {"vocabulary": {"a": 0, "b": 1}, "idf": [1.0, 1e39]},  # infinite in float32
    {"vocabulary": {"a": 0, "b": 1}, "idf": [1.0, 1e-50]},  # zero in float32
    {"vocabulary": {"a": 0, "b": "1"}, "idf": [1.0, 1.5]},
    {"vocabulary": ["a", "b"], "idf": [1.0, 1.5]},
    {"idf": [1.0]},
    [1, 2],
])
def test_a_saved_state_that_would_score_wrong_is_refused_naming_the_file(tmp_path, state):
    import srsly

    from spacy_biosyn.errors import SavedStateError

    srsly.write_json(tmp_path / "tfidf.json", state)
    with pytest.raises(SavedStateError, match="tfidf.json"):
        SparseEncoder().from_disk(tmp_path / "tfidf.json")


def test_transform_refuses_a_bare_string_and_takes_any_iterable():
    encoder = SparseEncoder().fit(NAMES)
    with pytest.raises(TypeError, match="a list of texts, not the str 'breast cancer'"):
        encoder.transform("breast cancer")
    assert (encoder.transform(t for t in ["breast cancer"]) != encoder.transform(["breast cancer"])).nnz == 0


def test_a_large_vocabulary_whose_cache_folder_cannot_be_written_keeps_its_rows_in_memory(tmp_path, monkeypatch):
    from spacy_biosyn.files import spill

    monkeypatch.setattr(spill, "FILE_FROM_BYTES", 1)
    (tmp_path / "cache").write_text("a file where the cache folder belongs", encoding="utf-8")
    monkeypatch.setenv("SPACY_BIOSYN_CACHE", str(tmp_path / "cache"))
    with pytest.warns(UserWarning, match="kept in memory"):
        rows = SparseEncoder().fit_transform(NAMES)
    assert (rows != SparseEncoder().fit(NAMES).transform(NAMES)).nnz == 0


def test_fitting_on_names_that_are_all_empty_is_refused():
    with pytest.raises(ValueError, match="every name is empty"):
        SparseEncoder().fit(["", ""])
