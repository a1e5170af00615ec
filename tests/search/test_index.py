"""The exact index must return exactly the brute-force ranking of S; the
approximate back-ends must come close and survive a save and load."""
from pathlib import Path

import numpy as np
import pytest
from helpers import assert_same_ranking
from scipy import sparse
from spacy.util import registry

from spacy_biosyn.errors import MismatchError, SavedStateError
from spacy_biosyn.search.faiss_index import FaissIndex
from spacy_biosyn.search.index import ExactIndex
from spacy_biosyn.search.scoring import pooled_sparse_scores, sparse_scores, top_k
from spacy_biosyn.training.candidates import dense_top_k


def brute_force(names_dense, names_sparse, q_dense, q_sparse, weight, k):
    scores = q_dense @ names_dense.T + weight * (q_sparse @ names_sparse.T).toarray()
    order = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(scores, order, axis=1), order


def memory_mapped(array):
    while array is not None:
        if isinstance(array, np.memmap):
            return True
        array = array.base
    return False


def random_problem(seed, n_names=500, n_queries=40, dim=16, vocab=60):
    rng = np.random.default_rng(seed)

    def unit_rows(m):
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    def tfidf_like(rows):
        m = sparse.random(rows, vocab, density=0.1, random_state=rng, dtype=np.float32)
        diagonal = sparse.csr_matrix(
            (np.ones(rows, np.float32), (np.arange(rows), np.arange(rows) % vocab)), (rows, vocab)
        )
        m = sparse.csr_matrix(m + diagonal)  # no empty rows
        return sparse.csr_matrix(m.multiply(1 / np.sqrt(m.multiply(m).sum(1))))

    return (
        unit_rows(rng.normal(size=(n_names, dim))),
        tfidf_like(n_names),
        unit_rows(rng.normal(size=(n_queries, dim))),
        tfidf_like(n_queries),
    )


@pytest.mark.parametrize("weight", [0.0, 0.125, 1.0, 4.0, -0.5])
@pytest.mark.parametrize("chunk_scores", [1, 3000, 2**23])
def test_search_equals_brute_force(weight, chunk_scores):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=chunk_scores % 97)
    index = ExactIndex(chunk_scores=chunk_scores).build(names_dense, names_sparse)
    scores, ids = index.search(q_dense, q_sparse, weight, k=10)
    # Brute force over the vectors as the index holds them (int16-rounded by default).
    expected_scores, expected_ids = brute_force(index.vectors, names_sparse, q_dense, q_sparse, weight, 10)
    np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ids, expected_ids)


@pytest.mark.parametrize(("n_queries", "sizes"), [(40, [5, 6, 6, 5, 6, 6, 6]), (7, [3, 4]), (6, [6]), (0, [])])
def test_mentions_are_searched_in_chunks_of_even_sizes(monkeypatch, n_queries, sizes):
    # A budget of 6 mentions a chunk: 40 take 7 chunks of 5-6, never 6 x 6 and a last of 4
    # (each chunk passes over every name, whatever its number of mentions).
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=2, n_names=500, n_queries=max(n_queries, 1))
    index = ExactIndex(chunk_scores=6 * 500).build(names_dense, names_sparse)
    seen = []
    search_chunk = ExactIndex._search_chunk
    monkeypatch.setattr(ExactIndex, "_search_chunk", lambda self, d, *rest: seen.append(len(d)) or search_chunk(self, d, *rest))
    scores, ids = index.search(q_dense[:n_queries], q_sparse[:n_queries], 0.125, k=5)
    assert seen == sizes
    expected_scores, expected_ids = brute_force(index.vectors, names_sparse, q_dense[:n_queries], q_sparse[:n_queries],
                                                0.125, 5)
    np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ids, expected_ids)


@pytest.mark.parametrize("weight", [0.0, 0.125, 1.0])
@pytest.mark.parametrize("k", [1, 10, 40])
def test_a_dictionary_large_enough_for_group_bounds_still_equals_brute_force(k, weight):
    # 12,000 names: the seeds (4 k of them, or k = 40 of them) are found by group maxima, not a sort.
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=13, n_names=12_000, n_queries=30)
    q_dense[:10] = names_dense[[5, 70, 187, 188, 2500, 3000, 4095, 4096, 11_990, 11_999]]  # group edges
    index = ExactIndex().build(names_dense, names_sparse)
    scores, ids = index.search(q_dense, q_sparse, weight, k=k)
    expected_scores, expected_ids = brute_force(index.vectors, names_sparse, q_dense, q_sparse, weight, k)
    np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ids, expected_ids)


