"""The open-world NIL decision: whether the vocabulary lacks a mention's
concept, learned from what its ranked names show.

A score threshold cannot tell a right link from a near miss whose concept
is absent ("xyzzy syndrome" scores 0.825 against "xyy syndrome", and a
mention of hypoxia whose concept was removed scores 0.935 against "hypoxia
brain"): both sit at the top of a list. The list says more than its top
score: how far the best concept leads the next, how many of the best names
are its names, whether the names hold the mention's words at all, and
whether the score's two views agree: a near miss often leads on one of
the encoder and the character tf-idf and not on the other. `FEATURES`
are read from a mention's normalized text, its ranked candidates and the
vocabulary's tf-idf (`SparseView`), so the decision needs nothing the
engine does not have.

The model is scikit-learn's HistGradientBoostingClassifier: 100 trees of
depth 3. The features act together (a lead means little where the best
name is the mention itself with one more word): at the same cost on the
benchmark's dev sets, logistic regression over the same features left
25% and 22% of the absent concepts' mentions NIL, the trees 36% and 50%;
the agreement features took the trees' share from 41.9% to 49.4% (NCBI)
and from 51.2% to 58.1% (BC5CDR) at no lower accuracy (docs/record.md). The trees are kept as plain arrays, saved as JSON (no
pickle) and walked with numpy, so linking never imports scikit-learn.

It learns from an annotated corpus's mentions (`preferred_ids_from`), each
ranked as it is (a right link where its gold concept comes first) and with
every name of its gold concept taken away (its concept absent: always
wrong). A vocabulary alone teaches too little: its held-out names, ranked
against the other names of their concept, are spelled unlike mentions, and
a model of them cost 3 to 4 points of accuracy on the dev mentions of kept
concepts for what a score threshold does (docs/record.md), so without a
corpus "auto" is the score threshold alone. A mention is NIL where P(right)
is under the model's cut, which keeps `KEPT_RIGHT_LINKS` of the corpus's
right links.
"""
import math
import re
from typing import Callable, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np
from scipy.sparse import csr_matrix
from scipy.special import expit

from ..checks import is_number
from ..errors import SavedStateError
from ..kb.ids import bare_id
from ..ty import Candidate

# Bumped whenever FEATURES, their meaning or the model's layout change: a
# saved model of another version is not used, and one is trained again.
VERSION = 2
FEATURES = (
    "top_score",  # the best name's score
    "margin",  # its lead over the best name of another concept
    "tenth_score",  # how crowded the neighbourhood is
    "unmatched_words",  # the share of the mention's words that no name read holds ("xyzzy")
    "head_word_matched",  # the mention's last word is a word of the best name
    "name_words_matched",  # the share of the best name's words the mention holds
    "char_trigram_overlap",  # Jaccard of the mention's and the best name's character trigrams
    "n_words",  # log(1 + the mention's words)
    "concepts_read",  # distinct concepts among the names read, over NAMES_READ
    "exact",  # the best name is the mention as written
    "own_names_read",  # names of the best concept among the names read, over NAMES_READ
    "name_adds_words",  # the best name holds every word of the mention, and more
    "extra_name_words",  # the best name's words the mention lacks
    "missing_words",  # the mention's words the best name lacks
    "first_word_matched",  # the mention's first word is a word of the best name
    # The two views of S = dense + lambda sparse, over the names read:
    "dense_top",  # the best name's dense score
    "sparse_top",  # its tf-idf score
    "dense_best_is_top",  # the name the dense view alone ranks first is of the best concept
    "sparse_best_is_top",  # the same for the tf-idf view
    "dense_lead",  # the best concept's lead over the others by the dense view alone
    "sparse_lead",  # by the tf-idf view alone
    "dense_minus_sparse",  # where the views disagree on the best name
)
NAMES_READ = 10  # of the best names, for the word and concept features
SAMPLED_MENTIONS = 3000
KEPT_RIGHT_LINKS = 0.99
MIN_CASES = 40  # of right and of wrong links each, to fit a model on
MAX_SEARCH_DEPTH = 64
TREES, TREE_DEPTH = 100, 3
# What a saved model may hold: ten times what training writes.
MAX_TREES, MAX_NODES, MAX_DEPTH = 10 * TREES, 10 * TREES * 2 ** (TREE_DEPTH + 1), 3 * TREE_DEPTH
_SEED = 0
_WORD = re.compile(r"\w+")


def _trigrams(text: str) -> set:
    padded = f" {text} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


