"""The trainer's dev check, without spaCy: dev mentions ranked by the
engine the pipeline saved now would hold (the encoder as it is, its lambda,
the dev dictionary under the factory's default index and settings), as
users rank them, with no pipeline and no Doc; and the recall@k of the
candidates the next epoch would draw."""
from typing import Dict, Sequence

import numpy as np

from ..corpora.readers import Query
from ..encoders.base import Encoder
from ..evaluation.queries import Ranker, evaluate
from ..kb.dictionary import Dictionary
from ..linking.engine import LinkingEngine
from ..linking.linker_settings import LinkerSettings
from ..names import PIPE_NAME
from ..pipeline.accuracy import acc_key
from ..search.sized_index import SizedIndex
from ..search.tfidf import SparseEncoder


def dev_engine(encoder: Encoder, sparse_weight: float, dictionary: Dictionary, sparse: SparseEncoder,
               vectors: np.ndarray) -> LinkingEngine:
    """The engine indexing `dictionary` with its names' `vectors`. Ranking
    reads no stop words (they tell whether a whole span is everyday
    English, which only linking a span asks), so it is given none."""
    engine = LinkingEngine(PIPE_NAME, LinkerSettings(sparse_weight=sparse_weight), encoder=encoder,
                           index=SizedIndex(), stop_words=())
    engine.set_dictionary(dictionary, sparse=sparse, vectors=vectors)
    return engine


def dev_scores(engine: LinkingEngine, queries: Sequence[Query], candidates: Ranker, k: int) -> Dict[str, float]:
    """Acc@1 and Acc@5 of the engine's ranking, and recall@k of `candidates`
    (the training candidates a text would get), IDs compared as the saved
    pipe compares them."""
    namespaces = engine.score_namespaces()
    accuracy = evaluate(engine.rank, queries, id_namespaces=namespaces)
    recall = evaluate(candidates, queries, max_k=k, id_namespaces=namespaces)
    return {"link_acc_1": accuracy["link_acc_1"], "link_acc_5": accuracy["link_acc_5"], "recall": recall[acc_key(k)]}
