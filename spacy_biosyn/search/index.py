"""Search: the k dictionary names with the highest S = dense + lambda * sparse.

`ExactIndex` (the default) ranks as brute force does: the dense score of
every name is one matrix product with the name vectors (BLAS), over chunks
of mentions sized to bound memory, and the tf-idf score is added for the
names that a bound leaves able to reach the top k. On MEDIC's 72k names
that is about four times faster than faiss's flat search of a candidate
pool, which spent its time keeping heaps. The vectors are held column-major
(each dimension's values for all names side by side), which halves the
product's time for the few mentions of one doc (docs/record.md),
and saved so as a .npy file. On disk they are 16-bit integers with a
scale per name by default (`vector_precision`, int16_vectors.py): half the
bytes, turned back into float32 at load, since a product in 16 bits has
no fast instructions on an AVX2 CPU. NCBI and BC5CDR dev keep their Acc@1
and top-1 names (docs/record.md). They are rounded when the index is built,
so a pipeline links the same before and after a save. float32 files are
memory-mapped at load instead: loading reads no vector until a search
needs it.

In memory the vectors are float32 by default (`held_precision`), decoded
once at load. Held as int16, the saved codes stay memory-mapped and each
search decodes them 2,048 names at a time into one buffer: the same
float32 values in half the memory, for a search that decodes every name
again (docs/speed.md says what each costs). A product per block may sum
in another order than one over all names (BLAS's choice, with few
mentions): scores within float32 rounding, the same links on NCBI and
BC5CDR dev (docs/record.md).

The tf-idf rows are saved as their n-gram counts, weighed again at load,
or, for a large vocabulary, uncompressed and memory-mapped too: a search
reads only the rows it scores (tfidf_rows.py).

`FaissIndex` (faiss_index.py) trades exactness for memory and speed on
dictionaries of millions of names.
"""
from contextlib import contextmanager
from pathlib import Path
from tokenize import TokenError
from typing import Iterator, Literal, Optional, Tuple, Union

import numpy as np
from scipy import sparse

from ..checks import brief, is_whole_number
from ..errors import MismatchError, SavedStateError
from ..files.storage import read_npy_header
from ..parts import EXACT_INDEX, EXACT_INDEX_V1, EXACT_INDEX_V2, EXACT_INDEX_V3, registry
from ..ty import NameVectors
from .index_base import FAISS_FILE, IndexBase, import_faiss, save_array
from .int16_vectors import checked_map, decode_into, from_int16, int16_codes, read_int16
from .scoring import biosyn_scores, max_sparse_gain, sorts_by_group_bound, top_k

VECTORS_FILE = "vectors.npy"
# The scale of each name's int16 vector.
SCALES_FILE = "vector_scales.npy"
# How the name vectors are saved: `vector_precision`'s choices.
VectorPrecision = Literal["int16", "float32"]
VECTOR_PRECISIONS = ("int16", "float32")
# Settings that say how a loaded index holds its saved state, not what it
# saves: a load may choose them, and caches of built indexes ignore them.
HOLDING_SETTINGS = ("held_precision",)
# Names decoded at a time when the index holds int16 codes: a 3 MiB buffer
# of MiniLM's float32 vectors, which stays in the CPU's L2 or L3 cache for
# the product.
DECODED_NAMES = 2048
# How many names of highest dense score per rank give the k-th S that
# prunes the search: with 4 (over 1), NCBI dev's mentions had 724 MEDIC
# names each to score in full instead of 1,574 (docs/record.md).
SEEDS_PER_RANK = 4
# How many (mention, name) pairs the exact search scores in one step: their
# tf-idf rows are copied for the product, so this bounds its memory (about
# 8 MB for MEDIC's rows) however many names the pruning leaves; NCBI dev
# searched as fast as with 2^16 pairs and 20 MiB lower at the peak.
PAIRS_PER_STEP = 2**14
# A chunk of scores is float32 (mentions x names): at most 4 GiB.
MOST_CHUNK_SCORES = 2**30


