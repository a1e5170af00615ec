"""The NER side of a text pipeline: the biomedical tokenizer, the
transformer recipe's word pieces and precision, its BERT exported to and
run by ONNX Runtime, the NER's training data, and the document-level
entities made to agree before the linker."""
