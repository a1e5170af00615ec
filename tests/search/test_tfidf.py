"""The char tf-idf: fitting and transforming in one pass gives what fitting,
then transforming, gives, byte for byte."""
import numpy as np

from spacy_biosyn.search.tfidf import SparseEncoder

NAMES = [
    "breast cancer", "breast neoplasms", "ovarian cancer", "hereditary breast and ovarian cancer syndrome",
    "huntington disease", "huntington chorea", "colorectal adenoma", "adenomatous polyposis coli",
    "g6pd deficiency", "glucose 6 phosphate dehydrogenase deficiency", "type 2 diabetes mellitus", "ataxia telangiectasia",
]


def test_fit_transform_equals_fit_then_transform():
    apart = SparseEncoder().fit(NAMES)
    rows_apart = apart.transform(NAMES)
    together = SparseEncoder()
    rows_together = together.fit_transform(NAMES)

    assert together.vocabulary == apart.vocabulary
    np.testing.assert_array_equal(together._idf, apart._idf)
    for part in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(rows_together, part), getattr(rows_apart, part))
    # and the fitted encoder goes on to transform new text as the other does
    unseen = ["brest cancer", "huntingtons"]
    assert (together.transform(unseen) != apart.transform(unseen)).nnz == 0
