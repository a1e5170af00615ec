"""A tiny random BERT, saved in a model hub's real layout (config.json,
weights, vocab.txt): what tests, fuzzing and smoke runs encode with where no
model hub can be reached. Its vectors mean nothing; its shape is that of any
BERT, so every path a real encoder takes (loading, pooling, saving,
conversion to ONNX) is taken."""
import string
from pathlib import Path
from typing import List, Optional, Union

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = string.ascii_lowercase + string.digits


def make_tiny_encoder(folder: Union[str, Path], seed: int = 0, vocabulary: Optional[List[str]] = None,
                      **shape) -> str:
    """A 2-layer, 32-wide BERT with a character vocabulary, saved to
    `folder`; `shape` (BertConfig's arguments) makes it another: a
    BERT-base's layout. `vocabulary`: WordPiece tokens to use instead
    (special tokens first, as a trained WordPiece vocabulary lists them).
    Returns the folder, as an encoder's name."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokens = vocabulary or SPECIALS + list(CHARS) + ["##" + c for c in CHARS]
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(tokens) + "\n")
    tokenizer = BertTokenizer(str(vocab))  # positional: the keyword differs across versions
    torch.manual_seed(seed)
    config = BertConfig(**{
        "vocab_size": len(tokens), "hidden_size": 32, "num_hidden_layers": 2,
        "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64, **shape,
    })
    BertModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)
