"""The names' tf-idf rows on disk: saved as their n-gram counts where they
are a tf-idf's, weighed again into the very same float32 rows at load;
else, or when large, as float32 rows mapped from the file."""
import io
import zipfile

import numpy as np
import pytest
from scipy import sparse

from spacy_biosyn.errors import SavedStateError
from spacy_biosyn.files.storage import mapped_npz
from spacy_biosyn.search import tfidf_rows
from spacy_biosyn.search.tfidf import SparseEncoder, counts_behind, weigh
from spacy_biosyn.search.tfidf_rows import load_tfidf_rows, save_tfidf_rows

# MEDIC-like names, with rows whose every n-gram occurs twice or more
# ("ddd": d 3 times, dd twice), and a count past 255.
NAMES = [
    "breast cancer", "hereditary breast and ovarian cancer syndrome", "huntington disease",
    "g6pd deficiency", "glucose 6 phosphate dehydrogenase deficiency", "ataxia  telangiectasia",
    "café au lait spots", "ß-thalassemia", "ddd", "aaa", "deafness, dystonia, and optic neuronopathy syndrome",
    "b" + "a" * 300,
]


def same_bits(a: sparse.csr_matrix, b: sparse.csr_matrix) -> bool:
    return (a.shape == b.shape and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data.view(np.uint32), b.data.view(np.uint32)))


@pytest.fixture
def fitted():
    encoder = SparseEncoder()
    return encoder, encoder.fit_transform(NAMES)


def test_a_tfidfs_rows_are_saved_as_counts_and_load_as_the_very_same_float32_rows(fitted, tmp_path):
    encoder, rows = fitted
    save_tfidf_rows(tmp_path / "counts.npz", rows, encoder.idf)
    save_tfidf_rows(tmp_path / "float32.npz", rows)

    saved = mapped_npz(tmp_path / "counts.npz")
    assert saved["format"].item() == b"tfidf-counts"
    assert saved["columns"].dtype == np.uint16
    assert saved["counts"].dtype == np.uint16  # a 300 times
    assert saved["counts"].max() == 300
    # the rows of "ddd" and "aaa": no n-gram once, counts found all the same
    ddd = NAMES.index("ddd")
    assert sorted(saved["counts"][saved["indptr"][ddd] : saved["indptr"][ddd + 1]].tolist()) == [2, 3]
    assert (tmp_path / "counts.npz").stat().st_size < (tmp_path / "float32.npz").stat().st_size / 2
    for file in ("counts.npz", "float32.npz"):
        loaded = load_tfidf_rows(tmp_path / file)
        assert loaded.dtype == np.float32
        assert same_bits(loaded, rows), file
    # and the loaded rows score a new mention as the built ones do
    query = encoder.transform(["hereditary breast cancer"]).T
    np.testing.assert_array_equal((load_tfidf_rows(tmp_path / "counts.npz") @ query).toarray(), (rows @ query).toarray())


def test_rows_that_are_not_the_given_tfidfs_are_saved_as_float32(fitted, tmp_path):
    encoder, rows = fitted
    other = SparseEncoder().fit(NAMES[:6] + ["tooth agenesis"])
    edited = rows.copy()
    edited.data[3] *= 1.0001
    # a row whose rarest n-gram occurs 299 times: counts past those tried
    rare = encoder.transform(NAMES[:3] + ["a" * 300])
    for given, kept in ((other.idf, rows), (encoder.idf, edited), (encoder.idf[:-1], rows), (encoder.idf, rare)):
        assert counts_behind(kept, given) is None
        save_tfidf_rows(tmp_path / "rows.npz", kept, given)
        assert mapped_npz(tmp_path / "rows.npz")["format"].item() == b"csr"
        assert same_bits(load_tfidf_rows(tmp_path / "rows.npz"), kept)


def test_rows_of_a_large_vocabulary_stay_float32_to_be_mapped_from_the_file(fitted, tmp_path, monkeypatch):
    encoder, rows = fitted
    monkeypatch.setattr(tfidf_rows, "COUNTS_UP_TO_BYTES", rows.nnz * 8 - 1)
    save_tfidf_rows(tmp_path / "rows.npz", rows, encoder.idf)
    assert mapped_npz(tmp_path / "rows.npz")["format"].item() == b"csr"
    assert same_bits(load_tfidf_rows(tmp_path / "rows.npz"), rows)