@pytest.mark.parametrize("chunk_scores", [1, 5000, 2**23])
def test_names_written_alike_tie_and_rank_in_id_order_in_every_row_of_a_chunk(chunk_scores):
    # Each name three times over (rows i, i + 300, i + 600): every S has two
    # equals, and the k-th place falls among them in many rows. Vectors of
    # eighths make every dense score exact, so copies tie whatever the BLAS.
    rng = np.random.default_rng(21)
    _, names_sparse, _, q_sparse = random_problem(seed=21, n_names=300, n_queries=25)
    names_dense = np.vstack([rng.integers(-4, 5, size=(300, 16)) / 8] * 3).astype(np.float32)
    names_sparse = sparse.vstack([names_sparse] * 3, format="csr")
    q_dense = (rng.integers(-4, 5, size=(25, 16)) / 8).astype(np.float32)
    q_dense[:5] = names_dense[[0, 7, 299, 150, 42]]
    index = ExactIndex(chunk_scores=chunk_scores, vector_precision="float32").build(names_dense, names_sparse)
    for k in (1, 2, 3, 4, 11):
        scores, ids = index.search(q_dense, q_sparse, 0.5, k=k)
        expected_scores, expected_ids = brute_force(names_dense, names_sparse, q_dense, q_sparse, 0.5, k)
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)


def test_scores_in_the_hundreds_keep_each_mentions_own_best_name():
    # A dot-product encoder's S runs to hundreds, where float32 rounds by
    # more than 1e-5: a seed once fell out of its own candidates, and the
    # row took the next mention's name and score.
    names = np.array([[-13.606684, -13.189784, 4.6233573, 11.451823],
                      [-2.3323019, 17.217052, -35.250504, 13.37807]], dtype=np.float32)
    tfidf = sparse.csr_matrix(np.array([[0.21288958, 0.10866015, 0.97101545],
                                        [0.6482034, 0.5924879, 0.4783204]], dtype=np.float32))
    scores, ids = ExactIndex(vector_precision="float32").build(names, tfidf).search(names, tfidf, 1.0, k=1)
    expected_scores, expected_ids = brute_force(names, tfidf, names, tfidf, 1.0, 1)
    np.testing.assert_array_equal(ids, expected_ids)
    np.testing.assert_allclose(scores, expected_scores, rtol=1e-6)


def test_a_mention_vector_holding_nan_is_refused_naming_its_row():
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=23)
    q_dense[3, 0] = np.nan
    index = ExactIndex().build(names_dense, names_sparse)
    with pytest.raises(ValueError, match=r"1 of 40 mention vectors hold NaN or infinity \(the first: row 3\)"):
        index.search(q_dense, q_sparse, 0.5, k=5)


def test_many_pairs_are_scored_a_step_at_a_time_and_rank_as_brute_force(monkeypatch):
    # A weight that leaves most names able to rank, in steps of 1,000 pairs
    # (a row alone may pass that), gives the brute-force ranking still.
    import spacy_biosyn.search.index as index_module

    monkeypatch.setattr(index_module, "PAIRS_PER_STEP", 1000)
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=24, n_names=3000, n_queries=30)
    index = ExactIndex().build(names_dense, names_sparse)
    for k in (1, 30):
        scores, ids = index.search(q_dense, q_sparse, 4.0, k=k)
        expected_scores, expected_ids = brute_force(index.vectors, names_sparse, q_dense, q_sparse, 4.0, k)
        np.testing.assert_array_equal(ids, expected_ids)
        np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)


def test_k_larger_than_dictionary_returns_every_name():
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=3, n_names=7)
    scores, ids = ExactIndex().build(names_dense, names_sparse).search(q_dense, q_sparse, 1.0, k=50)
    assert ids.shape == (q_dense.shape[0], 7)
    assert all(sorted(row) == list(range(7)) for row in ids.tolist())


def test_round_trip_gives_identical_results(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=5)
    index = ExactIndex().build(names_dense, names_sparse)
    index.to_disk(tmp_path / "index")
    loaded = ExactIndex().from_disk(tmp_path / "index")
    for a, b in zip(index.search(q_dense, q_sparse, 0.5, 5), loaded.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


def test_loaded_float32_vectors_and_tfidf_rows_are_memory_mapped_and_still_take_new_names(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=6, n_names=5000)
    ExactIndex(vector_precision="float32").build(names_dense[:4000], names_sparse[:4000]).to_disk(tmp_path / "index")
    loaded = ExactIndex(vector_precision="float32").from_disk(tmp_path / "index")
    rows = loaded.sparse_vectors
    assert all(memory_mapped(a) for a in (loaded.vectors, rows.data, rows.indices))
    loaded.add(names_dense[4000:], names_sparse[4000:])
    expected = brute_force(names_dense, names_sparse, q_dense, q_sparse, 0.5, 10)
    for a, b in zip(loaded.search(q_dense, q_sparse, 0.5, 10), expected):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_vectors_are_saved_column_major_and_row_major_files_of_earlier_versions_rank_alike(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=8, n_names=3000)
    index = ExactIndex(vector_precision="float32").build(names_dense, names_sparse)
    index.to_disk(tmp_path / "index")
    assert np.load(tmp_path / "index" / "vectors.npy", mmap_mode="r").flags.f_contiguous
    np.save(tmp_path / "index" / "vectors.npy", np.ascontiguousarray(names_dense))  # as saved before
    old = registry.misc.get("spacy_biosyn.ExactIndex.v2")().from_disk(tmp_path / "index")
    assert old.vectors.flags.c_contiguous
    expected = brute_force(names_dense, names_sparse, q_dense, q_sparse, 0.5, 10)
    for searched in (index, old):
        for a, b in zip(searched.search(q_dense, q_sparse, 0.5, 10), expected):
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-5)


