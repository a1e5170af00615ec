"""Which ID is right, and Acc@k: the rules every score of the package uses.

Two rules, for two questions:
- Acc@k (`link_acc_<k>`) follows BioSyn's protocol, so numbers compare with
  the published ones: a mention is right at k when each of its predicted
  parts has, among its k best names, a name sharing an ID with the gold
  field, whose IDs form one set: any gold part will do. "breast and ovarian
  cancer" (gold D001943|D010051) linked to D001943 alone is right.
- cui_acc (`link_cui_acc`), the ID users read, is strict: `span._.cui` must
  name every ID of the gold field and nothing else, so that mention is
  wrong until both parts are linked; a combination ("+": D007153+D040181)
  needs both IDs too. spaCy's nel_micro_f compares whole kb_id strings, the
  same rule. IDs compare with their namespaces
(kb.namespaces.ConceptKeys): a bare ID meets a prefixed one only through the
pipe's namespaces (its `id_namespaces`, else the ID systems its
vocabulary's IDs show: LinkingEngine.score_namespaces), so that the raw
NCBI corpus's OMIM:217000 is the dictionaries' 217000, and MONDO:0001250
is never HP:0001250. Where no predicted ID meets a gold one and the two are
written in different forms, scoring stops, naming both (`check_ids_meet`):
a 0.00 that only says the forms differ is never reported. Every score is a
fraction; only tables print percent.

This module sits below `pipeline/`, so the pipe's `score()` uses it; the
evaluation package above reads corpora and runs pipelines with it.
"""
from typing import TYPE_CHECKING, Collection, Dict, Iterable, List, Mapping, Optional, Sequence

from ..errors import MismatchError
from ..kb.ids import split_cuis
from ..kb.namespaces import UNSCORED_CUIS, ConceptKeys, cui_is_gold, gold_ids, id_form
from ..ty import Candidate

if TYPE_CHECKING:  # the rules need no spaCy: the trainer's dev check runs without it
    from spacy.training import Example


def link_scores(
    examples: Iterable["Example"], max_k: int = 5, labels: Optional[Collection[str]] = None,
    id_namespaces: Optional[Mapping[str, str]] = None,
) -> Dict[str, float]:
    """Acc@k and cui_acc (`link_acc_<k>`, `link_cui_acc`) of linked Examples: the reference's entities (of
    `labels`, if given) carry their gold CUI fields as kb_id
    (corpus.pubtator_to_examples), the predicted doc's entities the
    pipeline's links. A gold entity without a predicted entity at the same
    offsets is a miss at every k. cui_acc is the share whose `span._.cui`,
    the ID users read, names exactly the gold IDs (`cui_is_gold`);
    CUI-less entities are not scored, and their number is reported; with
    nothing to score, only the counts are. `id_namespaces` are the pipe's,
    through which bare IDs meet prefixed ones."""
    parts, golds, cuis, unscored = [], [], [], 0
    for example in examples:
        predicted = {(s.start_char, s.end_char): s for s in example.predicted.ents}
        for gold in example.reference.ents:
            if labels is not None and gold.label_ not in labels:
                continue
            if gold.kb_id_ in UNSCORED_CUIS:
                unscored += 1
                continue
            span = predicted.get((gold.start_char, gold.end_char))
            parts.append([part.candidates for part in span._.parts or []] if span is not None else [])
            cuis.append(span._.cui if span is not None else None)
            golds.append(gold.kb_id_)
    if not golds:
        return {"n": 0, "unscored": unscored}
    metrics = accuracy(parts, golds, max_k, id_namespaces)
    keys = ConceptKeys(id_namespaces)
    hits = sum(cui_is_gold(cui, gold, keys) for cui, gold in zip(cuis, golds))
    if not hits and not metrics[acc_key(max_k)]:  # accuracy() checked the candidates' IDs, which the cuis are among
        check_ids_meet(golds, [part for cui in cuis if cui for part in cui.split("|")], keys)
    metrics.update(link_cui_acc=hits / len(golds), unscored=unscored)
    return metrics


def accuracy(
    predictions: Sequence[List[List[Candidate]]], golds: Sequence[str], max_k: int,
    id_namespaces: Optional[Mapping[str, str]] = None,
) -> Dict[str, float]:
    """Acc@1..max_k (fractions, keyed by `acc_key`) from each mention's
    per-part candidate lists and its gold CUI field, IDs compared through
    `id_namespaces`. A mention with no parts (only punctuation) is a miss."""
    if not predictions:
        raise ValueError("no mentions to evaluate")
    keys = ConceptKeys(id_namespaces)
    hits = [0] * max_k
    for parts, gold_field in zip(predictions, golds):
        rank = hit_rank(parts, gold_field, keys)
        for k in range(1, max_k + 1):
            hits[k - 1] += rank is not None and rank < k
    if not hits[-1]:
        check_ids_meet(golds, [cui for parts in predictions for ranked in parts for c in ranked[:max_k] for cui in c.cuis], keys)
    metrics: Dict[str, float] = {acc_key(k): hits[k - 1] / len(predictions) for k in range(1, max_k + 1)}
    metrics["n"] = len(predictions)
    return metrics


def check_ids_meet(gold_fields: Iterable[str], predicted: Iterable[str], keys: ConceptKeys) -> None:
    """Raise MismatchError where no predicted ID is a gold one and the gold
    and predicted IDs are written in different forms (bare against
    `MESH:`, or two namespaces): they may name the same concepts, and the
    score would read 0 for the form alone. Forms that meet give a true 0."""
    gold = {keys(cui) for field in gold_fields for cui in split_cuis(field)} - {keys(c) for c in UNSCORED_CUIS if c}
    found = {keys(cui) for cui in predicted}
    if not gold or not found or gold & found:
        return
    gold_forms, found_forms = {id_form(c) for c in gold}, {id_form(c) for c in found}
    if gold_forms & found_forms:
        return
    remedy = ("say which namespace a bare ID is in: the pipe's id_namespaces, or evaluate --id-namespaces (medic "
              "for MeSH and OMIM)" if "bare" in gold_forms | found_forms else
              "they are IDs of different vocabularies: link with the gold's vocabulary, or score against gold of the "
              "pipe's own")
    raise MismatchError(
        f"no predicted ID is a gold ID: the gold IDs are written {', '.join(sorted(gold_forms))} "
        f"({min(gold)}), the predicted ones {', '.join(sorted(found_forms))} ({min(found)}); {remedy}"
    )


def acc_key(k: int) -> str:
    """The score key of Acc@k, named as the component's scores are (spaCy's
    keys have no Acc@k)."""
    return f"link_acc_{k}"


def hit_rank(parts: List[List[Candidate]], gold_field: str, keys: ConceptKeys) -> Optional[int]:
    """The smallest k - 1 at which a mention is right (every part has a
    gold CUI among its k best), or None if no k is."""
    gold = gold_ids(gold_field, keys)
    first_hits = [_first_hit(candidates, gold, keys) for candidates in parts]
    if not parts or None in first_hits:
        return None
    return max(first_hits)


def _first_hit(candidates: List[Candidate], gold: set, keys: ConceptKeys):
    """Rank (0-based) of the first candidate with a gold CUI, or None."""
    for rank, candidate in enumerate(candidates):
        if gold.intersection(map(keys, candidate.cuis)):
            return rank
    return None
