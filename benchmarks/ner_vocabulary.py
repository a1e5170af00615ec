"""Does the vocabulary help the NER? Exact name matches and the linker's
scores around a text pipeline's NER, scored on a dataset's raw dev abstracts.

    python benchmarks/ner_vocabulary.py DATASET PIPELINE

The names are the dataset's MEDIC (train_dictionary.txt) and its training
mentions, normalized as the linker normalizes them.
1. Errors: predicted spans that are not gold, by how they overlap gold
   spans, and gold spans that no prediction overlaps.
2. Re-bounding: a span that is not a name moves an edge by one token (in
   the order given) when the moved span is a name, and overlaps no other
   entity.
3. Added matches: training mentions found in the text where no entity is,
   for mentions annotated in at least RATE of their training occurrences
   (and at least COUNT times).
4. Joint recognition and normalization, as TaggerOne's joint model: each
   span and its one-token extensions and trims (overlapping no other entity)
   are linked; a span moves to the variant whose link score beats its own by
   MARGIN, or is dropped when its own score is under THRESHOLD.
Strict NER P/R/F (exact offsets, any label) for each.
"""
from collections import Counter

from common import RAW_ABSTRACTS, parser, print_table

VARIANTS = {"extend left": (-1, 0), "extend right": (0, 1), "trim left": (1, 0), "trim right": (0, -1)}
ORDERS = (
    ("extend left", "extend right"),
    ("trim left", "trim right"),
    ("extend left", "extend right", "trim left", "trim right"),
)


def prf(documents, predicted) -> tuple:
    tp = sum(len({(a.start, a.end) for a in d.annotations} & spans) for d, spans in zip(documents, predicted))
    n_pred, n_gold = sum(map(len, predicted)), sum(len(d.annotations) for d in documents)
    p, r = tp / n_pred, tp / n_gold
    return f"{100 * p:.2f}", f"{100 * r:.2f}", f"{200 * p * r / (p + r):.2f}"


def error_kinds(documents, docs) -> Counter:
    kinds = Counter()
    for d, doc in zip(documents, docs):
        gold = {(a.start, a.end) for a in d.annotations}
        pred = {(e.start_char, e.end_char) for e in doc.ents}
        for p in pred - gold:
            hits = [g for g in gold if g[0] < p[1] and p[0] < g[1]]
            if not hits:
                kinds["predicted, overlaps no gold span"] += 1
            elif len(hits) > 1:
                kinds["predicted, covers several gold spans"] += 1
            elif p[0] <= hits[0][0] and p[1] >= hits[0][1]:
                kinds["predicted, longer than its gold span"] += 1
            elif p[0] >= hits[0][0] and p[1] <= hits[0][1]:
                kinds["predicted, shorter than its gold span"] += 1
            else:
                kinds["predicted, crosses its gold span"] += 1
        kinds["gold, overlapped by no prediction"] += sum(
            not any(g[0] < p[1] and p[0] < g[1] for p in pred) for g in gold
        )
    return kinds


def rebounded(docs, names, order, normalize) -> list:
    out = []
    for doc in docs:
        ents = [(e.start, e.end) for e in doc.ents]
        spans = set()
        for start, end in ents:
            chosen = (start, end)
            if normalize(doc[start:end].text) not in names:
                for variant in order:
                    ds, de = VARIANTS[variant]
                    s, t = start + ds, end + de
                    if not (0 <= s < t <= len(doc)) or doc[s].is_punct or doc[t - 1].is_punct:
                        continue
                    free = not any((a, b) != (start, end) and a < t and s < b for a, b in ents)
                    if free and normalize(doc[s:t].text) in names:
                        chosen = (s, t)
                        break
            spans.add((doc[chosen[0]:chosen[1]].start_char, doc[chosen[0]:chosen[1]].end_char))
        out.append(spans)
    return out


