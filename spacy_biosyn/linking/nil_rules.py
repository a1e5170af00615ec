"""What the nil_threshold setting means for one vocabulary: a number as
given; "auto" that vocabulary's NIL default (search/nil_default.py) and,
where an annotated corpus trained one, its open-world model
(search/nil_model.py). The engine resolves each route's once after a
change, before the next batch is linked."""
from typing import Iterator, Mapping, Tuple, Union

from ..search.name_ranker import NameRanker
from .linker_settings import AUTO
from .links import NilRule


def resolved_nil_rule(setting: Union[float, str, None], reranked: bool, linker: NameRanker) -> NilRule:
    """`setting` resolved for `linker`'s vocabulary: "auto" is asked of it
    only then, and is none before it has names or where a re-ranker scores
    on its own scale (20 S + a logit)."""
    if setting != AUTO:
        return NilRule(setting, None, "nil_threshold as set" if setting is not None else "nil_threshold null")
    if reranked:
        return NilRule(None, None, "auto: none, since a re-ranker scores on its own scale")
    if not linker.is_ready:
        return NilRule(None, None, "auto: the vocabulary is not read yet")
    default = linker.nil_default
    # The model reads the names a search ranks; a concept scorer or sieve ranks others than it learned from.
    searched_as_learned = linker.concept_scorer is None and linker.sieve is None
    model = linker.nil_model if searched_as_learned else None
    return NilRule(default.threshold, model, f"auto: {default.source}", linker.sparse_view if model else None)


def linking_every_span(rules: Mapping[str, NilRule], linkers: Mapping[str, NameRanker]) -> Iterator[Tuple[str, NilRule]]:
    """The routes whose "auto" found no threshold nor model (too few concepts
    with two names to derive one): they would link every span."""
    for route, rule in rules.items():
        if rule.threshold is None and rule.model is None and linkers[route].is_ready:
            yield route, rule