class SparseView(NamedTuple):
    """A vocabulary's tf-idf side of S, which the agreement features read:
    the S_sparse of (normalized text, name) pairs, those of a batch found
    in one sparse product (`with_pairs`), any other one at a time."""

    rows: Callable[[Sequence[str]], csr_matrix]  # the tf-idf rows of normalized texts
    weight: float  # lambda
    known: Optional[Dict[Tuple[str, str], float]] = None

    def with_pairs(self, pairs: Iterable[Tuple[str, str]]) -> "SparseView":
        """This view, holding the S_sparse of `pairs` (text, name) ahead."""
        pairs = list(dict.fromkeys(pairs))
        if not pairs:
            return self
        strings = list(dict.fromkeys(s for pair in pairs for s in pair))
        at = {s: i for i, s in enumerate(strings)}
        rows = self.rows(strings)
        texts, names = (np.array([at[pair[side]] for pair in pairs], dtype=np.int64) for side in (0, 1))
        products = np.asarray(rows[texts].multiply(rows[names]).sum(axis=1), dtype=np.float64).ravel()
        return self._replace(known={**(self.known or {}), **dict(zip(pairs, products.tolist()))})

    def similarities(self, text: str, names: Sequence[str]) -> np.ndarray:
        """S_sparse of `text` and each of `names`."""
        view = self
        if self.known is None or any((text, name) not in self.known for name in names):
            view = self.with_pairs((text, name) for name in names)
        return np.array([view.known[(text, name)] for name in names])


def features(text: str, candidates: Sequence[Candidate], view: SparseView) -> Optional[List[float]]:
    """FEATURES of a normalized mention and its ranked candidates (best
    first, scores on the unit scale) in a vocabulary's `view`; None
    without candidates."""
    if not candidates:
        return None
    top, read = candidates[0], candidates[:NAMES_READ]
    own = set(top.cuis)
    other = next((c.score for c in candidates[1:] if not own.intersection(c.cuis)), candidates[-1].score)
    words = _WORD.findall(text)
    mention_words = set(words)
    top_words = set(_WORD.findall(top.name))
    read_words = {w for c in read for w in _WORD.findall(c.name)}
    grams, top_grams = _trigrams(text), _trigrams(top.name)
    return [
        top.score,
        top.score - other,
        candidates[min(9, len(candidates) - 1)].score,
        sum(w not in read_words for w in words) / len(words) if words else 0.0,
        float(bool(words) and words[-1] in top_words),
        len(top_words & mention_words) / len(top_words) if top_words else 0.0,
        len(grams & top_grams) / len(grams | top_grams),
        math.log1p(len(words)),
        len({ids[0] for c in read for ids in c.concepts}) / NAMES_READ,
        float(top.name == text),
        sum(bool(own.intersection(c.cuis)) for c in read) / NAMES_READ,
        float(bool(mention_words) and mention_words < top_words),
        float(len(top_words - mention_words)),
        float(sum(w not in top_words for w in words)),
        float(bool(words) and words[0] in top_words),
        *_agreement(text, read, view),
    ]


def _agreement(text: str, read: Sequence[Candidate], view: SparseView) -> List[float]:
    """The agreement FEATURES. A unit score is S / (1 + lambda) for a cosine
    encoder, so the dense view is the score less the sparse share (for an
    inner-product encoder, the same on its own scale)."""
    sparse = view.similarities(text, [c.name for c in read])
    dense = np.array([c.score for c in read]) * (1 + view.weight) - view.weight * sparse
    own = set(read[0].cuis)
    mine = np.array([bool(own.intersection(c.cuis)) for c in read])

    def lead(scores: np.ndarray) -> float:
        return float(scores[mine].max() - (scores[~mine].max() if (~mine).any() else 0.0))

    return [float(dense[0]), float(sparse[0]), float(mine[int(np.argmax(dense))]), float(mine[int(np.argmax(sparse))]),
            lead(dense), lead(sparse), float(dense[0] - sparse[0])]


