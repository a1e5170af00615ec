"""Do static vectors distilled from the encoder help the CNN NER? (Issue 27's
lever; on NCBI Disease dev they did not, so no recipe uses them.)

    pip install model2vec skeletoken   # not model2vec[distill]: it pins transformers < 5.4
    python benchmarks/ner_static_vectors.py DATASET OUTPUT [--steps 3000]

model2vec passes each word of a vocabulary through the encoder once
(mean-pooled, then PCA and SIF weighting) and keeps one vector per word; the
words are the train abstracts' tokens and MEDIC's words, as the NER's
tokenizer splits them, lowercased as the uncased encoder reads them. The
vectors (keyed by LOWER) go into OUTPUT/vectors; the CNN recipe then trains
with them (`include_static_vectors = true`) into OUTPUT/ner, and the best dev
F and the minutes are printed. Score the result end to end with
`spacy_biosyn assemble OUTPUT/ner/model-best LINKER PIPELINE` and
benchmarks/end_to_end.py, beside a CNN trained without them.
"""
import time
from pathlib import Path

from common import offline_minilm, parser, print_table

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"


def vocabulary(nlp, train: Path, dictionary: Path) -> list:
    from spacy.tokens import DocBin

    from spacy_biosyn.kb.vocabularies import read_biosyn

    words = set()
    for doc in DocBin().from_disk(train).get_docs(nlp.vocab):
        words.update(token.lower_ for token in doc)
    for doc in nlp.tokenizer.pipe(read_biosyn(dictionary).names, batch_size=1000):
        words.update(token.lower_ for token in doc)
    return sorted(word for word in words if not word.isspace())


def distilled_vectors(encoder: str, train: Path, dictionary: Path, output: Path, dims: int) -> None:
    import numpy
    import spacy
    from model2vec.distill import distill
    from spacy.vectors import Vectors

    from spacy_biosyn.tokenizer import add_biomedical_rules

    nlp = add_biomedical_rules(spacy.blank("en"))
    words = vocabulary(nlp, train, dictionary)
    static = distill(model_name=encoder, vocabulary=words, pca_dims=dims)
    row = {token: i for i, token in enumerate(static.tokens)}
    data = numpy.asarray(static.embedding[[row[word] for word in words]], dtype=numpy.float32)
    nlp.vocab.vectors = Vectors(data=data, keys=[nlp.vocab.strings.add(word) for word in words], attr="LOWER")
    nlp.to_disk(output)


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=["ncbi-disease", "bc5cdr-disease"])
    p.add_argument("output", type=Path)
    p.add_argument("--steps", type=int, default=3000, help="training steps (the CNN recipe's runs here: 3,000)")
    p.add_argument("--dims", type=int, default=256, help="dimensions kept by PCA")
    args = p.parse_args()

    from spacy.cli.train import train

    corpus = CORPUS / args.dataset  # written by the project's convert-ner
    started = time.perf_counter()
    distilled_vectors(args.encoder or offline_minilm(), corpus / "ner-train.spacy",
                      args.data / args.dataset / "train_dictionary.txt", args.output / "vectors", args.dims)
    distilled = time.perf_counter()
    train(CONFIGS / "ner-cnn.cfg", args.output / "ner", overrides={
        "paths.train": str(corpus / "ner-train.spacy"), "paths.dev": str(corpus / "ner-dev.spacy"),
        "paths.vectors": str(args.output / "vectors"), "components.tok2vec.model.embed.include_static_vectors": True,
        "training.max_steps": args.steps, "training.eval_frequency": 200,
    })
    trained = time.perf_counter()

    import spacy

    best = spacy.load(args.output / "ner" / "model-best")
    print_table(("dataset", "vectors", "distilling min", "training min", "best dev NER F"), [(
        args.dataset, len(best.vocab.vectors), f"{(distilled - started) / 60:.1f}", f"{(trained - distilled) / 60:.1f}",
        f"{100 * best.meta['performance']['ents_f']:.2f}",
    )])


if __name__ == "__main__":
    main()