def test_an_index_saved_before_v2_loads_with_identical_results(tmp_path):
    # ExactIndex.v1 saved a flat faiss index; configs saved then name v1.
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=8)
    FaissIndex("Flat").build(names_dense, names_sparse).to_disk(tmp_path / "index")
    old = registry.misc.get("spacy_biosyn.ExactIndex.v1")(pool_size=64, chunk_size=128)
    old.from_disk(tmp_path / "index")
    new = ExactIndex(vector_precision="float32").build(names_dense, names_sparse)
    for a, b in zip(old.search(q_dense, q_sparse, 0.5, 5), new.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


def test_vectors_are_saved_in_int16_by_default_half_the_bytes_and_rank_alike_after_a_load(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=12, n_names=3000)
    names_dense[7] = 0  # a zero vector stays zero
    for precision in ("int16", "float32"):
        ExactIndex(vector_precision=precision).build(names_dense, names_sparse).to_disk(tmp_path / precision)
    saved = {p: np.load(tmp_path / p / "vectors.npy", mmap_mode="r") for p in ("int16", "float32")}
    assert saved["int16"].dtype == np.int16 and saved["int16"].flags.f_contiguous
    assert saved["int16"].nbytes * 2 == saved["float32"].nbytes
    assert not (tmp_path / "float32" / "vector_scales.npy").exists()
    index = ExactIndex().build(names_dense, names_sparse)
    loaded = ExactIndex().from_disk(tmp_path / "int16")
    assert loaded.vectors.dtype == np.float32 and loaded.vectors.flags.f_contiguous
    np.testing.assert_allclose(loaded.vectors, names_dense, rtol=0, atol=2e-5)
    assert not loaded.vectors[7].any()
    # Rounded at the build, so a save changes nothing; and a save of the load gives the same files.
    np.testing.assert_array_equal(index.vectors, loaded.vectors)
    for a, b in zip(index.search(q_dense, q_sparse, 0.5, 5), loaded.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)
    loaded.to_disk(tmp_path / "again")
    for name in ("vectors.npy", "vector_scales.npy"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "int16" / name).read_bytes()


@pytest.mark.parametrize("order", ["F", "C"])
def test_int16_codes_read_a_few_dimensions_at_a_time_decode_to_the_same_bits(tmp_path, order):
    # 70 dimensions: blocks of 32, 32 and 6; a row-major file is decoded from its map as it is.
    from spacy_biosyn.search.int16_vectors import from_int16, int16_codes, read_int16

    vectors = np.random.default_rng(4).normal(size=(301, 70)).astype(np.float32)
    codes, scales = int16_codes(vectors)
    np.save(tmp_path / "codes.npy", np.asarray(codes, order=order))
    mapped = np.load(tmp_path / "codes.npy", mmap_mode="r")
    read = read_int16(tmp_path / "codes.npy", mapped, scales)
    assert read.flags.f_contiguous
    np.testing.assert_array_equal(read, from_int16(codes, scales))


def test_int16_codes_with_bytes_beyond_what_the_header_says_are_refused_naming_the_file(tmp_path):
    # np.load maps such a file; read from its end, the codes would be shifted without a word.
    from spacy_biosyn.search.int16_vectors import int16_codes, read_int16

    codes, scales = int16_codes(np.random.default_rng(5).normal(size=(40, 6)).astype(np.float32))
    np.save(tmp_path / "codes.npy", np.asfortranarray(codes))
    with open(tmp_path / "codes.npy", "ab") as f:
        f.write(b"\0" * 6)
    mapped = np.load(tmp_path / "codes.npy", mmap_mode="r")
    with pytest.raises(SavedStateError, match=r"codes\.npy holds 486 bytes after its header, which says 480"):
        read_int16(tmp_path / "codes.npy", mapped, scales)


@pytest.mark.parametrize("saved, configured", [("int16", "float32"), ("float32", "int16")])
def test_vectors_saved_in_another_precision_than_configured_are_refused_naming_file_and_setting(
    tmp_path, saved, configured
):
    names_dense, names_sparse, _, _ = random_problem(seed=14)
    ExactIndex(vector_precision=saved).build(names_dense, names_sparse).to_disk(tmp_path / "index")
    with pytest.raises(MismatchError, match=rf"vectors.npy holds {saved} vectors but the index is configured "
                                            rf"with vector_precision = '{configured}'"):
        ExactIndex(vector_precision=configured).from_disk(tmp_path / "index")


@pytest.mark.parametrize(("n_queries", "dim"), [(1, 16), (40, 16), (1, 384), (2, 384), (3, 384)])
def test_int16_held_codes_rank_as_float32_held_vectors(n_queries, dim):
    # 5,000 names: three buffers of decoded names (2,048 each); a few mentions, or forty in chunks of 4.
    # A product per buffer may sum in another order than one over all names: scores to float32 rounding.
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=31, n_names=5000, n_queries=n_queries, dim=dim)
    fast = ExactIndex(chunk_scores=20_000).build(names_dense, names_sparse)
    lean = ExactIndex(chunk_scores=20_000, held_precision="int16").build(names_dense, names_sparse)
    for k in (1, 10):
        (fast_scores, fast_ids), (lean_scores, lean_ids) = (
            index.search(q_dense, q_sparse, 0.5, k) for index in (fast, lean))
        np.testing.assert_array_equal(lean_ids, fast_ids)
        np.testing.assert_allclose(lean_scores, fast_scores, rtol=0, atol=1e-6)
    np.testing.assert_array_equal(lean.vectors, fast.vectors)
    ids = np.array([[3, 4999], [0, 2048]])
    np.testing.assert_array_equal(lean.reconstruct(ids), fast.reconstruct(ids))