def test_rows_with_a_name_without_known_ngrams_round_trip(fitted, tmp_path):
    encoder, _ = fitted
    rows = encoder.transform(["breast cancer", "ЖЖЖ", "", "ovarian cancer"])  # two empty rows
    save_tfidf_rows(tmp_path / "rows.npz", rows, encoder.idf)
    assert mapped_npz(tmp_path / "rows.npz")["format"].item() == b"tfidf-counts"
    assert same_bits(load_tfidf_rows(tmp_path / "rows.npz"), rows)


@pytest.mark.parametrize("edit, value", [
    ("columns", lambda a: np.where(np.arange(len(a)) == 5, 60_000, a).astype(a.dtype)),  # past the idf
    ("counts", lambda a: np.where(np.arange(len(a)) == 2, 0, a).astype(a.dtype)),
    ("indptr", lambda a: a[::-1].copy()),
    ("idf", lambda a: a[:-1]),
    ("idf", lambda a: -a),
    ("shape", lambda a: np.array([len(NAMES) + 1, a[1]])),
    ("shape", lambda a: np.array([-1, a[1]])),
    ("indptr", lambda a: np.concatenate(([0, a[-1] + 5], a[2:])).astype(np.uint32)),  # out of order, unsigned
    ("counts", lambda a: a.astype(np.int64)),
    ("columns", lambda a: a.reshape(1, -1)),
    ("idf", lambda a: np.full_like(a, 3e38)),  # squares past float32
])
def test_edited_counts_are_refused_naming_the_file(fitted, tmp_path, edit, value):
    encoder, rows = fitted
    save_tfidf_rows(tmp_path / "rows.npz", rows, encoder.idf)
    arrays = {name: np.array(array) for name, array in mapped_npz(tmp_path / "rows.npz").items()}
    arrays[edit] = value(arrays[edit])
    np.savez_compressed(tmp_path / "rows.npz", **arrays)
    with pytest.raises(SavedStateError, match="rows.npz does not hold tf-idf counts"):
        load_tfidf_rows(tmp_path / "rows.npz")


def test_counts_sharing_a_factor_are_found_and_saved(fitted, tmp_path):
    # A row whose counts are all 5 (a name added without refitting, some of
    # its n-grams unknown): its ratios are whole at once, but 1, 1, 1 does
    # not weigh back to its values; 5, 5, 5 does.
    encoder, rows = fitted
    columns = np.array([0, 5, 9], dtype=np.int32)
    def counted(count):
        return sparse.csr_matrix((np.full(3, count, np.uint16), columns, np.array([0, 3])), shape=(1, rows.shape[1]))
    shared = weigh(counted(5), encoder.idf)
    assert not same_bits(weigh(counted(1), encoder.idf), shared)
    both = sparse.vstack([rows, shared], format="csr")
    assert counts_behind(both, encoder.idf)[-3:].tolist() == [5, 5, 5]
    save_tfidf_rows(tmp_path / "rows.npz", both, encoder.idf)
    assert mapped_npz(tmp_path / "rows.npz")["format"].item() == b"tfidf-counts"
    assert same_bits(load_tfidf_rows(tmp_path / "rows.npz"), both)


@pytest.mark.parametrize("write", [
    lambda path: path.write_bytes(b"not a zip archive"),
    lambda path: np.savez_compressed(path, format=np.array([b"csr", b"csr"])),
    lambda path: np.savez_compressed(path, format=np.array(b"tfidf-counts"), counts=np.array([object()])),
])
def test_a_file_that_holds_no_rows_is_refused_naming_it(tmp_path, write):
    write(tmp_path / "rows.npz")
    with pytest.raises(SavedStateError, match="rows.npz(:.* holds Python objects| does not hold)"):
        load_tfidf_rows(tmp_path / "rows.npz")


