"""Concept-level scoring: the best `pool_size` names of a mention become a
ranking of their concepts, each shown by its best name.

Name-level search lets one lucky name carry a concept; these scorers let the
concept's other names have a say:
- AliasCountReranker (MiniEL): a*S of the concept's best name + b*mean S of
  its names in the pool + c*how many of its names are in the pool.
- ConceptCentroids (the "-C" search of Triplet-Search-ConNorm): S between the
  mention and the mean vectors (dense and tf-idf) of all the concept's names.
"""
from typing import Dict, List

import numpy as np
from scipy import sparse

from ..parts import ALIAS_COUNT_RERANKER, CONCEPT_CENTROIDS, registry
from ..search.scoring import biosyn_scores
from ..ty import Candidate, Concept, NamesByConcept


class ConceptScorerBase:
    """Turns each mention's pool of `pool_size` best names (Candidates, best
    first) into its concepts, best first."""

    def __init__(self, pool_size: int):
        if pool_size < 1:
            raise ValueError(f"pool_size must be positive, got {pool_size}")
        self.pool_size = pool_size

    def __call__(
        self, names: NamesByConcept, dense_queries: np.ndarray, sparse_queries: sparse.csr_matrix,
        pools: List[List[Candidate]],
    ) -> List[List[Candidate]]:
        raise NotImplementedError


@registry.misc(ALIAS_COUNT_RERANKER)
class AliasCountReranker(ConceptScorerBase):
    def __init__(
        self,
        pool_size: int = 20,
        name_weight: float = 1.0,
        mean_weight: float = 0.002,
        count_weight: float = 0.001,
    ):
        # Scores stay near S, so one NIL threshold serves both rankings.
        # MiniEL's ratio on MedMentions (5 : 0.1 : 0.05 = 1 : 0.02 : 0.01)
        # lets MEDIC's many-synonym concepts win; a 10x lighter count and
        # mean were best on NCBI and BC5CDR dev (docs/record.md#search-strategies).
        super().__init__(pool_size)
        self.weights = (name_weight, mean_weight, count_weight)

    def __call__(
        self, names: NamesByConcept, dense_queries: np.ndarray, sparse_queries: sparse.csr_matrix,
        pools: List[List[Candidate]],
    ) -> List[List[Candidate]]:
        a, b, c = self.weights
        ranked = []
        for pool in pools:
            concepts = by_concept(pool)
            scores = [
                a * names[0].score + b * float(np.mean([n.score for n in names])) + c * len(names)
                for names in concepts.values()
            ]
            ranked.append(_best_first(concepts, scores))
        return ranked


@registry.misc(CONCEPT_CENTROIDS)
class ConceptCentroids(ConceptScorerBase):
    def __init__(self, pool_size: int = 20):
        super().__init__(pool_size)

    def __call__(
        self, names: NamesByConcept, dense_queries: np.ndarray, sparse_queries: sparse.csr_matrix,
        pools: List[List[Candidate]],
    ) -> List[List[Candidate]]:
        ranked = []
        for dense_q, sparse_q, pool in zip(dense_queries, sparse_queries, pools):
            concepts = by_concept(pool)
            scores = [_centroid_score(names, dense_q, sparse_q, names.rows_of(ids[0])) for ids in concepts]
            ranked.append(_best_first(concepts, scores))
        return ranked


def _centroid_score(names: NamesByConcept, dense_q, sparse_q, rows: np.ndarray) -> float:
    dense = names.dense_vectors(rows).mean(axis=0)
    if names.similarity == "cosine":  # then names and mentions are unit vectors
        dense /= np.linalg.norm(dense) + 1e-12
    tfidf = np.asarray(names.sparse_vectors(rows).mean(axis=0)).ravel()
    tfidf /= np.linalg.norm(tfidf) + 1e-12  # tf-idf rows are unit vectors
    return biosyn_scores(float(dense_q @ dense), float((sparse_q @ tfidf)[0]), names.sparse_weight)


def by_concept(pool: List[Candidate]) -> Dict[Concept, List[Candidate]]:
    """The ranked names grouped by concept, concepts in order of their best
    name. A concept is known by its preferred ID: MEDIC's `D001943|114480`
    on one name and `D001943` alone on another are one disease."""
    preferred: Dict[str, Concept] = {}
    concepts: Dict[Concept, List[Candidate]] = {}
    for candidate in pool:
        for ids in candidate.concepts:
            concepts.setdefault(preferred.setdefault(ids[0], ids), []).append(candidate)
    return concepts


def _best_first(concepts: Dict[Concept, List[Candidate]], scores: List[float]) -> List[Candidate]:
    """Each concept as its best name, carrying that concept alone and the
    concept's score, best first."""
    items = list(concepts.items())
    order = sorted(range(len(items)), key=lambda i: -scores[i])  # stable: ties keep name order
    return [items[i][1][0]._replace(concepts=(items[i][0],), score=scores[i]) for i in order]