def test_int16_held_codes_stay_memory_mapped_save_the_same_files_and_take_new_names(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=32, n_names=3000)
    ExactIndex().build(names_dense[:2500], names_sparse[:2500]).to_disk(tmp_path / "saved")
    fast = ExactIndex().from_disk(tmp_path / "saved")
    lean = ExactIndex(held_precision="int16").from_disk(tmp_path / "saved")
    assert lean._vectors.dtype == np.int16 and memory_mapped(lean._vectors)  # paged in from the file, not decoded
    lean.to_disk(tmp_path / "again")
    for name in ("vectors.npy", "vector_scales.npy"):
        assert (tmp_path / "again" / name).read_bytes() == (tmp_path / "saved" / name).read_bytes()
    for index in (fast, lean):
        index.add(names_dense[2500:], names_sparse[2500:])
    # the same IDs, scores equal up to float32 rounding (int16 codes times their scale in another order)
    (fast_scores, fast_ids), (lean_scores, lean_ids) = (i.search(q_dense, q_sparse, 0.5, 10) for i in (fast, lean))
    for row in range(len(q_dense)):
        assert_same_ranking(fast_ids[row], fast_scores[row], lean_ids[row], lean_scores[row])


def test_int16_codes_held_with_bytes_beyond_what_the_header_says_are_refused_naming_the_file(tmp_path):
    names_dense, names_sparse, _, _ = random_problem(seed=33)
    ExactIndex().build(names_dense, names_sparse).to_disk(tmp_path / "index")
    with open(tmp_path / "index" / "vectors.npy", "ab") as f:
        f.write(b"\0" * 6)
    with pytest.raises(SavedStateError, match=r"vectors\.npy holds 16,006 bytes after its header, which says 16,000"):
        ExactIndex(held_precision="int16").from_disk(tmp_path / "index")


def test_int16_held_vectors_asked_of_a_sized_index_that_chose_faiss_are_said_to_be_unused(tmp_path):
    pytest.importorskip("faiss")
    from spacy_biosyn.search.sized_index import SizedIndex

    names_dense, names_sparse, _, _ = random_problem(seed=34, n_names=300)
    lean = SizedIndex(faiss_from=200, factory="IVF4,SQ8", sparse_dims=0, held_precision="int16")
    with pytest.warns(UserWarning, match=r"held_precision = 'int16' is the exact index's setting; these names are "
                                         r"searched by faiss's IVF4,SQ8"):
        lean.build(names_dense, names_sparse)
    assert lean.kind == "faiss"


@pytest.mark.parametrize("name", ["spacy_biosyn.ExactIndex.v4", "spacy_biosyn.SizedIndex.v3"])
def test_int16_held_vectors_need_int16_saved_ones_and_a_held_precision_that_is_one(name):
    with pytest.raises(ValueError, match="held_precision = 'int16' holds the int16 codes that vector_precision = "
                                         "'int16' saves; vector_precision is 'float32'"):
        registry.misc.get(name)(vector_precision="float32", held_precision="int16")
    with pytest.raises(ValueError, match="held_precision must be one of int16, float32, got 'float16'"):
        registry.misc.get(name)(held_precision="float16")


@pytest.mark.parametrize("name", ["spacy_biosyn.ExactIndex.v3", "spacy_biosyn.SizedIndex.v2",
                                  "spacy_biosyn.ExactIndex.v4", "spacy_biosyn.SizedIndex.v3"])
def test_a_vector_precision_that_is_not_one_is_refused_naming_the_choices(name):
    with pytest.raises(ValueError, match="vector_precision must be one of int16, float32, got 'bfloat16'"):
        registry.misc.get(name)(vector_precision="bfloat16")


