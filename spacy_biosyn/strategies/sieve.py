"""The sieve: a mention is first looked up among the synonyms added at search
time (training mentions, a user's domain names), then among all names.

Training mentions are the names a corpus really uses, so a match there is
trusted over a closer-scoring ontology name: an exact match (BNE's "XM" rule)
or, with `threshold`, the nearest synonym scoring at least that much (the D-T
stage of Triplet-Search-ConNorm's D-T + OD-T sieve). Otherwise the ranking of
the whole dictionary stands.
"""
from typing import List, Optional


from ..parts import SIEVE, registry
from ..ty import Candidate


@registry.misc(SIEVE)
class Sieve:
    def __init__(self, exact_match: bool = True, threshold: Optional[float] = None):
        self.exact_match = exact_match
        # On S = dense + lambda * sparse: an identical string scores 1 + lambda.
        self.threshold = threshold

    def __call__(
        self, text: str, nearest_synonym: Candidate, candidates: List[Candidate]
    ) -> List[Candidate]:
        """`candidates` from the whole dictionary, with `nearest_synonym`
        first when the sieve accepts it (same length, no name twice)."""
        if not self.accepts(text, nearest_synonym):
            return candidates
        rest = [c for c in candidates if c.name != nearest_synonym.name]
        return [nearest_synonym, *rest][: len(candidates)]

    def accepts(self, text: str, synonym: Candidate) -> bool:
        if self.exact_match and synonym.name == text:
            return True
        return self.threshold is not None and synonym.score >= self.threshold
