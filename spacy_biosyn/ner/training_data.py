"""NER training data from several corpora at once.

Corpora annotate different labels: BC5CDR marks chemicals, NCBI Disease does
not, so an NCBI abstract's "cisplatin" is unannotated, not a negative. Pooled
naively, every such token would teach the NER that chemicals are not
entities. Here a corpus's tokens that match a name another corpus annotates
with a label this one lacks are marked missing (spaCy's `missing` entity
state: no loss either way), and every other token stays outside."""
import random
from collections import defaultdict
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Set, Union

from spacy.language import Language
from spacy.matcher import PhraseMatcher
from spacy.tokens import Doc
from spacy.util import filter_spans

from ..corpora.docs import pubtator_to_doc
from ..corpora.readers import PubTatorDocument, read_pubtator
from .guidelines import GUIDELINE_KEY


def pooled_docs(
    nlp: Language, corpora: Sequence[Sequence[PubTatorDocument]], label_map: Optional[Mapping[str, str]] = None
) -> List[Doc]:
    """The documents of all `corpora` as Docs of their gold entities (labels
    renamed by `label_map`); in each corpus, the names of labels only other
    corpora annotate are missing, not outside."""
    docs = [[pubtator_to_doc(nlp, document, label_map=label_map) for document in corpus] for corpus in corpora]
    labels = [{span.label_ for doc in corpus for span in doc.ents} for corpus in docs]
    names = _names_by_label(docs)
    pooled: List[Doc] = []
    for corpus, annotated in zip(docs, labels):
        unannotated = {label: names[label] for label in set(names) - annotated}
        pooled.extend(_with_missing(nlp, corpus, unannotated))
    return pooled


def _names_by_label(corpora: Sequence[Sequence[Doc]]) -> Dict[str, Set[str]]:
    names: Dict[str, Set[str]] = defaultdict(set)
    for corpus in corpora:
        for doc in corpus:
            for span in doc.ents:
                names[span.label_].add(span.text)
    return names


def _is_abbreviation(name: str) -> bool:
    # BC5CDR's "NO" (nitric oxide) must not make every "no" of NCBI unknown.
    return len(name) <= 4 or name.isupper()


def _with_missing(nlp: Language, docs: List[Doc], names: Mapping[str, Set[str]]) -> Iterator[Doc]:
    """`docs` with the tokens of `names` (by label) missing where no gold
    entity overlaps them: abbreviations matched as written, longer names in
    any case."""
    if not names:
        yield from docs
        return
    exact, folded = PhraseMatcher(nlp.vocab, attr="ORTH"), PhraseMatcher(nlp.vocab, attr="LOWER")
    for label, label_names in names.items():
        short = sorted({name for name in label_names if _is_abbreviation(name)})
        long = sorted({name.lower() for name in label_names if not _is_abbreviation(name)})
        exact.add(label, list(nlp.tokenizer.pipe(short)))
        folded.add(label, list(nlp.tokenizer.pipe(long)))
    for doc in docs:
        gold = {i for span in doc.ents for i in range(span.start, span.end)}
        matches = [*exact(doc, as_spans=True), *folded(doc, as_spans=True)]
        outside = [span for span in matches if not gold.intersection(range(span.start, span.end))]
        doc.set_ents([], missing=filter_spans(outside), default="unmodified")
        yield doc


def with_vocabulary(
    nlp: Language, docs: Sequence[Doc], names: Mapping[str, Sequence[str]], copies: int, name_examples: int, seed: int = 0
) -> Iterator[Doc]:
    """The vocabulary as NER training data, after `docs` themselves:
    - `copies` versions of each doc with an entity of a label in `names`,
      its entities of those labels each swapped for a random name of the
      label (mention replacement: the context stays, the name varies);
    - `name_examples` random names of each label, each a doc that is one
      entity (names the corpus never mentions)."""
    rng = random.Random(seed)
    vocabulary = {label: [n.strip() for n in label_names if n.strip()] for label, label_names in names.items()}
    yield from docs
    replaceable = [doc for doc in docs if any(span.label_ in vocabulary for span in doc.ents)]
    for _ in range(copies):
        for doc in replaceable:
            yield _replaced(nlp, doc, vocabulary, rng)
    for label, label_names in vocabulary.items():
        for name in rng.sample(label_names, min(name_examples, len(label_names))):
            doc = nlp.make_doc(name)
            doc.ents = [doc.char_span(0, len(name), label=label)]
            yield doc