def test_tfidf_rows_saved_compressed_by_earlier_versions_load_with_identical_results(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=10)
    index = ExactIndex().build(names_dense, names_sparse)
    index.to_disk(tmp_path / "index")
    sparse.save_npz(tmp_path / "index" / "sparse.npz", names_sparse, compressed=True)
    loaded = ExactIndex().from_disk(tmp_path / "index")
    for a, b in zip(index.search(q_dense, q_sparse, 0.5, 5), loaded.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("size", [10, 100_000])
def test_tfidf_rows_holding_python_objects_are_never_unpickled(tmp_path, size):
    names_dense, names_sparse, _, _ = random_problem(seed=11)
    ExactIndex().build(names_dense, names_sparse).to_disk(tmp_path / "index")
    np.savez(tmp_path / "index" / "sparse.npz", data=np.array([object()] * size), format=np.array(b"csr"))
    with pytest.raises(ValueError, match="object|Object"):
        ExactIndex().from_disk(tmp_path / "index")


def _save_float64_vectors(folder, names_dense, names_sparse):
    ExactIndex().build(names_dense, names_sparse).to_disk(folder)
    np.save(folder / "vectors.npy", names_dense.astype(np.float64))


def _save_scales_of_other_names(folder, names_dense, names_sparse):
    ExactIndex().build(names_dense, names_sparse).to_disk(folder)
    np.save(folder / "vector_scales.npy", np.ones(3, np.float32))


def _save_negative_scales(folder, names_dense, names_sparse):
    ExactIndex().build(names_dense, names_sparse).to_disk(folder)
    np.save(folder / "vector_scales.npy", -np.load(folder / "vector_scales.npy"))


def _lose_the_scales(folder, names_dense, names_sparse):
    ExactIndex().build(names_dense, names_sparse).to_disk(folder)
    (folder / "vector_scales.npy").unlink()


def _save_an_approximate_index(folder, names_dense, names_sparse):
    FaissIndex("HNSW32").build(names_dense, names_sparse).to_disk(folder)


# Every refusal of ExactIndex.from_disk, each naming the file at fault; those
# of a whole pipeline's save (checksums, files of other saves) are in test_serialization.py.
@pytest.mark.parametrize("save, message", [
    (_save_float64_vectors, r"vectors.npy holds float64"),
    (_save_scales_of_other_names, r"vector_scales.npy holds float32 of shape \(3,\), not 500 positive"),
    (_save_negative_scales, r"vector_scales.npy holds float32 of shape \(500,\), not 500 positive"),
    (_lose_the_scales, r"vector_scales.npy is not a saved list of vector scales"),
    (_save_an_approximate_index, r"dense.faiss is a faiss IndexHNSWFlat"),
])
def test_an_index_folder_that_is_not_an_exact_index_is_refused_naming_the_file(tmp_path, save, message):
    names_dense, names_sparse, _, _ = random_problem(seed=9)
    save(tmp_path / "index", names_dense, names_sparse)
    with pytest.raises(ValueError, match=message):
        ExactIndex().from_disk(tmp_path / "index")


def test_name_vectors_holding_nan_are_refused_at_the_build():
    names_dense, names_sparse, _, _ = random_problem(seed=2)
    names_dense[3, 1] = np.nan
    with pytest.raises(ValueError, match="name vectors hold NaN or infinity"):
        ExactIndex().build(names_dense, names_sparse)


def test_mismatched_dense_and_sparse_rows_are_refused():
    names_dense, names_sparse, _, _ = random_problem(seed=1)
    with pytest.raises(ValueError, match="dense but"):
        ExactIndex().build(names_dense[:-1], names_sparse)


FACTORIES = ["HNSW32", "HNSW32,SQfp16", "HNSW32,SQ8", "IVF8,PQ4", "IVF8,SQ8", "IVF8,SQ4"]


@pytest.mark.parametrize("factory", ["Flat", "HNSW32"])
def test_faiss_index_with_a_pool_of_every_name_equals_brute_force(factory):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=11)
    index = FaissIndex(factory, pool_size=len(names_dense)).build(names_dense, names_sparse)
    scores, ids = index.search(q_dense, q_sparse, 0.5, k=10)
    expected_scores, expected_ids = brute_force(names_dense, names_sparse, q_dense, q_sparse, 0.5, 10)
    np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ids, expected_ids)


@pytest.mark.parametrize(
    "factory,min_recall", [("HNSW32,SQfp16", 0.85), ("HNSW32,SQ8", 0.85), ("IVF8,PQ4", 0.4)]
)
def test_approximate_back_ends_find_most_of_the_true_top_k(factory, min_recall):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=7, n_names=2000, n_queries=50)
    index = FaissIndex(factory, pool_size=32, nprobe=4).build(names_dense, names_sparse)
    _, ids = index.search(q_dense, q_sparse, 0.5, k=10)
    _, expected = brute_force(names_dense, names_sparse, q_dense, q_sparse, 0.5, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids.tolist(), expected.tolist())])
    assert recall >= min_recall
    assert all(len(set(row)) == 10 for row in ids.tolist())  # distinct names, no -1