def _csr_members(rows) -> dict:
    return {"format": np.array(b"csr"), "shape": np.array(rows.shape), "data": rows.data.copy(),
            "indices": rows.indices.copy(), "indptr": rows.indptr.copy()}


@pytest.mark.parametrize("edit", ["negative column", "column past the width", "NaN weight", "negative weight",
                                  "row starts out of order", "one row start short", "last start past the entries",
                                  "integer weights"])
def test_float32_rows_edited_so_scipy_would_crash_or_read_past_an_array_are_refused_naming_the_file(tmp_path, edit):
    rows = sparse.csr_matrix(np.array([[0.5, 0, 0.5], [0, 1.0, 0], [0.2, 0.3, 0.5]], dtype=np.float32))
    members = _csr_members(rows)
    if edit == "negative column":
        members["indices"][1] = -3
    elif edit == "column past the width":
        members["indices"][1] = 1_000_000
    elif edit == "NaN weight":
        members["data"][0] = np.nan
    elif edit == "negative weight":
        members["data"][0] = -1
    elif edit == "row starts out of order":
        members["indptr"][1], members["indptr"][2] = members["indptr"][2], members["indptr"][1]
    elif edit == "one row start short":
        members["indptr"] = members["indptr"][:-1]
    elif edit == "last start past the entries":
        members["indptr"][-1] += 5
    elif edit == "integer weights":
        members["data"] = members["data"].astype(np.int32)
    np.savez(tmp_path / "rows.npz", **members)  # stored, as the float32 layout is: mapped on load
    with pytest.raises(SavedStateError, match=r"rows.npz does not hold tf-idf rows scipy can read safely"):
        load_tfidf_rows(tmp_path / "rows.npz")
    np.savez(tmp_path / "fine.npz", **_csr_members(rows))
    assert same_bits(load_tfidf_rows(tmp_path / "fine.npz"), rows)


def test_counts_that_would_unpack_a_thousand_fold_are_refused_before_any_member_is_unpacked(fitted, tmp_path):
    """A deflated member of zeros: half a megabyte on disk, 200 MB of
    counts once unpacked; refused from the zip's directory alone."""
    encoder, rows = fitted
    with (tmp_path / "rows.npz").open("wb") as f:
        np.savez_compressed(f, format=np.array(b"tfidf-counts"), shape=np.array(rows.shape),
                            counts=np.zeros(200_000_000, np.uint8), columns=rows.indices.astype(np.uint16),
                            indptr=rows.indptr, idf=encoder.idf)
    unpacked = []
    real_read = np.lib.format.read_array
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(np.lib.format, "read_array", lambda *a, **k: unpacked.append(1) or real_read(*a, **k))
        with pytest.raises(SavedStateError, match=r"rows.npz: its arrays would unpack to 200,00\d,\d+ bytes from "
                                                  r"[\d,]+, past the 64-fold this package's saves reach"):
            load_tfidf_rows(tmp_path / "rows.npz")
    assert unpacked == []


def test_a_member_whose_array_header_does_not_match_its_size_is_refused_before_it_is_unpacked(fitted, tmp_path):
    encoder, rows = fitted
    save_tfidf_rows(tmp_path / "rows.npz", rows, encoder.idf)
    with zipfile.ZipFile(tmp_path / "rows.npz") as saved:
        members = {info.filename: saved.read(info) for info in saved.infolist()}
    # the counts' header says a million entries; their bytes hold the real few
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "|u1", "fortran_order": False, "shape": (1_000_000,)})
    counts = members["counts.npy"]
    members["counts.npy"] = header.getvalue() + counts[len(counts) - rows.nnz * np.dtype(
        mapped_npz(tmp_path / "rows.npz")["counts"].dtype).itemsize:]
    with zipfile.ZipFile(tmp_path / "edited.npz", "w", zipfile.ZIP_DEFLATED) as edited:
        for name, data in members.items():
            edited.writestr(name, data)
    with pytest.raises(SavedStateError, match=r"edited.npz: counts.npy declares an array \(1000000,\) of uint\d+ "
                                              r"that its [\d,]+ bytes do not hold"):
        load_tfidf_rows(tmp_path / "edited.npz")
