"""How fast link-corpus reads MEDLINE/PubMed XML, and in how much memory.

    python -m benchmarks.medline_read [--citations 30000] [--small 3000]

Writes a synthetic baseline-like file (pubmed26nNNNN.xml as NLM lays it
out: a PubmedArticle per citation with its journal, authors and
affiliations, MeSH headings, history, IDs and references, most with a
PubMed-sized abstract, some labelled, some with <i>/<sup> and MathML, a
fifth title-only, a DeleteCitation at the end) of --citations citations and
one of --small, each plain and gzip-compressed, into a temporary folder,
and reads each in a fresh process as link-corpus does (its format told by
its root, then each citation as a document): citations/s, MB/s of unpacked
XML, and the process's peak RSS while reading (ru_maxrss, its high-water
mark reset after the imports) against its RSS before. The same peak for
both sizes is memory that does not grow with the file.
"""
import argparse
import gzip
import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, cpu_description, memory_gib, print_table, progress

PROLOG = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">
<PubmedArticleSet>
"""
WORDS = ("patients with the of and in was were cancer disease treatment study results gene expression cells protein "
         "clinical risk associated increased levels analysis mice therapy breast diabetes type receptor cohort "
         "significantly compared controls mutation inflammation response tumor survival dose outcomes").split()
LABELS = ("BACKGROUND", "METHODS", "RESULTS", "CONCLUSIONS")
MATHML = ('<mml:math xmlns:mml="http://www.w3.org/1998/Math/MathML"><mml:mi>p</mml:mi><mml:mo>&lt;</mml:mo>'
          '<mml:mn>0.05</mml:mn></mml:math>')


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def abstract(rng: random.Random) -> str:
    """About 1,500 characters, as a PubMed abstract: four labelled sections
    or one, with inline markup and, now and then, MathML."""
    text = [sentence(rng, rng.randint(12, 28)) for _ in range(rng.randint(8, 12))]
    text[1] = f"Ca<sup>2+</sup> and <i>BRCA1</i> {text[1]}"
    if rng.random() < 0.05:
        text[2] = f"{text[2][:-1]} ({MATHML})."
    if rng.random() < 0.4:
        quarter = len(text) // 4
        return "".join(f'<AbstractText Label="{label}" NlmCategory="{label}">{" ".join(text[i * quarter:(i + 1) * quarter])}'
                       f"</AbstractText>" for i, label in enumerate(LABELS))
    return f"<AbstractText>{' '.join(text)}</AbstractText>"


def citation(rng: random.Random, pmid: int) -> str:
    authors = "".join(
        f'<Author ValidYN="Y"><LastName>Author{i}</LastName><ForeName>Name</ForeName><Initials>N</Initials>'
        f"<AffiliationInfo><Affiliation>Department of Medicine, University Hospital, City {i}, Country.</Affiliation>"
        f"</AffiliationInfo></Author>" for i in range(rng.randint(3, 8)))
    mesh = "".join(
        f'<MeshHeading><DescriptorName UI="D{rng.randint(1, 99999):06d}" MajorTopicYN="N">Heading {i}</DescriptorName>'
        f'<QualifierName UI="Q000{i:03d}" MajorTopicYN="N">metabolism</QualifierName></MeshHeading>' for i in range(10))
    references = "".join(
        f"<Reference><Citation>Author A, Author B. A referenced article, number {i}. J Biol. 2001;{i}:1-10."
        f'</Citation><ArticleIdList><ArticleId IdType="pubmed">{rng.randint(1, 39_000_000)}</ArticleId>'
        f"</ArticleIdList></Reference>" for i in range(rng.randint(0, 12)))
    body = f"<Abstract>{abstract(rng)}</Abstract>" if rng.random() < 0.8 else ""
    return f"""<PubmedArticle>
  <MedlineCitation Status="MEDLINE" Owner="NLM" IndexingMethod="Automated">
    <PMID Version="1">{pmid}</PMID>
    <DateCompleted><Year>2025</Year><Month>01</Month><Day>02</Day></DateCompleted>
    <Article PubModel="Print-Electronic">
      <Journal><ISSN IssnType="Electronic">1234-5678</ISSN><JournalIssue CitedMedium="Internet"><Volume>12</Volume><Issue>3</Issue><PubDate><Year>2025</Year><Month>Jan</Month></PubDate></JournalIssue><Title>Journal of Clinical Things</Title><ISOAbbreviation>J Clin Things</ISOAbbreviation></Journal>
      <ArticleTitle>{sentence(rng, rng.randint(8, 20))}</ArticleTitle>
      <Pagination><StartPage>1</StartPage><EndPage>10</EndPage><MedlinePgn>1-10</MedlinePgn></Pagination>
      <ELocationID EIdType="doi" ValidYN="Y">10.1000/jct.{pmid}</ELocationID>
      {body}
      <AuthorList CompleteYN="Y">{authors}</AuthorList>
      <Language>eng</Language>
      <PublicationTypeList><PublicationType UI="D016428">Journal Article</PublicationType></PublicationTypeList>
    </Article>
    <MedlineJournalInfo><Country>United States</Country><MedlineTA>J Clin Things</MedlineTA><NlmUniqueID>0000000</NlmUniqueID><ISSNLinking>1234-5678</ISSNLinking></MedlineJournalInfo>
    <CitationSubset>IM</CitationSubset>
    <MeshHeadingList>{mesh}</MeshHeadingList>
  </MedlineCitation>
  <PubmedData>
    <History><PubMedPubDate PubStatus="received"><Year>2024</Year><Month>6</Month><Day>1</Day></PubMedPubDate><PubMedPubDate PubStatus="pubmed"><Year>2025</Year><Month>1</Month><Day>2</Day></PubMedPubDate></History>
    <PublicationStatus>ppublish</PublicationStatus>
    <ArticleIdList><ArticleId IdType="pubmed">{pmid}</ArticleId><ArticleId IdType="doi">10.1000/jct.{pmid}</ArticleId></ArticleIdList>
    <ReferenceList>{references}</ReferenceList>
  </PubmedData>
