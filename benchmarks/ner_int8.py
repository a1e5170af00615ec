"""The NER's transformer with dynamic int8 quantization (torch's
quantize_dynamic on its Linear layers) against fp32: end-to-end dev scores
and abstracts/s of the whole text pipeline. Time it alone.

    python benchmarks/ner_int8.py DATASET PIPELINE [--label Disease] [--threads 2]
"""
import time

from common import RAW_ABSTRACTS, cpu_description, parser, pct, print_table


def quantized(nlp) -> int:
    """Quantize every PyTorch module of the pipeline's transformer in place;
    how many were."""
    import torch

    count = 0
    for node in nlp.get_pipe("transformer").model.walk():
        for shim in node.shims:
            module = getattr(shim, "_model", None)
            if isinstance(module, torch.nn.Module):
                shim._model = torch.ao.quantization.quantize_dynamic(module, {torch.nn.Linear}, dtype=torch.qint8)
                count += 1
    return count


def main() -> None:
    p = parser(__doc__)
    p.add_argument("dataset", choices=sorted(RAW_ABSTRACTS))
    p.add_argument("pipeline")
    p.add_argument("--label", default=None)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args()

    import spacy
    import torch
    from spacy.training import Example

    from spacy_biosyn.corpus import NCBI_LABELS, pubtator_to_doc, read_pubtator
    from spacy_biosyn.evaluation.end_to_end import end_to_end_scores

    if args.threads:
        torch.set_num_threads(args.threads)
    documents = read_pubtator(args.data / RAW_ABSTRACTS[args.dataset]["dev"])
    rows = []
    for name in ("fp32", "int8"):
        nlp = spacy.load(args.pipeline)
        if name == "int8":
            assert quantized(nlp), "no PyTorch module in the transformer"
        list(nlp.pipe(document.text for document in documents[:5]))  # warm up
        start = time.perf_counter()
        docs = list(nlp.pipe(document.text for document in documents))
        rate = len(docs) / (time.perf_counter() - start)
        examples = [Example(doc, pubtator_to_doc(nlp, d, label_map=NCBI_LABELS)) for doc, d in zip(docs, documents)]
        s = end_to_end_scores(examples, [args.label] if args.label else None)
        rows.append((name, pct(s["ents_p"]), pct(s["ents_r"]), pct(s["ents_f"]), pct(s["link_f"]), pct(s["doc_f"]),
                     f"{rate:.2f}"))
    print(f"{args.dataset} dev, {len(documents)} abstracts, {args.pipeline}; {cpu_description()}; "
          f"torch threads {torch.get_num_threads()}\n")
    print_table(("transformer", "NER P", "NER R", "NER F", "link F", "doc F", "abstracts/s"), rows)


if __name__ == "__main__":
    main()