def variant_scores(nlp, docs) -> list:
    """Per doc, {(start, end) of an entity: {(start, end) of a variant: link
    score}}, the entity itself among its variants. One linking pass per
    variant: variants moved the same way and overlapping no other entity
    cannot overlap each other."""
    from spacy.tokens import Span

    from spacy_biosyn.pipeline.annotate import link_score

    linker = nlp.get_pipe("biosyn_linker")
    scores = [{(e.start, e.end): {} for e in doc.ents} for doc in docs]
    for ds, de in [(0, 0), *VARIANTS.values()]:
        copies, moved = [], []
        for doc in docs:
            ents = [(e.start, e.end, e.label_) for e in doc.ents]
            spans = [(start, end, start + ds, end + de, label) for start, end, label in ents
                     if 0 <= start + ds < end + de <= len(doc) and not doc[start + ds].is_punct
                     and not doc[end + de - 1].is_punct
                     and not any((a, b) != (start, end) and a < end + de and start + ds < b for a, b, _ in ents)]
            copy = doc.copy()
            copy.ents = [Span(copy, s, t, label=label) for _, _, s, t, label in spans]
            copies.append(copy)
            moved.append(spans)
        for i, (doc, spans) in enumerate(zip(linker.pipe(copies), moved)):
            for ent, (start, end, s, t, _) in zip(doc.ents, spans):
                scores[i][(start, end)][(s, t)] = link_score(ent._.parts)
    return scores


def jointly_bounded(docs, scores, margin, threshold) -> list:
    out = []
    for doc, by_ent in zip(docs, scores):
        spans = set()
        for (start, end), variants in by_ent.items():
            own = variants.get((start, end))
            if own is None or own < threshold:
                continue
            best = max(((score, span) for span, score in variants.items() if score is not None), default=(own, None))
            s, t = best[1] if best[0] >= own + margin else (start, end)
            spans.add((doc[s:t].start_char, doc[s:t].end_char))
        out.append(spans)
    return out


def with_matches(docs, matcher, kept) -> tuple:
    out, added = [], 0
    for doc in docs:
        spans = {(e.start_char, e.end_char) for e in doc.ents}
        taken = [(e.start, e.end) for e in doc.ents]
        for _, s, t in sorted(matcher(doc), key=lambda m: m[1] - m[2]):  # longest first
            if doc[s:t].text.lower() in kept and not any(a < t and s < b for a, b in taken):
                taken.append((s, t))
                spans.add((doc[s:t].start_char, doc[s:t].end_char))
                added += 1
        out.append(spans)
    return out, added


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("pipeline")
    args = p.parse_args()

    import spacy
    from spacy.matcher import PhraseMatcher

    from spacy_biosyn.corpus import read_pubtator
    from spacy_biosyn.preprocess.text import normalize

    splits = RAW_ABSTRACTS[args.dataset]
    train, dev = read_pubtator(args.data / splits["train"]), read_pubtator(args.data / splits["dev"])
    medic = args.data / args.dataset / "train_dictionary.txt"
    names = {line.split("||", 1)[1].strip() for line in medic.open() if "||" in line}
    mentions = Counter(d.text[a.start:a.end].lower() for d in train for a in d.annotations)
    names |= {normalize(m) for m in mentions}

    nlp = spacy.load(args.pipeline)
    docs = list(nlp.pipe((d.text for d in dev), disable=["biosyn_linker"]))
    print(f"{args.dataset} dev, {len(dev)} abstracts, NER of {args.pipeline}\n")
    print_table(("error", "count"), sorted(error_kinds(dev, docs).items()))

    rows = [("the NER alone", "", *prf(dev, [{(e.start_char, e.end_char) for e in doc.ents} for doc in docs]))]
    for order in ORDERS:
        rows.append(("re-bounding to names", ", then ".join(order), *prf(dev, rebounded(docs, names, order, normalize))))

    matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
    matcher.add("MENTION", list(nlp.tokenizer.pipe(mentions)))
    occurrences = Counter()
    for doc in nlp.tokenizer.pipe(d.text for d in train):
        occurrences.update(doc[s:t].text.lower() for _, s, t in matcher(doc))
    for least in (1, 3):
        for rate in (0.5, 0.8, 1.0):
            kept = {m for m, n in mentions.items() if occurrences[m] and n / occurrences[m] >= rate and n >= least}
            spans, added = with_matches(docs, matcher, kept)
            rows.append(("added training mentions", f"annotated >= {rate:.0%} of {least}+ times: {added} added",
                         *prf(dev, spans)))

    scores = variant_scores(nlp, docs)
    for margin in (0.0, 0.02, 0.05, 0.1):
        rows.append(("re-bounding by link score", f"a variant beats the span by {margin}",
                     *prf(dev, jointly_bounded(docs, scores, margin, float("-inf")))))
    for threshold in (0.85, 0.9, 0.95, 1.0, 1.05):
        rows.append(("rejecting by link score", f"spans scoring under {threshold} dropped",
                     *prf(dev, jointly_bounded(docs, scores, float("inf"), threshold))))
    print()
    print_table(("lever", "setting", "NER P", "NER R", "NER F"), rows)


if __name__ == "__main__":
    main()