</PubmedArticle>
"""


def write_baseline(path: Path, citations: int) -> None:
    rng = random.Random(citations)
    with path.open("w", encoding="utf-8") as f:
        f.write(PROLOG)
        for number in range(citations):
            f.write(citation(rng, 30_000_000 + number))
        f.write('<DeleteCitation><PMID Version="1">1</PMID><PMID Version="1">2</PMID></DeleteCitation>\n')
        f.write("</PubmedArticleSet>\n")


def read(path: str) -> None:
    """In the child: read `path` as link-corpus does, and print what it cost."""
    from spacy_biosyn.corpus_linking.text_sources import file_format, read_documents

    # The imports' peak is not the reader's: the high-water mark that ru_maxrss reports starts again here.
    Path("/proc/self/clear_refs").write_text("5")
    before = memory_gib("VmRSS")
    started = time.perf_counter()
    documents = sum(1 for _ in read_documents(Path(path), file_format(Path(path))))
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"documents": documents, "seconds": seconds, "rss_before_gib": before, "peak_gib": peak}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--citations", type=int, default=30_000)
    p.add_argument("--small", type=int, default=3_000)
    p.add_argument("--read", help=argparse.SUPPRESS)  # the child's part
    args = p.parse_args()
    if args.read:
        return read(args.read)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for citations in (args.small, args.citations):
            plain = Path(folder) / f"pubmed26n{citations:04d}.xml"
            write_baseline(plain, citations)
            packed = plain.with_name(plain.name + ".gz")
            with plain.open("rb") as source, gzip.open(packed, "wb", compresslevel=6) as target:
                shutil.copyfileobj(source, target)
            megabytes = plain.stat().st_size / 1e6
            for path in (plain, packed):
                child = subprocess.run([sys.executable, "-m", "benchmarks.medline_read", "--read", str(path)],
                                       cwd=REPO, capture_output=True, text=True, check=True)
                result = json.loads(child.stdout.splitlines()[-1])
                assert result["documents"] == citations
                rows.append((path.name, f"{citations:,}", f"{megabytes:.0f}", f"{path.stat().st_size / 1e6:.0f}",
                             f"{result['seconds']:.1f}", f"{citations / result['seconds']:,.0f}",
                             f"{megabytes / result['seconds']:.1f}", f"{result['rss_before_gib'] * 1024:.0f}",
                             f"{result['peak_gib'] * 1024:.0f}"))
                progress(rows[-1])
    print()
    print_table(("file", "citations", "XML MB", "file MB", "read s", "citations/s", "XML MB/s",
                 "RSS before MiB", "peak RSS MiB"), rows)
    print(f"\nCPU: {cpu_description()}")


if __name__ == "__main__":
    main()