def _replaced(nlp: Language, doc: Doc, names: Mapping[str, Sequence[str]], rng: random.Random) -> Doc:
    replaced = {span.start: span for span in doc.ents if span.label_ in names}
    words: List[str] = []
    spaces: List[bool] = []
    tags: List[Optional[str]] = []  # IOB tags; None where the annotation is missing
    i = 0
    while i < len(doc):
        span = replaced.get(i)
        if span is None:
            token = doc[i]
            words.append(token.text)
            spaces.append(bool(token.whitespace_))
            tags.append(f"{token.ent_iob_}-{token.ent_type_}" if token.ent_type_ else token.ent_iob_ or None)
            i += 1
            continue
        pieces = nlp.make_doc(rng.choice(names[span.label_]))
        words.extend(token.text for token in pieces)
        spaces.extend([bool(token.whitespace_) for token in pieces[:-1]] + [bool(span[-1].whitespace_)])
        tags.extend(["B-" + span.label_] + ["I-" + span.label_] * (len(pieces) - 1))
        i = span.end
    return Doc(nlp.vocab, words=words, spaces=spaces, ents=tags)


class LabelError(ValueError):
    """A label given names for that no entity of the corpora has."""


def ner_training_docs(
    pubtator_files: Sequence[Union[str, Path]],
    *,
    label_map: Optional[Mapping[str, str]] = None,
    names: Optional[Mapping[str, Union[str, Path]]] = None,
    replace_copies: int = 0,
    name_examples: int = 0,
    seed: int = 0,
    lang: str = "en",
    biomedical_tokenizer: bool = True,
    guidelines: Sequence[str] = (),
) -> List[Doc]:
    """`convert`'s documents: the gold entities of PubTator files, pooled
    (pooled_docs), each with its gold ID as kb_id, split by the biomedical
    tokenizer rules the NER recipes train with; then, per label of `names`
    (label -> a vocabulary file in any format `build` reads), copies with
    the entities swapped for its names and one-name examples (with_vocabulary).
    `guidelines`, one per file, names each document's annotation guideline
    in its user_data, for the NER heads of ner/guidelines.py."""
    import spacy

    from ..vocabularies.formats import read_vocabulary_file
    from .tokenizer import add_biomedical_rules

    names = dict(names or {})
    if (replace_copies or name_examples) and not names:
        raise ValueError("copies with replaced names and name examples need the names of a label")
    nlp = add_biomedical_rules(spacy.blank(lang)) if biomedical_tokenizer else spacy.blank(lang)
    if guidelines and len(guidelines) != len(pubtator_files):
        raise ValueError(f"{len(guidelines)} guidelines for {len(pubtator_files)} files: name one per file")
    corpora = [read_pubtator(path) for path in pubtator_files]
    docs = pooled_docs(nlp, corpora, label_map)
    if guidelines:
        tags = [guideline for guideline, corpus in zip(guidelines, corpora) for _ in corpus]
        for doc, guideline in zip(docs, tags):
            doc.user_data[GUIDELINE_KEY] = guideline
    labels = {span.label_ for doc in docs for span in doc.ents}
    unknown = sorted(set(names) - labels)
    if unknown:
        label = unknown[0]
        raise LabelError(f"{label}={names[label]}: the label {label!r}: no entity has it (labels: {', '.join(sorted(labels))})")
    vocabularies = {label: list(read_vocabulary_file(path)[0].names) for label, path in names.items()}
    return list(with_vocabulary(nlp, docs, vocabularies, replace_copies, name_examples, seed))
