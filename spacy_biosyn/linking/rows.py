"""One linked span as a record: the row that `link --json`, link-corpus's
files, the service's entities and its page all give, built from the span's
SpanLinks and the names its vocabulary gives the concepts. No spaCy: a
pipeline's spans become SpanLinks in corpus_linking/output.py, mention
strings are linked by the engine alone (`mention_rows`).
"""
import json
import re
from typing import TYPE_CHECKING, Dict, List, Optional, Sequence

from .links import SpanLinks, link_score

if TYPE_CHECKING:
    from .engine import LinkingEngine

# A row's fields that `link --json` and the service answer with, in their order.
ROW_FIELDS = ("start", "end", "text", "label", "id", "score", "nil_reason", "nil_best", "ties", "candidates")
# What JSON writes raw but str.splitlines() breaks a line at (json_line escapes them).
_LINE_BREAKS_IN_JSON = re.compile("[\x85\u2028\u2029]")
# The label a mention string is linked under where the linker names none of its labels.
MENTION_LABEL = "ENTITY"


class ConceptNames:
    """Each concept's canonical name, as the vocabulary that links spans of
    a label writes it (`engine.kb(label)`), each knowledge base made once."""

    def __init__(self, engine: Optional["LinkingEngine"]):
        self._engine = engine
        self._kbs: Dict[str, object] = {}

    def __call__(self, label: str, cui: str) -> Optional[str]:
        if self._engine is None:
            return None
        if label not in self._kbs:
            try:
                self._kbs[label] = self._engine.kb(label)
            except ValueError:  # no vocabulary links this label
                self._kbs[label] = None
        kb = self._kbs[label]
        try:
            return None if kb is None else kb.cui_to_entity[cui].canonical_name
        except KeyError:
            return None


def link_row(file: str, doc_id: Optional[str], start: int, end: int, text: str, label: str,
             links: Optional[SpanLinks], gold_id: Optional[str], names: ConceptNames) -> dict:
    """A span's row: where it is, its ID (`cui`), its link score (what
    nil_threshold compares; None for NIL), why it is NIL and what it would
    have linked to, the concepts that share its best name and the rule that
    chose, and the ranked concepts of `kb_ents` with the name each matched
    best and its canonical name; `gold_id` where a gold corpus says one.
    `links` None: a span no linker serves, or a gold span the pipeline dropped."""
    cui = links.cui if links is not None else None
    return {
        "file": file, "doc_id": doc_id, "start": start, "end": end, "text": text, "label": label, "id": cui,
        "score": link_score(links.parts) if cui else None,
        "nil_reason": links.nil_reason if links is not None else None,
        "nil_best": _nil_best(links, label, names),
        "ties": [{"ids": list(tie.ids), "rule": tie.rule} for tie in links.ties] if links is not None else [],
        "gold_id": gold_id,
        "candidates": _ranked_concepts(links, label, names) if links is not None else [],
    }


def mention_rows(engine: "LinkingEngine", mentions: Sequence[str]) -> List[dict]:
    """A row for each mention string, linked as one entity of a label the
    linker serves (its first of dictionary_labels), NIL ones too, as
    BioSyn's inference.py --mention links them; an empty mention gives no row."""
    return [row for rows in rows_per_mention(engine, mentions) for row in rows]


def rows_per_mention(engine: "LinkingEngine", mentions: Sequence[str]) -> List[List[dict]]:
    """`mention_rows`, each mention's rows (one, or none for an empty one) apart."""
    label = (engine.settings.dictionary_labels or [MENTION_LABEL])[0]
    names = ConceptNames(engine)
    spans = [_as_a_span(mention) for mention in mentions if mention]
    linked = dict(zip(spans, engine.link(spans, label)))
    return [[link_row("", "mention", 0, len(span), span, label, linked[span], None, names)]
            if span else [] for span in map(_as_a_span, mentions)]


def _as_a_span(mention: str) -> str:
    """A mention as a span over all of its tokens reads it, as these rows
    have always given it: a single space after its last word is that
    word's trailing whitespace, not part of the span; other whitespace is
    text (a mention of spaces alone is one, linked to nothing)."""
    return mention[:-1] if len(mention) > 1 and mention[-1] == " " and not mention[-2].isspace() else mention


def _nil_best(links: Optional[SpanLinks], label: str, names: ConceptNames) -> Optional[dict]:
    """What a NIL span would have linked to, its link score and the
    concept's name (one concept's; a composite's IDs are joined)."""
    if links is None or links.nil_best is None:
        return None
    cui, score = links.nil_best
    return {"id": cui, "concept_name": None if "|" in cui else names(label, cui), "score": float(score)}


def _ranked_concepts(links: SpanLinks, label: str, names: ConceptNames) -> List[dict]:
    # "name" is the concept's best-scored name, the one the mention matched
    # (lower-cased, as searched); "concept_name" what the vocabulary calls it.
    # kb_ents give a bare ID the namespace id_namespaces declares
    # (MESH:D001943); the names know it bare.
    matched: Dict[str, str] = {}
    for candidate in links.candidates:
        for ids in candidate.concepts:
            matched.setdefault(ids[0], candidate.name)
    return [{"id": cui, "name": matched.get(cui) or matched.get(cui.partition(":")[2], ""),
             "concept_name": names(label, cui), "score": float(score)} for cui, score in links.kb_ents]


def json_line(row: dict) -> str:
    """A row as one line that every line reader splits alike, for JSONL
    shards and `link --json`: JSON leaves U+0085, U+2028 and U+2029 raw,
    which str.splitlines() takes for line breaks, so they are written escaped."""
    return _LINE_BREAKS_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(row, ensure_ascii=False)) + "\n"