@pytest.mark.parametrize("factory", FACTORIES)
def test_every_back_end_round_trips(tmp_path, factory):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=5, n_names=1000)
    index = FaissIndex(factory, pool_size=16, nprobe=2).build(names_dense, names_sparse)
    index.to_disk(tmp_path / "index")
    loaded = FaissIndex(factory, pool_size=16, nprobe=2).from_disk(tmp_path / "index")
    for a, b in zip(index.search(q_dense, q_sparse, 0.5, 5), loaded.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("factory", FACTORIES)
def test_a_loaded_faiss_index_is_read_from_a_map_of_its_file_and_still_takes_new_names(tmp_path, factory):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=5, n_names=1000)
    settings = dict(pool_size=16, nprobe=2, sparse_dims=8, sparse_factory="IVF4,SQ8")
    built = FaissIndex(factory, **settings).build(names_dense[:900], names_sparse[:900])
    built.to_disk(tmp_path / "index")
    loaded = FaissIndex(factory, **settings).from_disk(tmp_path / "index")
    if Path("/proc/self/maps").exists():
        mapped = Path("/proc/self/maps").read_text()
        assert str(tmp_path / "index" / "dense.faiss") in mapped and str(tmp_path / "index" / "sparse.faiss") in mapped
    # Grown, a mapped index is copied first: faiss would abort the process.
    for index in (built, loaded):
        index.add(names_dense[900:], names_sparse[900:])
    for a, b in zip(built.search(q_dense, q_sparse, 0.5, 5), loaded.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", ["folder replaced", "load failed midway", "faiss cannot map"])
def test_a_faiss_index_grows_alike_whatever_became_of_the_files_it_was_loaded_from(tmp_path, monkeypatch, case):
    import shutil

    import spacy_biosyn.search.faiss_index as faiss_index

    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=9, n_names=1000)
    settings = dict(pool_size=16, nprobe=2, sparse_dims=8, sparse_factory="IVF4,SQ8")
    built = FaissIndex("IVF8,SQ8", **settings).build(names_dense[:900], names_sparse[:900])
    built.to_disk(tmp_path / "index")
    if case == "faiss cannot map":  # faiss before 1.11, Windows
        monkeypatch.setattr(faiss_index, "_MAP_FLAG", None)
    loaded = FaissIndex("IVF8,SQ8", **settings).from_disk(tmp_path / "index")
    if case == "load failed midway":  # into an index built in memory, which keeps what it had and still grows
        loaded = FaissIndex("IVF8,SQ8", **settings).build(names_dense[:900], names_sparse[:900])
        (tmp_path / "broken").mkdir()
        shutil.copy(tmp_path / "index" / "sparse.faiss", tmp_path / "broken")
        with pytest.raises(ValueError, match="has no dense.faiss"):
            loaded.from_disk(tmp_path / "broken")
    if case == "folder replaced":  # the files it maps are now other files: its own bytes are copied
        shutil.rmtree(tmp_path / "index")
        FaissIndex("IVF8,SQ8", **settings).build(names_dense[100:], names_sparse[100:]).to_disk(tmp_path / "index")
    for index in (built, loaded):
        index.add(names_dense[900:], names_sparse[900:])
    for a, b in zip(built.search(q_dense, q_sparse, 0.5, 5), loaded.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("make", [
    ExactIndex, lambda: ExactIndex(vector_precision="float32"),
    lambda: FaissIndex("IVF8,SQ8", pool_size=16, nprobe=2, sparse_dims=8, sparse_factory="IVF4,SQ8"),
], ids=["exact int16", "exact float32", "faiss"])
def test_a_loaded_index_saved_into_the_folder_it_was_loaded_from_ranks_alike_before_and_after(tmp_path, make):
    # Its files are mapped: written over in place, the process died of SIGBUS.
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=8, n_names=5000, vocab=300)
    make().build(names_dense, names_sparse).to_disk(tmp_path / "index")
    loaded = make().from_disk(tmp_path / "index")
    before = loaded.search(q_dense, q_sparse, 0.5, 5)
    loaded.to_disk(tmp_path / "index")
    for index in (loaded, make().from_disk(tmp_path / "index")):
        for a, b in zip(before, index.search(q_dense, q_sparse, 0.5, 5)):
            np.testing.assert_array_equal(a, b)
    assert not [file.name for file in (tmp_path / "index").iterdir() if file.name.startswith(".")]  # no temporary left


def test_an_unknown_faiss_factory_is_named():
    names_dense, names_sparse, _, _ = random_problem(seed=1)
    with pytest.raises(ValueError, match="'HNSW,nonsense'"):
        FaissIndex("HNSW,nonsense").build(names_dense, names_sparse)


def test_pooled_sparse_scores_equal_the_full_product():
    names_dense, names_sparse, _, q_sparse = random_problem(seed=4)
    ids = np.random.default_rng(0).integers(0, names_sparse.shape[0], size=(q_sparse.shape[0], 7))
    full = sparse_scores(names_sparse, q_sparse)
    pooled = pooled_sparse_scores(names_sparse, q_sparse, ids)
    np.testing.assert_allclose(pooled, np.take_along_axis(full, ids, axis=1), atol=1e-6)