class NilModel(NamedTuple):
    """Gradient-boosted trees over FEATURES, as arrays of their nodes (all
    trees in one array, each tree's root at `roots`): P(the best concept is
    right), and the cut under which a mention is NIL."""

    roots: np.ndarray  # int64, each tree's root node
    feature: np.ndarray  # int64, the feature a split reads (-1: a leaf)
    threshold: np.ndarray  # float64, a split's: a row at or under it goes left
    left: np.ndarray  # int64
    right: np.ndarray  # int64
    value: np.ndarray  # float64, a leaf's raw score
    baseline: float
    depth: int
    cut: float
    source: str

    def probability(self, rows) -> np.ndarray:
        """P(right) of FEATURES rows."""
        rows = np.asarray(rows, dtype=np.float64).reshape(-1, len(FEATURES))
        at = np.broadcast_to(self.roots, (len(rows), len(self.roots))).copy()
        picked = np.arange(len(rows))[:, None]
        for _ in range(self.depth):
            split = self.feature[at]
            inner = split >= 0
            goes_left = rows[picked, np.where(inner, split, 0)] <= self.threshold[at]
            at = np.where(inner, np.where(goes_left, self.left[at], self.right[at]), at)
        with np.errstate(over="ignore", invalid="ignore"):  # leaves of +-1e308 sum to inf - inf
            raw = np.nan_to_num(self.baseline + self.value[at].sum(axis=1))
        return expit(raw)

    def lacks_concept(self, text: str, candidates: Sequence[Candidate], view: SparseView) -> bool:
        """Whether the vocabulary (seen through `view`) lacks the concept of a mention ranked so."""
        row = features(text, candidates, view)
        return row is not None and float(self.probability([row])[0]) < self.cut

    def to_json(self) -> dict:
        """The model as JSON, each real number written exactly (`float.hex`):
        JSON libraries round some doubles, and a decision at the cut must
        be the same after a load."""
        return {
            "version": VERSION, "features": list(FEATURES), "roots": self.roots.tolist(),
            "feature": self.feature.tolist(), "threshold": [x.hex() for x in self.threshold.tolist()],
            "left": self.left.tolist(), "right": self.right.tolist(), "value": [x.hex() for x in self.value.tolist()],
            "baseline": self.baseline.hex(), "depth": self.depth, "cut": self.cut.hex(), "source": self.source,
        }

    @classmethod
    def from_json(cls, data: object, where: str) -> Optional["NilModel"]:
        """The saved model, checked whole before use (every node index in
        range, every number finite, every walk ending at a leaf within
        `depth`); None where another version saved it (one is trained
        again). Anything else malformed is refused naming `where`."""
        version = data.get("version") if isinstance(data, dict) else None
        if isinstance(version, int) and not isinstance(version, bool) and version != VERSION:
            return None
        try:
            model = cls._checked(data)
        except (TypeError, ValueError, KeyError, OverflowError) as error:
            raise SavedStateError(f"{where}: not a NIL model saved by this version ({error}); save or build the "
                                  "pipeline again") from None
        return model

    @classmethod
    def _checked(cls, data: dict) -> "NilModel":
        if type(data["version"]) is not int or data["version"] != VERSION or data["features"] != list(FEATURES):
            raise ValueError(f"version {VERSION} reads the features {', '.join(FEATURES)}")
        def ints(key: str) -> np.ndarray:
            values = data[key]
            if not (isinstance(values, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in values)):
                raise ValueError(f"{key} must be a list of integers")
            return np.array(values, dtype=np.int64)

        def real(value, key: str) -> float:
            number = float.fromhex(value) if isinstance(value, str) else None
            if not is_number(number):
                raise ValueError(f"{key} must hold finite numbers written by float.hex")
            return number

        def floats(key: str) -> np.ndarray:
            values = data[key]
            if not isinstance(values, list):
                raise ValueError(f"{key} must be a list")
            return np.array([real(v, key) for v in values], dtype=np.float64)

        roots, feature, left, right = ints("roots"), ints("feature"), ints("left"), ints("right")
        threshold, value = floats("threshold"), floats("value")
        n = len(feature)
        if not (len(roots) and n and len(threshold) == len(left) == len(right) == len(value) == n):
            raise ValueError("the node arrays must be non-empty and of one length")
        # Training writes TREES trees of TREE_DEPTH; far more would slow every mention.
        if len(roots) > MAX_TREES or n > MAX_NODES:
            raise ValueError(f"at most {MAX_TREES} trees of {MAX_NODES} nodes in all")
        inner = feature >= 0
        if ((roots < 0) | (roots >= n)).any() or (feature >= len(FEATURES)).any() or (feature < -1).any():
            raise ValueError("a root or a split's feature is out of range")
        for children in (left, right):
            if ((children[inner] <= np.flatnonzero(inner)) | (children[inner] >= n)).any():
                raise ValueError("a split's child is out of range or not after it")
        depth, baseline, cut = data["depth"], real(data["baseline"], "baseline"), real(data["cut"], "cut")
        if not (isinstance(depth, int) and not isinstance(depth, bool) and 1 <= depth <= MAX_DEPTH and 0 <= cut <= 1
                and isinstance(data["source"], str)):
            raise ValueError(f"depth must be 1-{MAX_DEPTH}, cut in [0, 1] and source text")
        # Every path from a root, a level at a time (nodes reached twice
        # counted once), must rest on a leaf within `depth` steps.
        level = np.unique(roots)
        for _ in range(depth):
            split = level[inner[level]]
            level = np.unique(np.concatenate([left[split], right[split]]))
        if inner[level].any():
            raise ValueError(f"a tree is deeper than its depth {depth}")
        return cls(roots, feature, threshold, left, right, value, float(baseline), depth, float(cut), data["source"])


