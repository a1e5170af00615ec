"""MEDLINE/PubMed XML as NLM ships PubMed: each citation's text as the
docs say, told from BioC XML by its root, read without fetching the DTD
or expanding any entity, faults named by file and line, and linked by
link-corpus into PubTator and Parquet at the offsets of its text."""
import gzip
import socket
import time
import warnings

import bioc
import pyarrow.parquet as pq
import pytest
from bioc import biocxml
from helpers import ruled_linker

from spacy_biosyn.corpora.medline import Citation, DeleteCitation, iter_medline
from spacy_biosyn.corpus_linking import link_corpus, read_rows
from spacy_biosyn.corpus_linking.text_sources import check_annotated, file_format, read_documents
from spacy_biosyn.errors import CorpusError

PROLOG = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">
"""
MATHML = '<mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:mi>x</mml:mi><mml:mo>=</mml:mo><mml:mn>3</mml:mn></mml:math>'


def article(pmid, title, abstract="", vernacular="", other_abstract=""):
    """A PubmedArticle as pubmed_250101.dtd orders its elements, with the
    PMIDs, titles and texts a reader must pass by (a comment's PMID, the
    journal's title, an author)."""
    return f"""<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM" IndexingMethod="Automated">
    <PMID Version="1">{pmid}</PMID>
    <DateCompleted><Year>2025</Year><Month>01</Month><Day>02</Day></DateCompleted>
    <Article PubModel="Print-Electronic">
      <Journal><ISSN IssnType="Electronic">1234-5678</ISSN><Title>Journal of breast cancer</Title></Journal>
      <ArticleTitle>{title}</ArticleTitle>
      <Pagination><MedlinePgn>1-9</MedlinePgn></Pagination>
      {f"<Abstract>{abstract}<CopyrightInformation>(c) The authors.</CopyrightInformation></Abstract>" if abstract else ""}
      <AuthorList CompleteYN="Y"><Author ValidYN="Y"><LastName>Doe</LastName><ForeName>Jane</ForeName></Author></AuthorList>
      <Language>eng</Language>
      <PublicationTypeList><PublicationType UI="D016428">Journal Article</PublicationType></PublicationTypeList>
      {vernacular}
    </Article>
    <MedlineJournalInfo><Country>England</Country><MedlineTA>J Tests</MedlineTA></MedlineJournalInfo>
    <CommentsCorrectionsList><CommentsCorrections RefType="CommentIn"><RefSource>J Tests. 2025;1:2</RefSource><PMID Version="1">999</PMID></CommentsCorrections></CommentsCorrectionsList>
    {other_abstract}
  </MedlineCitation>
  <PubmedData><ArticleIdList><ArticleId IdType="pubmed">{pmid}</ArticleId></ArticleIdList></PubmedData>
</PubmedArticle>
"""


BOOK_CHAPTER = """<PubmedBookArticle>
  <BookDocument>
    <PMID Version="1">20301425</PMID>
    <ArticleIdList><ArticleId IdType="bookaccession">NBK1247</ArticleId></ArticleIdList>
    <Book>
      <Publisher><PublisherName>University of Washington, Seattle</PublisherName></Publisher>
      <BookTitle book="gene">GeneReviews<sup>®</sup></BookTitle>
      <PubDate><Year>1993</Year></PubDate>
    </Book>
    <ArticleTitle book="gene" part="brca1">BRCA1- and BRCA2-Associated Hereditary Breast cancer</ArticleTitle>
    <Language>eng</Language>
    <Abstract><AbstractText Label="CLINICAL CHARACTERISTICS">Breast cancer and ovarian cancer.</AbstractText></Abstract>
  </BookDocument>
  <PubmedBookData><ArticleIdList><ArticleId IdType="pubmed">20301425</ArticleId></ArticleIdList></PubmedBookData>
</PubmedBookArticle>
"""
WHOLE_BOOK = """<PubmedBookArticle>
  <BookDocument>
    <PMID Version="1">20301426</PMID>
    <Book><BookTitle book="hd">Huntington chorea: a handbook</BookTitle></Book>
  </BookDocument>
</PubmedBookArticle>
"""
BASELINE = PROLOG + "<PubmedArticleSet>\n" + "".join([
    article(
        30000001, "Breast cancer in carriers.", "<AbstractText>Huntington chorea was absent.</AbstractText>",
        vernacular="<VernacularTitle>Brustkrebs bei Trägerinnen.</VernacularTitle>",
        other_abstract='<OtherAbstract Type="Publisher" Language="ger"><AbstractText>Brustkrebs.</AbstractText></OtherAbstract>',
    ),
    article(30000002, "Diabetes\n        in  two cohorts.", """
        <AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">Type 2 diabetes
          is common.</AbstractText>
        <AbstractText Label="METHODS" NlmCategory="METHODS"></AbstractText>
        <AbstractText Label="RESULTS" NlmCategory="RESULTS">None had ovarian cancer.</AbstractText>"""),
    article(30000003, "<i>BRCA1</i> and breast cancer <mml:math><mml:mi>y</mml:mi></mml:math>risk.",
            f"<AbstractText>Ca<sup>2+</sup> and H<sub>2</sub>O, <b>mean</b> {MATHML} in <u>type 2 diabetes</u>.</AbstractText>"),
    article(30000004, "Huntington chorea: a case report."),
    BOOK_CHAPTER,
    WHOLE_BOOK,
]) + "</PubmedArticleSet>\n"
UPDATE = PROLOG + "<PubmedArticleSet>\n" + article(
    30000005, "Ovarian cancer again.", "<AbstractText>Breast cancer too.</AbstractText>"
) + """<DeleteCitation>
  <PMID Version="1">30000004</PMID>
  <PMID Version="1">111</PMID>
</DeleteCitation>
</PubmedArticleSet>
"""
TEXTS = {
    "30000001": ("Breast cancer in carriers. Huntington chorea was absent.", 26),
    "30000002": ("Diabetes in two cohorts. BACKGROUND: Type 2 diabetes is common. RESULTS: None had ovarian cancer.", 24),
    "30000003": ("BRCA1 and breast cancer risk. Ca2+ and H2O, mean in type 2 diabetes.", 29),
    "30000004": ("Huntington chorea: a case report.", None),
    "20301425": ("BRCA1- and BRCA2-Associated Hereditary Breast cancer CLINICAL CHARACTERISTICS: Breast cancer and "
                 "ovarian cancer.", 52),
    "20301426": ("Huntington chorea: a handbook", None),
}


def test_each_citation_is_its_title_then_its_abstracts_sections(tmp_path):
    (tmp_path / "pubmed26n0001.xml").write_text(BASELINE, encoding="utf-8")
    read = list(iter_medline(tmp_path / "pubmed26n0001.xml"))
    assert read == [Citation(pmid, text, title_end) for pmid, (text, title_end) in TEXTS.items()]
    for citation in read:  # the title ends one space before the abstract, as PubTator counts
        if citation.title_end is not None:
            assert citation.text[citation.title_end] == " "


def test_a_pubmed_xml_file_is_told_from_bioc_by_its_root_and_gzip_changes_nothing(tmp_path):
    (tmp_path / "baseline.xml").write_text(BASELINE, encoding="utf-8")
    (tmp_path / "pubmed26n0001.xml.gz").write_bytes(gzip.compress(BASELINE.encode("utf-8")))
    # No DOCTYPE, a comment first: the first element tells
    (tmp_path / "efetch.XML").write_text('<?xml version="1.0"?>\n<!-- efetch -->\n<PubmedArticleSet>'
                                         + article(1, "A title.") + "</PubmedArticleSet>")
    document = bioc.BioCDocument()
    document.id = "bioc-1"
    document.add_passage(bioc.BioCPassage.of_text("Breast cancer in carriers.", 0))
    collection = bioc.BioCCollection.of_documents(document)
    with open(tmp_path / "bioc.xml", "w") as f:
        biocxml.dump(collection, f)
    formats = {path.name: file_format(path) for path in sorted(tmp_path.iterdir())}
    assert formats == {"baseline.xml": "medline-xml", "bioc.xml": "bioc-xml", "efetch.XML": "medline-xml",
                       "pubmed26n0001.xml.gz": "medline-xml"}
    plain = [(d.id, d.text, d.title_end) for d in read_documents(tmp_path / "baseline.xml", "medline-xml")]
    assert plain == [(d.id, d.text, d.title_end) for d in read_documents(tmp_path / "pubmed26n0001.xml.gz", "medline-xml")]
    assert [(d.id, d.text) for d in read_documents(tmp_path / "bioc.xml", "bioc-xml")] == [("bioc-1", "Breast cancer in carriers.")]
    with pytest.raises(CorpusError, match=r"bioc.xml, line 2: the root element is <collection>, not PubmedArticleSet"):
        list(read_documents(tmp_path / "bioc.xml", "medline-xml"))
    with pytest.raises(CorpusError, match="holds no annotations"):
        check_annotated([tmp_path / "baseline.xml"], None)


def test_a_delete_citation_gives_its_pmids_in_file_order(tmp_path):
    (tmp_path / "pubmed26n1300.xml").write_text(UPDATE, encoding="utf-8")
    assert [type(entry).__name__ for entry in iter_medline(tmp_path / "pubmed26n1300.xml")] == ["Citation", "DeleteCitation"]
    assert list(iter_medline(tmp_path / "pubmed26n1300.xml"))[1] == DeleteCitation(["30000004", "111"])
    deleted = []
    assert [d.id for d in read_documents(tmp_path / "pubmed26n1300.xml", "medline-xml", deleted)] == ["30000005"]
    assert deleted == [(str(tmp_path / "pubmed26n1300.xml"), "30000004"), (str(tmp_path / "pubmed26n1300.xml"), "111")]


def test_the_dtd_the_doctype_names_is_never_fetched(tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the reader reached for the network")

    monkeypatch.setattr(socket, "socket", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    (tmp_path / "pubmed.xml").write_text(BASELINE, encoding="utf-8")
    assert file_format(tmp_path / "pubmed.xml") == "medline-xml"
    assert [d.id for d in read_documents(tmp_path / "pubmed.xml", "medline-xml")] == list(TEXTS)


def line_of(text, part, start=0):
    return text.count("\n", 0, text.index(part, start)) + 1


UNREAD_DTD = PROLOG + "<PubmedArticleSet>" + article(1, "Breast&nbsp;cancer") + "</PubmedArticleSet>"
LAUGHS = "".join(f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
HOSTILE = {
    "external entity": (
        '<!DOCTYPE PubmedArticleSet [\n<!ENTITY passwd SYSTEM "file:///etc/passwd">\n]>\n<PubmedArticleSet>'
        + article(1, "&passwd;") + "</PubmedArticleSet>",
        r"hostile.xml, line 1: the DOCTYPE declares its own markup",
    ),
    "parameter entity fetching a DTD": (
        '<!DOCTYPE PubmedArticleSet [\n<!ENTITY % dtd SYSTEM "https://example.org/evil.dtd"> %dtd;\n]>\n'
        "<PubmedArticleSet></PubmedArticleSet>",
        r"hostile.xml, line 1: the DOCTYPE declares its own markup",
    ),
    "billion laughs": (
        f'<!DOCTYPE PubmedArticleSet [\n<!ENTITY lol0 "lol">{LAUGHS}\n]>\n<PubmedArticleSet>'
        + article(1, "&lol9;") + "</PubmedArticleSet>",
        r"hostile.xml, line 1: the DOCTYPE declares its own markup",
    ),
    # The DTD would declare it, but is never read: its text is not silently left out
    "entity of the unread DTD": (
        UNREAD_DTD, rf"hostile.xml, line {line_of(UNREAD_DTD, '&nbsp;')}: the entity &nbsp; is declared nowhere",
    ),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_an_entity_declared_in_the_file_is_refused_before_anything_is_expanded(tmp_path, case):
    content, error = HOSTILE[case]
    (tmp_path / "hostile.xml").write_text(content, encoding="utf-8")
    assert file_format(tmp_path / "hostile.xml") == "medline-xml"  # the DOCTYPE's name says it
    started = time.perf_counter()
    with pytest.raises(CorpusError, match=error) as refused:
        list(read_documents(tmp_path / "hostile.xml", "medline-xml"))
    assert time.perf_counter() - started < 1.0 and "root:" not in str(refused.value)


CUT = BASELINE[: BASELINE.index("<PMID", 2000)]
MISMATCHED = BASELINE.replace("</ArticleTitle>", "</Title>", 1)
NO_PMID = BASELINE.replace('<PMID Version="1">30000002</PMID>', "<PMID/>")


@pytest.mark.parametrize("name,content,error", [
    ("cut.xml", CUT, rf"cut.xml, line {CUT.count(chr(10)) + 1}: not well-formed MEDLINE XML \(no element found at column"),
    ("mismatched.xml", MISMATCHED,
     rf"mismatched.xml, line {line_of(MISMATCHED, '</Title>', MISMATCHED.index('<ArticleTitle>'))}: not well-formed "
     r"MEDLINE XML \(mismatched tag at column"),
    ("no-pmid.xml", NO_PMID,
     rf"no-pmid.xml, line {line_of(NO_PMID, '</MedlineCitation>', NO_PMID.index('<PMID/>'))}: a citation without a PMID"),
    ("twice.xml", BASELINE.replace("30000002", "30000001"), r"twice.xml: document 2 has the id '30000001' of document 1"),
])
def test_a_malformed_file_is_one_error_naming_the_file_and_line(tmp_path, name, content, error):
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(CorpusError, match=error):
        list(read_documents(tmp_path / name, "medline-xml"))


def test_a_gz_cut_short_is_named(tmp_path):
    packed = gzip.compress(BASELINE.encode("utf-8"))
    (tmp_path / "cut.xml.gz").write_bytes(packed[: len(packed) // 2])
    with pytest.raises(CorpusError, match=r"cut.xml.gz: cannot be read, cut short"):
        list(read_documents(tmp_path / "cut.xml.gz", "medline-xml"))


def test_citations_come_as_they_are_read_not_once_the_file_is(tmp_path):
    """A stream: the first citations of a file with a fault near its end
    (past the first piece read) are given before the fault is reached."""
    body = "".join(article(i, f"Title {i}.", "<AbstractText>Text.</AbstractText>") for i in range(1, 201))
    (tmp_path / "long.xml").write_text(PROLOG + "<PubmedArticleSet>" + body + "<broken></PubmedArticleSet>")
    citations = iter_medline(tmp_path / "long.xml")
    assert next(citations) == Citation("1", "Title 1. Text.", 8)
    with pytest.raises(CorpusError, match="mismatched tag"):
        list(citations)


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory, tiny_encoder):
    """An entity_ruler standing in for the NER, then the linker over DISEASES."""
    return ruled_linker(tmp_path_factory.mktemp("medline"), tiny_encoder,
                        ("breast cancer", "ovarian cancer", "type 2 diabetes", "huntington chorea"))


def test_link_corpus_links_pubmed_files_by_pmid_into_pubtator_and_parquet(pipeline, tmp_path):
    from bioc import pubtator

    (tmp_path / "pubmed").mkdir()
    (tmp_path / "pubmed" / "pubmed26n0001.xml.gz").write_bytes(gzip.compress(BASELINE.encode("utf-8")))
    (tmp_path / "pubmed" / "pubmed26n1300.xml").write_text(UPDATE, encoding="utf-8")
    pattern = str(tmp_path / "pubmed" / "*.xml*")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summary = link_corpus(pipeline, pattern, tmp_path / "pubtator", output_format="pubtator", progress=False)
    assert [str(w.message) for w in caught if "DeleteCitation" in str(w.message)] == [
        f"{tmp_path / 'pubmed' / 'pubmed26n1300.xml'}: deletes 2 PubMed citation(s) (DeleteCitation), listed in "
        f"{tmp_path / 'pubtator' / '_deleted_pmids.tsv'}; rows linked for them from other input files are kept"
    ]
    assert (summary["documents"], summary["deleted_citations"]) == (7, 2)
    assert (tmp_path / "pubtator" / "_deleted_pmids.tsv").read_text() == (
        f"pmid\tfile\n30000004\t{tmp_path / 'pubmed' / 'pubmed26n1300.xml'}\n111\t{tmp_path / 'pubmed' / 'pubmed26n1300.xml'}\n"
    )
    with (tmp_path / "pubtator" / "shard-00000.pubtator").open() as f:
        written = pubtator.load(f)
    assert [(d.pmid, d.title) for d in written] == [(pmid, text[:end]) for pmid, (text, end) in TEXTS.items()] + [
        ("30000005", "Ovarian cancer again.")]
    mentions = [(d.pmid, a.text) for d in written for a in d.annotations]
    for d in written:  # each offset points at its mention in title + " " + abstract
        text = d.title + (f" {d.abstract}" if d.abstract else "")
        assert all(text[a.start:a.end] == a.text for a in d.annotations)
    assert ("20301425", "ovarian cancer") in mentions and ("30000002", "Type 2 diabetes") in mentions
    assert ("30000004", "Huntington chorea") in mentions  # deleted by the update, and kept

    link_corpus(pipeline, pattern, tmp_path / "parquet", progress=False)
    rows = read_rows(tmp_path / "parquet")
    texts = {pmid: text for pmid, (text, _) in TEXTS.items()} | {"30000005": "Ovarian cancer again. Breast cancer too."}
    assert all(texts[r["doc_id"]][r["start"]:r["end"]] == r["text"] for r in rows)
    # the same entities at the same offsets as the PubTator output's, in both
    assert [(r["doc_id"], r["start"], r["end"], r["text"], r["id"]) for r in rows] == [
        (d.pmid, a.start, a.end, a.text, a.id) for d in written for a in d.annotations]
    assert pq.read_table(tmp_path / "parquet").num_rows == len(rows)  # the list of deletions is no shard


def test_a_small_gzip_of_one_endless_abstract_is_refused_before_it_fills_memory(tmp_path, monkeypatch):
    import gzip

    from spacy_biosyn.preprocess import text

    monkeypatch.setenv("SPACY_BIOSYN_MAX_LINE_BYTES", "100000")
    text.input_limits.cache_clear()
    try:
        bomb = tmp_path / "bomb.xml.gz"
        with gzip.open(bomb, "wb") as f:
            f.write(b"<PubmedArticleSet><PubmedArticle><MedlineCitation><PMID>1</PMID><Article><Abstract><AbstractText>")
            f.write(b"a " * 200_000)
            f.write(b"</AbstractText></Abstract></Article></MedlineCitation></PubmedArticle></PubmedArticleSet>")
        with pytest.raises(CorpusError, match=r"bomb.xml.gz, line 1: a citation's text passes 100,000 characters"):
            list(iter_medline(bomb))
    finally:
        text.input_limits.cache_clear()


def test_a_doctype_with_its_own_markup_is_refused(tmp_path):
    crafted = tmp_path / "subset.xml"
    crafted.write_text('<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [<!ATTLIST AbstractText Label CDATA '
                       '"INJECTED">]>\n<PubmedArticleSet></PubmedArticleSet>\n')
    with pytest.raises(CorpusError, match="internal subset"):
        list(iter_medline(crafted))