def test_a_projected_sparse_pool_of_every_name_equals_brute_force():
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=12)
    index = FaissIndex("Flat", pool_size=len(names_dense), sparse_dims=16, sparse_factory="Flat")
    scores, ids = index.build(names_dense, names_sparse).search(q_dense, q_sparse, 1.0, k=10)
    expected_scores, expected_ids = brute_force(names_dense, names_sparse, q_dense, q_sparse, 1.0, 10)
    np.testing.assert_allclose(scores, expected_scores, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(ids, expected_ids)


def test_a_projected_sparse_pool_finds_most_of_the_true_top_k_and_round_trips(tmp_path):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=7, n_names=2000, n_queries=50)
    settings = dict(factory="HNSW32,SQfp16", pool_size=32, sparse_dims=32, sparse_factory="HNSW32")
    index = FaissIndex(**settings).build(names_dense, names_sparse)
    scores, ids = index.search(q_dense, q_sparse, 0.5, k=10)
    _, expected = brute_force(names_dense, names_sparse, q_dense, q_sparse, 0.5, 10)
    assert np.mean([len(set(a) & set(b)) / 10 for a, b in zip(ids.tolist(), expected.tolist())]) >= 0.8
    index.to_disk(tmp_path / "index")
    loaded = FaissIndex(**settings).from_disk(tmp_path / "index")
    for a, b in zip((scores, ids), loaded.search(q_dense, q_sparse, 0.5, k=10)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="sparse_dims = 0"):
        FaissIndex("HNSW32", sparse_dims=8).from_disk(_saved_without_projection(tmp_path))


def _saved_without_projection(tmp_path):
    names_dense, names_sparse, _, _ = random_problem(seed=3)
    FaissIndex("HNSW32").build(names_dense, names_sparse).to_disk(tmp_path / "plain")
    return tmp_path / "plain"


@pytest.mark.parametrize("n_names", [50, 20_000])
def test_top_k_keeps_equal_scores_in_id_order_as_a_stable_sort_does(n_names):
    # Scores rounded to one decimal make ties at the k-th place in every row:
    # the short rows take the plain sort, the long ones the group bound.
    scores = np.round(np.random.default_rng(3).random((6, n_names)), 1).astype(np.float32)
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :10]
    np.testing.assert_array_equal(top_k(scores, 10), expected)


def test_training_candidates_break_ties_as_the_search_does():
    # Scores of one decimal tie at the 5th place; argpartition used to keep
    # an arbitrary one of the tied names there.
    names = np.round(np.random.default_rng(0).random((100, 1)), 1).astype(np.float32)
    query = np.ones((1, 1), dtype=np.float32)
    expected = np.argsort(-(query @ names.T), axis=1, kind="stable")[:, :5]
    np.testing.assert_array_equal(dense_top_k(query, names, 5), expected)


def test_without_faiss_the_error_names_the_extra_that_brings_it(monkeypatch):
    from spacy_biosyn.search.index_base import import_faiss

    monkeypatch.setitem(__import__("sys").modules, "faiss", None)  # as if not installed
    with pytest.raises(ImportError, match=r'spacy_biosyn.FaissIndex.v1 needs faiss: pip install "spacy-biosyn\[faiss\]"'):
        import_faiss("spacy_biosyn.FaissIndex.v1")


class ChunkedVectors:
    """Name vectors given as a build from the encoder gives them: a chunk
    at a time and as a training sample, never all at once."""

    def __init__(self, array, chunk=128):
        self.array, self.chunk = array, chunk

    def __len__(self):
        return len(self.array)

    @property
    def dim(self):
        return self.array.shape[1]

    def take(self, rows):
        return self.array[rows]

    def chunks(self):
        for start in range(0, len(self.array), self.chunk):
            yield self.array[start : start + self.chunk]

    def whole(self):
        raise AssertionError("the index asked for every name's vector at once")


@pytest.mark.parametrize("factory", ["Flat", "IVF8,SQ8"])
def test_faiss_filled_a_chunk_at_a_time_ranks_as_one_filled_at_once(factory):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=9, n_names=1000)
    # A training sample smaller than the names, as at UMLS size; tf-idf rows projected a chunk at a time.
    settings = dict(factory=factory, pool_size=16, nprobe=2, sparse_dims=16, sparse_factory="IVF4,SQ8",
                    max_training_names=300)
    whole = FaissIndex(**settings).build(names_dense, names_sparse)
    chunked = FaissIndex(**settings).build(ChunkedVectors(names_dense), names_sparse)
    for a, b in zip(whole.search(q_dense, q_sparse, 0.5, 10), chunked.search(q_dense, q_sparse, 0.5, 10)):
        np.testing.assert_array_equal(a, b)


def test_a_name_vector_holding_nan_in_a_later_chunk_is_refused_by_faiss():
    names_dense, names_sparse, _, _ = random_problem(seed=2)
    names_dense[400, 3] = np.nan
    with pytest.raises(ValueError, match="name vectors hold NaN or infinity"):
        FaissIndex("IVF8,SQ8", max_training_names=100).build(ChunkedVectors(names_dense), names_sparse)