@registry.misc(EXACT_INDEX)
class ExactIndex(IndexBase):
    """Exact search: the ranking of S over every name for every mention.
    `chunk_scores` is how many (mention, name) dense scores one chunk
    holds, and PAIRS_PER_STEP how many pairs' tf-idf rows a step copies:
    together they bound the search's memory whatever the dictionary's size.
    `vector_precision` is how the name vectors are saved (and rounded when
    built), `held_precision` how they are held in memory; searches are
    float32 either way."""

    def __init__(self, chunk_scores: int = 2**23, vector_precision: VectorPrecision = "int16",
                 held_precision: VectorPrecision = "float32"):
        if not is_whole_number(chunk_scores, 1, MOST_CHUNK_SCORES):
            raise ValueError(f"chunk_scores must be a whole number from 1 to {MOST_CHUNK_SCORES:,}, "
                             f"got {brief(chunk_scores)}")
        check_vector_precision(vector_precision)
        check_held_precision(held_precision, vector_precision)
        super().__init__()
        self.chunk_scores = chunk_scores
        self.vector_precision = vector_precision
        self.held_precision = held_precision
        # float32 vectors, or their int16 codes where held_precision says so.
        self._vectors: Optional[np.ndarray] = None
        # With int16, each name's scale, from which a save gets its codes back.
        self._scales: Optional[np.ndarray] = None

    @property
    def dim(self) -> int:
        return self._vectors.shape[1]

    @property
    def vectors(self) -> np.ndarray:
        """The name vectors (n_names x dim); read-only when memory-mapped,
        decoded anew when held as int16 codes."""
        return from_int16(self._vectors, self._scales) if self._holds_codes() else self._vectors

    def reconstruct(self, ids: np.ndarray) -> np.ndarray:
        ids = np.asarray(ids, dtype=np.int64)
        if self._holds_codes():
            return self._vectors[ids].astype(np.float32) * self._scales[ids, None]
        return self._vectors[ids]

    @property
    def holds_exact_vectors(self) -> bool:
        return True

    def _build_dense(self, vectors: NameVectors) -> None:
        # Held whole in the end: at the sizes this index is for, the float32 copy is a passing cost.
        self._vectors, self._scales = self._as_held(vectors.whole())

    def _add_dense(self, vectors: np.ndarray) -> None:
        added, scales = self._as_held(vectors)
        self._vectors = np.asfortranarray(np.concatenate([self._vectors, added]))
        if scales is not None:
            self._scales = np.concatenate([self._scales, scales])

    def _as_held(self, vectors: np.ndarray) -> Tuple[np.ndarray, Optional[np.ndarray]]:
        """float32 `vectors` as a save and a load will give them back (or
        their int16 codes, where held so), and their int16 scales."""
        if self.vector_precision == "float32":
            return np.asfortranarray(vectors), None
        codes, scales = int16_codes(vectors)
        if self.held_precision == "int16":
            return np.asfortranarray(codes), scales
        return from_int16(codes, scales), scales

    def _holds_codes(self) -> bool:
        return self._vectors is not None and self._vectors.dtype == np.int16

    def _dense_scores(self, dense_q: np.ndarray) -> np.ndarray:
        """Each mention's dense score with every name."""
        if not self._holds_codes():
            return dense_q @ self._vectors.T
        codes, scales = self._vectors, self._scales
        dense = np.empty((len(dense_q), len(codes)), dtype=np.float32)
        # Column-major, as the float32 vectors are held.
        block = np.empty((min(DECODED_NAMES, len(codes)), codes.shape[1]), dtype=np.float32, order="F")
        for start in range(0, len(codes), DECODED_NAMES):
            stop = min(start + DECODED_NAMES, len(codes))
            vectors = decode_into(block[: stop - start], codes[start:stop], scales[start:stop])
            np.matmul(dense_q, vectors.T, out=dense[:, start:stop])
        return dense

    def _chunk_size(self) -> int:
        return max(1, self.chunk_scores // max(1, len(self)))

    def _search_chunk(self, dense_q, sparse_q, weight, k):
        dense = self._dense_scores(dense_q)
        # No name's S exceeds its dense score + max_sparse_gain. The k-th best
        # S among the names of highest dense score is one that the true k-th
        # S reaches; only names whose dense score comes within that headroom
        # of it can rank, and only they are scored in full: usually a few
        # hundred of MEDIC's 72k, where a sparse product with every name took
        # a third of the search.
        headroom = max_sparse_gain(weight)
        # Where 4 k would make top_k sort whole rows (dictionaries of 7,680 to
        # 30,719 names for k = 30), the k best suffice, as they did before.
        seeds = top_k(dense, SEEDS_PER_RANK * k if sorts_by_group_bound(len(self), SEEDS_PER_RANK * k) else k)
        queries = sparse_q.toarray()
        seed_rows = np.repeat(np.arange(len(dense)), seeds.shape[1])
        seed_totals = self._totals(dense, queries, seed_rows, seeds.ravel(), weight).reshape(seeds.shape)
        kth_total = -np.partition(-seed_totals, k - 1, axis=1)[:, k - 1]
        # float32 rounds scores in the hundreds (dot-product encoders) by more
        # than the headroom's tolerance: a few steps of it more.
        able = dense >= (kth_total - headroom - 4 * np.spacing(np.abs(kth_total)))[:, None]
        # The seeds always, whatever the rounding: each row keeps at least k.
        able[seed_rows, seeds.ravel()] = True
        scores = np.empty((len(dense), k), dtype=np.float32)
        ids = np.empty((len(dense), k), dtype=np.int64)
        for group in _row_groups(able.sum(axis=1), PAIRS_PER_STEP):
            flat = np.flatnonzero(able[group])
            rows = flat // dense.shape[1]
            candidates = flat - rows * dense.shape[1]
            rows += group.start
            totals = self._totals(dense, queries, rows, candidates, weight, flat + group.start * dense.shape[1])
            # The k best reach the seeds' k-th S, which leaves a few pairs a
            # row, ranked best first; lexsort is stable, and the pairs come in
            # id order, so equal S stay in id order, as top_k ranks them.
            kept = np.flatnonzero(totals >= kth_total[rows])
            order = kept[np.lexsort((-totals[kept], rows[kept]))]
            best = order[np.searchsorted(rows[order], np.arange(group.start, group.stop))[:, None] + np.arange(k)]
            scores[group], ids[group] = totals[best], candidates[best]
        return scores, ids

    def _totals(self, dense, queries, rows, names, weight, positions=None) -> np.ndarray:
        """S of each (mention row, name) pair: its dense score plus weight
        x its tf-idf score, summed as the product of the name's row with the
        mention's (scipy's, in the row's order) whatever the pairs, which
        come sorted by row. `positions`: their places in dense.ravel(), where
        known."""
        if positions is None:
            positions = rows * dense.shape[1] + names
        # A flat take: four times faster than dense[rows, names].
        dense_scores = dense.ravel().take(positions)
        totals = np.empty(len(names), dtype=np.float32)
        width = queries.shape[1]
        index_type = np.int64 if queries.size > np.iinfo(np.int32).max else np.int32
        for start in range(0, len(names), PAIRS_PER_STEP):
            step = slice(start, start + PAIRS_PER_STEP)
            picked = self._sparse[names[step]]
            first, last = rows[step][[0, -1]]
            if first == last:  # one mention's pairs (rows come sorted): its row of the queries
                sparse_scores = picked @ queries[first]
            else:
                # The pairs' rows as one sparse matrix against the chunk's queries
                # laid end to end: one product for the pairs, not one per mention.
                shifted = np.repeat(rows[step].astype(index_type) * width, np.diff(picked.indptr))
                shifted += picked.indices
                laid_out = sparse.csr_matrix((picked.data, shifted, picked.indptr), shape=(len(picked.indptr) - 1, queries.size))
                sparse_scores = laid_out @ queries.ravel()
            totals[step] = biosyn_scores(dense_scores[step], sparse_scores, weight)
        return totals

    def to_disk(self, path: Union[str, Path], *, idf: Optional[np.ndarray] = None) -> None:
        super().to_disk(path, idf=idf)
        path = Path(path)
        if self._scales is None:
            # Column-major in the file too, so the memory map is the search layout.
            save_array(path / VECTORS_FILE, np.asfortranarray(self._vectors))
            (path / SCALES_FILE).unlink(missing_ok=True)  # an int16 save's, in the same folder
        else:
            # The codes again, exactly: a code times its scale, over the scale, rounds back to the code.
            codes = self._vectors if self._holds_codes() else np.rint(self._vectors / self._scales[:, None]).astype(np.int16)
            save_array(path / VECTORS_FILE, np.asfortranarray(codes))
            save_array(path / SCALES_FILE, self._scales)

    def from_disk(self, path: Union[str, Path]) -> "ExactIndex":
        path = Path(path)
        super().from_disk(path)
        if (path / VECTORS_FILE).exists():
            vectors = _saved_array(path / VECTORS_FILE, "matrix of name vectors", mmap_mode="r")
        elif (path / FAISS_FILE).exists():
            vectors = _flat_vectors(path / FAISS_FILE)
        else:
            raise SavedStateError(f"{path} holds no name vectors ({VECTORS_FILE})")
        if vectors.ndim != 2 or vectors.dtype.name not in VECTOR_PRECISIONS:
            raise SavedStateError(
                f"{path / VECTORS_FILE} holds {vectors.dtype} of shape {vectors.shape}, "
                "not an int16 or float32 matrix of name vectors"
            )
        if vectors.dtype.name != self.vector_precision:
            raise MismatchError(
                f"{path / VECTORS_FILE} holds {vectors.dtype} vectors but the index is configured with "
                f"vector_precision = {self.vector_precision!r}: load the pipeline with the config it was "
                "saved with, or rebuild the index"
            )
        self._vectors, self._scales = vectors, None
        if vectors.dtype == np.int16:
            self._scales = _saved_scales(path / SCALES_FILE, len(vectors))
            if self.held_precision == "float32":
                self._vectors = read_int16(path / VECTORS_FILE, vectors, self._scales)
            else:
                self._vectors = checked_map(path / VECTORS_FILE, vectors)
        return self


def _row_groups(pairs_per_row: np.ndarray, budget: int) -> Iterator[slice]:
    """Consecutive rows whose pairs add up to `budget` at most, or one row
    that alone has more."""
    start, held = 0, 0
    for row, pairs in enumerate(pairs_per_row.tolist()):
        if row > start and held + pairs > budget:
            yield slice(start, row)
            start, held = row, 0
        held += pairs
    if len(pairs_per_row):
        yield slice(start, len(pairs_per_row))


def check_vector_precision(vector_precision: str) -> None:
    if vector_precision not in VECTOR_PRECISIONS:
        raise ValueError(f"vector_precision must be one of {', '.join(VECTOR_PRECISIONS)}, got {vector_precision!r}")


def check_held_precision(held_precision: str, vector_precision: str) -> None:
    """int16 codes can be held only where they are saved."""
    if held_precision not in VECTOR_PRECISIONS:
        raise ValueError(f"held_precision must be one of {', '.join(VECTOR_PRECISIONS)}, got {held_precision!r}")
    if held_precision == "int16" and vector_precision != "int16":
        raise ValueError(f"held_precision = 'int16' holds the int16 codes that vector_precision = 'int16' saves; "
                         f"vector_precision is {vector_precision!r}: set both to 'int16', or held_precision to 'float32'")


@registry.misc(EXACT_INDEX_V3)
def exact_index_v3(chunk_scores: int = 2**23, vector_precision: VectorPrecision = "int16") -> ExactIndex:
    """What pipelines saved before v4 name: float32 vectors in memory."""
    return ExactIndex(chunk_scores, vector_precision)


@registry.misc(EXACT_INDEX_V2)
def exact_index_v2(chunk_scores: int = 2**23) -> ExactIndex:
    """What pipelines saved before v3 name: float32 vectors on disk."""
    return ExactIndex(chunk_scores, vector_precision="float32")


@registry.misc(EXACT_INDEX_V1)
def exact_index_v1(pool_size: int = 64, chunk_size: int = 128) -> ExactIndex:
    """What pipelines saved before v2 name. v1 searched a faiss pool under a
    bound; v2 returns the same exact ranking by scoring every name, so
    these settings have nothing left to set."""
    return ExactIndex(vector_precision="float32")


def _saved_array(file: Path, what: str, mmap_mode: Optional[str] = None) -> np.ndarray:
    """A .npy file's array, never unpickled; SavedStateError naming the file if it holds none."""
    with _refused_unless_saved(file, what):
        return np.asarray(np.load(file, mmap_mode=mmap_mode, allow_pickle=False))


@contextmanager
def _refused_unless_saved(file: Path, what: str) -> Iterator[None]:
    try:
        yield
    # missing, pickled, objects, cut short, or a header numpy cannot parse
    except (ValueError, OSError, EOFError, SyntaxError, TokenError) as error:
        raise SavedStateError(f"{file} is not a saved {what} ({error}); save or build the pipeline again") from None


def _saved_scales(file: Path, n_names: int) -> np.ndarray:
    what = "list of vector scales"
    with _refused_unless_saved(file, what), file.open("rb") as f:
        shape, _, dtype = read_npy_header(f)  # before any of it is read: a header may claim terabytes
    scales = _saved_array(file, what) if shape == (n_names,) else None
    if scales is None or scales.dtype != np.float32 or not (np.isfinite(scales) & (scales > 0)).all():
        raise SavedStateError(
            f"{file} holds {dtype} of shape {shape}, not {n_names:,} positive float32 "
            "scales, one a name; save or build the pipeline again"
        )
    return scales


def _flat_vectors(path: Path) -> np.ndarray:
    faiss = import_faiss(f"{path}, an index saved before spacy_biosyn.ExactIndex.v2,")

    index = faiss.read_index(str(path))
    dense = faiss.downcast_index(index)  # a view: `index` must outlive it
    if not isinstance(dense, faiss.IndexFlat):
        raise ValueError(
            f"{path} is a faiss {type(dense).__name__}, not the flat "
            "index of spacy_biosyn.ExactIndex: configure the spacy_biosyn.FaissIndex.v1 "
            "back-end that built it"
        )
    return dense.reconstruct_batch(np.arange(dense.ntotal, dtype=np.int64))
