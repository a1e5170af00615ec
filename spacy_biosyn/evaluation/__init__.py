"""Scores of a pipeline on a corpus, each job in its module:

- `queries`: BioSyn's Acc@k on `.concept` queries and on gold spans;
- `end_to_end`: raw text in, IDs out (NER, linking, document-level IDs);
- `nil`: the NIL threshold chosen on dev abstracts for end-to-end F;
- `nil_choice`: what the two choices of a NIL threshold share, and the
  choice on gold spans by the linking engine alone, without spaCy.

The rules they share (which ID is right, Acc@k, the score keys) are
`spacy_biosyn.pipeline.accuracy`'s, below the pipeline.
"""
