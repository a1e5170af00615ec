"""What annotated corpora teach a linker: which of a concept's IDs their
annotators use most (reported first where a vocabulary gives several), and
the mentions of one concept each that the open-world NIL model learns from
(search/nil_model.py)."""
from pathlib import Path
from typing import Dict, Iterable, List, Tuple, Union

import numpy as np

from ..corpora.readers import read_annotated_mentions
from ..kb.ids import bare_id, split_cuis
from ..preprocess.text import normalize
from ..search.saved_ranker import MAX_ANNOTATED_MENTIONS


def id_usage_and_mentions(corpora: Iterable[Union[str, Path]]) -> Tuple[Dict[str, int], List[Tuple[str, str]]]:
    """Each gold ID's count over the corpora (folders of .concept files,
    PubTator files), and their distinct (normalized mention, ID) pairs of
    one concept, a seeded sample of MAX_ANNOTATED_MENTIONS where more (the
    pipeline saves them)."""
    usage: Dict[str, int] = {}
    mentions: List[Tuple[str, str]] = []
    for corpus in corpora:
        for text, field in read_annotated_mentions(corpus):
            cuis = [bare_id(cui) for cui in split_cuis(field) if cui != "-1"]
            for cui in cuis:
                usage[cui] = usage.get(cui, 0) + 1
            if len(cuis) == 1:
                mentions.append((normalize(text), cuis[0]))
    mentions = list(dict.fromkeys(mentions))
    if len(mentions) > MAX_ANNOTATED_MENTIONS:
        kept = np.random.default_rng(0).choice(len(mentions), size=MAX_ANNOTATED_MENTIONS, replace=False)
        mentions = [mentions[i] for i in sorted(kept)]
    return usage, mentions
