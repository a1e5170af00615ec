"""Does the NER gain from seeing which tokens are dictionary names? (Issue
27's last lever: the vocabulary as a feature of the NER, not as span
candidates, which benchmarks/ner_vocabulary.py measured. On NCBI Disease
dev it did not pay: best dev F 83.25 against 83.26; docs/record.md.)

    python benchmarks/ner_dictionary_features.py DATASET OUTPUT [--steps 1000]

A frozen component in front of the transformer marks each token that a
dictionary name covers (greedy longest match over the tokens' words,
punctuation ignored as BioSyn's processed names ignore it; a name of three
letters or fewer only where the text writes it with a capital, so that
"all" is not acute lymphoblastic leukemia) as the start or inside of a name,
in Token.tag (the pipeline has no tagger). The NER's tok2vec concatenates
the transformer listener's 384 dims with a 32-dim embedding of that mark.
The dictionary is MEDIC alone (`train_dictionary.txt`): with the training
mentions in it, every gold span of the training abstracts would be marked
and the NER would learn to trust a mark that is far less reliable on new
text. The recipe and schedule are configs/ner-transformer.cfg's, so dev F at
each evaluation compares with that recipe's run step for step.
"""
import re
import time
from pathlib import Path
from typing import List

from spacy.language import Language
from spacy.tokens import Doc
from spacy.util import registry
from thinc.api import Model, chain, concatenate, with_array
from thinc.types import Floats2d

from common import parser

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
CORPUS = Path(__file__).resolve().parents[1] / "corpus"
MAX_NAME_WORDS = 12


def words(text: str) -> List[str]:
    return re.sub(r"[\W_]+", " ", text.lower()).split()


class DictionaryMarks:
    """Marks tokens covered by a dictionary name in Token.tag_ (DICT_B,
    DICT_I); the names are read on first use, so a saved pipeline needs only
    the dictionary's path."""

    def __init__(self, dictionary: str):
        self.dictionary = dictionary
        self.names = None

    def _read(self) -> set:
        from spacy_biosyn.kb.vocabularies import read_biosyn

        return {tuple(words(name)) for name in read_biosyn(Path(self.dictionary)).names if 0 < len(words(name)) <= MAX_NAME_WORDS}

    def __call__(self, doc: Doc) -> Doc:
        if self.names is None:
            self.names = self._read()
        seq = [(word, token.i, token.text) for token in doc for word in words(token.text)]
        i = 0
        while i < len(seq):
            for n in range(min(MAX_NAME_WORDS, len(seq) - i), 0, -1):
                key = tuple(word for word, _, _ in seq[i:i + n])
                if key in self.names and (n > 1 or len(key[0]) > 3 or not seq[i][2].islower()):
                    first, last = seq[i][1], seq[i + n - 1][1]
                    doc[first].tag_ = "DICT_B"
                    for token in doc[first + 1:last + 1]:
                        token.tag_ = "DICT_I"
                    i += n
                    break
            else:
                i += 1
        return doc

    def to_disk(self, path, exclude=()):
        pass

    def from_disk(self, path, exclude=()):
        return self


@Language.factory("dictionary_marks", default_config={"dictionary": None})
def make_dictionary_marks(nlp: Language, name: str, dictionary: str) -> DictionaryMarks:
    return DictionaryMarks(dictionary)


@registry.architectures("biosyn_bench.ListenerWithDictionaryMarks.v1")
def listener_with_dictionary_marks(listener: Model, width: int = 32) -> Model[List[Doc], List[Floats2d]]:
    from spacy.ml.featureextractor import FeatureExtractor
    from spacy.attrs import TAG
    from thinc.api import HashEmbed

    marks = chain(FeatureExtractor([TAG]), with_array(HashEmbed(nO=width, nV=64, column=0)))
    return concatenate(listener, marks)


def config(dictionary: Path, train: Path, dev: Path, encoder: str, steps: int):
    from spacy.util import load_config

    cfg = load_config(CONFIGS / "ner-transformer.cfg")
    cfg["nlp"]["pipeline"] = ["dictionary_marks", "transformer", "ner"]
    cfg["components"]["dictionary_marks"] = {"factory": "dictionary_marks", "dictionary": str(dictionary)}
    listener = cfg["components"]["ner"]["model"]["tok2vec"]
    cfg["components"]["ner"]["model"]["tok2vec"] = {
        "@architectures": "biosyn_bench.ListenerWithDictionaryMarks.v1", "width": 32, "listener": listener,
    }
    cfg["training"]["frozen_components"] = ["dictionary_marks"]
    cfg["training"]["annotating_components"] = ["dictionary_marks"]
    cfg["training"]["max_steps"] = steps
    cfg["paths"].update({"train": str(train), "dev": str(dev), "encoder": encoder})
    return cfg


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=["ncbi-disease", "bc5cdr-disease"])
    p.add_argument("output", type=Path)
    p.add_argument("--steps", type=int, default=1000, help="training steps (the transformer recipe's: 1,000)")
    p.add_argument("--corpus", type=Path, default=None, help="folder of ner-train.spacy and ner-dev.spacy (default: the project's corpus/DATASET)")
    args = p.parse_args()

    from common import offline_minilm
    from spacy.cli.train import train

    corpus = args.corpus or CORPUS / args.dataset  # written by the project's convert-ner
    cfg = config(args.data / args.dataset / "train_dictionary.txt", corpus / "ner-train.spacy", corpus / "ner-dev.spacy",
                 args.encoder or offline_minilm(), args.steps)
    args.output.mkdir(parents=True, exist_ok=True)
    cfg.to_disk(args.output / "config.cfg")
    started = time.perf_counter()
    train(args.output / "config.cfg", args.output / "ner")
    print(f"trained in {(time.perf_counter() - started) / 60:.1f} minutes")


if __name__ == "__main__":
    main()
