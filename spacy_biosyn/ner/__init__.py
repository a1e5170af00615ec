"""The NER side of a text pipeline: the biomedical tokenizer, the
transformer recipe's word pieces and precision, the NER's training data,
and the document-level entities made to agree before the linker."""