class TrainingCases(NamedTuple):
    """FEATURES rows and whether each one's best concept is right."""

    rows: List[List[float]]
    right: List[bool]

    def add(self, text: str, candidates: Sequence[Candidate], gold: set, view: SparseView) -> None:
        """The mention ranked as it is, and with its gold concept's names
        taken away; `gold` holds IDs without namespace."""
        def of_gold(candidate: Candidate) -> bool:
            return any(bare_id(cui) in gold for cui in candidate.cuis)

        for ranked, kept in ((candidates, True), ([c for c in candidates if not of_gold(c)], False)):
            row = features(text, ranked, view)
            if row is not None:
                self.rows.append(row)
                self.right.append(kept and of_gold(ranked[0]))


def training_cases(linker, mentions: Sequence[Tuple[str, str]]) -> TrainingCases:
    """Cases from up to SAMPLED_MENTIONS of `mentions` (normalized text, one
    gold ID without namespace) whose ID the vocabulary of `linker` (a built
    NameRanker) has, drawn with a fixed seed, each ranked by S alone as
    held-out names are for the NIL default (NameRanker.score_names). A
    mention the linker was taught as a synonym (the same corpus, given as
    `synonyms` too) is ranked without that name, as it ranked before:
    otherwise every right link would be a name written as the mention, and
    the cut would leave any other spelling NIL."""
    cases = TrainingCases([], [])
    known_ids = {bare_id(cui) for cuis in linker.dictionary.cuis for cui in cuis}
    known = [(text, cui) for text, cui in dict.fromkeys(mentions) if text and cui in known_ids]
    taught = set(linker.synonyms.names) if linker.synonyms is not None else set()
    if len(known) > SAMPLED_MENTIONS:
        chosen = np.random.default_rng(_SEED).choice(len(known), size=SAMPLED_MENTIONS, replace=False)
        known = [known[i] for i in sorted(chosen)]
    texts = list(dict.fromkeys(text for text, _ in known))
    ranked = dict(zip(texts, linker.score_names(texts, MAX_SEARCH_DEPTH))) if texts else {}
    view = linker.sparse_view.with_pairs((text, c.name) for text in texts for c in ranked[text])
    for text, cui in known:
        cases.add(text, [c for c in ranked[text] if c.name != text] if text in taught else ranked[text], {cui}, view)
    return cases


def fit_nil_model(cases: TrainingCases) -> Optional[NilModel]:
    """The model of `cases`, cut to keep KEPT_RIGHT_LINKS of their right
    links; None where right or wrong links number fewer than MIN_CASES."""
    y = np.array(cases.right, dtype=bool)
    if y.sum() < MIN_CASES or (~y).sum() < MIN_CASES:
        return None
    from sklearn.ensemble import HistGradientBoostingClassifier

    x = np.array(cases.rows, dtype=np.float64)
    fitted = HistGradientBoostingClassifier(max_iter=TREES, max_depth=TREE_DEPTH, random_state=_SEED).fit(x, y)
    model = _exported(fitted)
    p = model.probability(x)
    if not np.allclose(p, fitted.predict_proba(x)[:, 1], atol=1e-6):
        raise RuntimeError("this scikit-learn lays out its gradient-boosted trees in another way: the exported "
                           "NIL model does not agree with it (search/nil_model.py reads their nodes)")
    cut = float(np.floor(np.quantile(p[y], 1 - KEPT_RIGHT_LINKS, method="lower") * 1000) / 1000)
    source = (f"gradient-boosted trees on {len(y) // 2} annotated mentions ranked with and without their concept; "
              f"under P(right) {cut} a span is NIL, which keeps {np.mean(p[y] >= cut):.1%} of their "
              f"{int(y.sum())} right links and rejects {np.mean(p[~y] < cut):.1%} of the {int((~y).sum())} others")
    return model._replace(cut=cut, source=source)


def _exported(fitted) -> NilModel:
    """The trees of a fitted HistGradientBoostingClassifier as NilModel arrays."""
    nodes = [predictor.nodes for (predictor,) in fitted._predictors]
    offsets = np.cumsum([0] + [len(n) for n in nodes[:-1]])
    allnodes = np.concatenate(nodes)
    leaf = allnodes["is_leaf"].astype(bool)
    shift = np.repeat(offsets, [len(n) for n in nodes])
    return NilModel(
        roots=offsets.astype(np.int64),
        feature=np.where(leaf, -1, allnodes["feature_idx"]).astype(np.int64),
        threshold=np.where(leaf, 0.0, allnodes["num_threshold"]).astype(np.float64),
        left=np.where(leaf, 0, allnodes["left"] + shift).astype(np.int64),
        right=np.where(leaf, 0, allnodes["right"] + shift).astype(np.int64),
        value=np.where(leaf, allnodes["value"], 0.0).astype(np.float64),
        baseline=float(np.ravel(fitted._baseline_prediction)[0]),
        depth=int(allnodes["depth"].max()),
        cut=0.0,
        source="",
    )
