"""The steps of `LinkingEngine.link_batch`, each over the whole batch:

    read (route, readings) -> rank (per route, one call) -> tie ->
    re-rank in context -> the document's choice -> decide (SpanLinks)

Each fills in its own field of every Mention (mentions.py); the engine
gives each step the parts and settings it reads."""
from typing import Dict, List, Mapping, Optional

from ..kb.dictionary import NameRows
from ..kb.namespaces import IdNamespaces
from ..preprocess.readings import MentionPreprocessor, long_forms_by_short_form
from ..ty import MentionInContext, Reranker
from .choice import chosen_in_document
from .links import NilRule, span_links
from .mentions import Mention, MentionBatch
from .routes import Routes

# A mention string a route ranks -> its ranked names.
Wanted = Dict[str, Dict[str, None]]


def read_mentions(batch: MentionBatch, routes: Routes, name_rows: Mapping[str, NameRows],
                  preprocessor: MentionPreprocessor, split_composites: bool) -> Wanted:
    """Route each mention by its label and read it (as written, expanded,
    split); returns the distinct strings each route is to rank."""
    long_forms = [long_forms_by_short_form(pairs) for pairs in batch.abbreviations]
    wanted: Wanted = {}
    for mention in batch.mentions:
        mention.route = routes.route_of(mention.label)
        if mention.is_routed:
            mention.readings = preprocessor.readings(
                mention.text, long_forms[mention.document], name_rows[mention.route].is_name, split_composites)
            wanted.setdefault(mention.route, {}).update(dict.fromkeys(p for r in mention.readings for p in r))
    return wanted


def rerank_in_context(reranker: Reranker, texts: List[str], routed: List[Mention]) -> None:
    """The candidates of every part of every tied reading re-scored by
    the re-ranker with its mention's context in its document's text,
    the whole batch in one call."""
    parts = [(mention, part) for mention in routed for reading in mention.tied for part in reading]
    contexts = [
        MentionInContext.in_text(texts[m.document], m.start_char, m.end_char, part.text, reranker.context_chars)
        for m, part in parts
    ]
    reranked = iter(reranker.rerank(contexts, [part.candidates for _, part in parts]))
    # The walk `parts` took, so each part takes its own candidates back.
    for mention in routed:
        mention.tied = [[part._replace(candidates=next(reranked)) for part in reading] for reading in mention.tied]


def choose_in_documents(batch: MentionBatch, resolve_shared_names: bool, id_usage: Mapping[str, int]) -> None:
    """Each document's choice among its mentions' tied readings (choice.py)."""
    for _, mentions in batch.by_document():
        chosen = chosen_in_document([m.tied if m.is_routed else None for m in mentions], resolve_shared_names, id_usage)
        for mention, choice in zip(mentions, chosen):
            if choice is not None:
                mention.parts, mention.tie_rules = choice


def decide(routed: List[Mention], rules: Mapping[str, NilRule], top_k: int,
           namespaced: Optional[IdNamespaces]) -> None:
    """What each chosen mention's span says, under its route's NIL rule
    (a model reads the batch's parts together)."""
    batch_rules: Dict[str, NilRule] = {
        route: rule.for_batch(p for m in routed if m.route == route and m.parts for p in m.parts)
        for route, rule in rules.items()}
    for mention in routed:
        if mention.parts is not None:
            mention.links = span_links(mention.parts, top_k, batch_rules[mention.route], namespaced, mention.tie_rules)