def test_faiss_built_on_tfidf_rows_kept_in_a_file_ranks_saves_and_grows_alike(tmp_path):
    from spacy_biosyn.files.spill import RowsFile

    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=8, n_names=1000)
    written = RowsFile(tmp_path / "spill", *names_sparse.shape, names_sparse.nnz)
    for start in range(0, 1000, 300):
        written.add(names_sparse[start : start + 300])
    settings = dict(factory="IVF8,SQ8", pool_size=16, nprobe=8, sparse_dims=16, sparse_factory="IVF4,SQ8")
    in_memory = FaissIndex(**settings).build(names_dense, names_sparse)
    mapped = FaissIndex(**settings).build(ChunkedVectors(names_dense), written.rows())

    assert memory_mapped(mapped.sparse_vectors.data) and memory_mapped(mapped.sparse_vectors.indices)
    assert list((tmp_path / "spill").iterdir()) == []  # unnamed: nothing left if the process dies
    expected = in_memory.search(q_dense, q_sparse, 0.5, 10)
    for a, b in zip(expected, mapped.search(q_dense, q_sparse, 0.5, 10)):
        np.testing.assert_array_equal(a, b)
    mapped.to_disk(tmp_path / "index")
    loaded = FaissIndex(**settings).from_disk(tmp_path / "index")
    for a, b in zip(expected, loaded.search(q_dense, q_sparse, 0.5, 10)):
        np.testing.assert_array_equal(a, b)
    assert (sparse.load_npz(tmp_path / "index" / "sparse.npz") != names_sparse).nnz == 0  # scipy reads the save
    mapped.add(names_dense[:3] * -1, names_sparse[:3])  # synonyms added to mapped rows
    mapped.to_disk(tmp_path / "grown")
    assert FaissIndex(**settings).from_disk(tmp_path / "grown").sparse_vectors.shape[0] == 1003


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads this process's mapped memory from /proc")
def test_a_pass_over_rows_kept_in_a_file_gives_their_pages_back(tmp_path):
    from spacy_biosyn.files.spill import RowsFile, drop_pages

    def mapped_mib():
        line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("RssFile"))
        return int(line.split()[1]) / 1024

    rng = np.random.default_rng(0)
    n_rows, per_row = 200_000, 40  # 64 MB of values and columns
    rows = sparse.csr_matrix((rng.random(n_rows * per_row, dtype=np.float32),
                              np.tile(np.arange(0, 4000, 100, dtype=np.int32), n_rows),
                              np.arange(0, n_rows * per_row + 1, per_row)), shape=(n_rows, 4000))
    written = RowsFile(tmp_path, *rows.shape, rows.nnz)
    written.add(rows)
    mapped = written.rows()
    before = mapped_mib()
    assert mapped.data.sum() == pytest.approx(rows.data.sum(), rel=1e-4)
    assert (mapped.indices == rows.indices).all()
    read = mapped_mib()
    drop_pages(mapped)
    assert read - before > 48 and mapped_mib() - before < 8
    assert (mapped[5:9] != rows[5:9]).nnz == 0  # read again from the file after


@pytest.mark.parametrize("make", [lambda: ExactIndex(), lambda: FaissIndex("IVF8,SQ8", sparse_dims=8, sparse_factory="Flat")])
def test_a_build_that_fails_midway_leaves_the_index_as_it_was(make):
    names_dense, names_sparse, q_dense, q_sparse = random_problem(seed=3, n_names=600)
    index = make().build(names_dense, names_sparse)
    expected = index.search(q_dense, q_sparse, 0.5, 5)
    other_dense, other_sparse, _, _ = random_problem(seed=4, n_names=500)
    other_dense[450, 0] = np.nan  # in the last chunk: the tf-idf side and the first chunks are done by then
    with pytest.raises(ValueError, match="NaN or infinity"):
        index.build(other_dense if isinstance(index, ExactIndex) else ChunkedVectors(other_dense), other_sparse)
    assert len(index) == 600
    for a, b in zip(expected, index.search(q_dense, q_sparse, 0.5, 5)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("value", [0, 2**31, 1.5])
def test_a_chunk_of_scores_no_machine_holds_is_refused_when_the_index_is_made(value):
    with pytest.raises(ValueError, match=rf"chunk_scores must be a whole number from 1 to 1,073,741,824, got {value}"):
        ExactIndex(chunk_scores=value)


@pytest.mark.parametrize("noise", [-4e-7, 0.0, 4e-7])
def test_names_tied_up_to_float32_rounding_rank_in_vocabulary_order_whatever_the_last_bits(noise):
    """'renal cancer type 0' and 'type 1' score the same in exact
    arithmetic; an AVX2 and an AVX-512 BLAS sum their products apart by
    about 1e-7, which alone ordered them."""
    from spacy_biosyn.search.scoring import tie_order

    scores = np.array([[0.91, 0.85 + noise, 0.85, 0.6]], dtype=np.float32)
    ids = np.array([[4, 12, 11, 2]])
    ranked = np.argsort(-scores, axis=1, kind="stable")
    tied_scores, tied_ids = tie_order(np.take_along_axis(scores, ranked, 1), np.take_along_axis(ids, ranked, 1))
    assert tied_ids.tolist() == [[4, 11, 12, 2]]
    assert tied_scores[0, 0] == np.float32(0.91) and tied_scores[0, 3] == np.float32(0.6)
    # scores apart by more than rounding keep their order, ids aside
    apart = np.array([[0.85 + 1e-4, 0.85]], dtype=np.float32)
    assert tie_order(apart, np.array([[12, 11]]))[1].tolist() == [[12, 11]]
