"""What a corpus run writes: one row per linked span, in shards that are
written whole or not at all, and a manifest saying what the run is.

A shard is written under a hidden temporary name and renamed into place
once complete, so a shard file that exists is finished: a killed run leaves
at most temporary files, which the next run removes before redoing their
shards. The manifest records the settings that decide the rows, and each
shard's counts and costs; a re-run with other settings is refused rather
than mixed into the same folder.
"""
import json
import math
import os
import uuid
from pathlib import Path
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.tokens import Doc, Span

from ..corpora.documents import Document
from ..errors import CorpusError
from ..linking.links import SpanLinks
from ..linking.rows import ConceptNames, link_row
from ..names import PIPE_NAME
from .writers import SUFFIXES, write_rows

# Named as pyarrow and pandas skip it, so the folder reads as one dataset:
# pd.read_parquet(folder), pyarrow.dataset.dataset(folder).
MANIFEST = "_manifest.json"
# The PMIDs that the input's MEDLINE files delete (DeleteCitation), with the file that says so.
DELETED = "_deleted_pmids.tsv"
_PARTIAL = ".shard-*.tmp-*"
# What a run writes into its folder besides the manifest and the shards: the
# copy of standard input, the deleted PMIDs and the temporary names of files being written.
_OWN_EXTRA = ("_input", DELETED, f".{DELETED}.tmp-*", f".{MANIFEST}.tmp-*", _PARTIAL)
# What file browsers and network file systems leave in any folder.
_SYSTEM_FILES = (".DS_Store", "Thumbs.db", "desktop.ini", ".nfs*")


class GoldSpan(NamedTuple):
    start: int
    end: int
    text: str
    label: str
    id: str


def concept_names(nlp: Language) -> ConceptNames:
    """The canonical names of the concepts the pipeline's linker links to (none without one)."""
    return ConceptNames(nlp.get_pipe(PIPE_NAME).engine if PIPE_NAME in nlp.pipe_names else None)


def document_rows(document: Document, doc: Doc, gold: Optional[Sequence[GoldSpan]], names: ConceptNames) -> List[dict]:
    """A row per entity (linking/rows.py), with its file and document; with
    gold spans, each row holds the gold ID of the span at the same offsets,
    and a gold span the pipeline dropped (drop_nil) is still a row, with no ID."""
    gold_ids = {(g.start, g.end): g.id for g in gold or ()}
    rows = [link_row(document.file, document.id, span.start_char, span.end_char, span.text, span.label_,
                     _span_links(span), gold_ids.pop((span.start_char, span.end_char), None), names)
            for span in doc.ents]
    rows.extend(link_row(document.file, document.id, g.start, g.end, g.text, g.label, None, g.id, names)
                for g in gold or () if (g.start, g.end) in gold_ids)
    return sorted(rows, key=lambda row: (row["start"], row["end"]))


def _span_links(span: Span) -> SpanLinks:
    """What the linker set on a span, as the engine gave it."""
    return SpanLinks(span._.parts, span._.candidates, span._.kb_ents, span._.cui, span._.concept_ids,
                     span._.nil_reason, tuple(span._.ties), span._.nil_best)


def shard_path(folder: Path, index: int, format: str) -> Path:
    return Path(folder) / f"shard-{index:05d}.{SUFFIXES[format]}"


def write_shard(folder: Path, index: int, documents: Sequence[Document], rows: Sequence[List[dict]], format: str) -> Path:
    """Write a shard's rows (`rows[i]`, those of `documents[i]`) under a
    temporary name, then rename it into place."""
    final = shard_path(folder, index, format)
    partial = final.with_name(f".{final.name}.tmp-{uuid.uuid4().hex[:8]}")
    try:
        write_rows(partial, documents, rows, format)
        with partial.open("rb") as f:
            os.fsync(f.fileno())  # the bytes are on disk before the name says the shard is done
        os.replace(partial, final)
    finally:
        partial.unlink(missing_ok=True)
    return final


def finished_shards(folder: Path, format: str) -> Dict[int, Path]:
    return {int(path.stem.split("-")[1]): path for path in sorted(Path(folder).glob(f"shard-*.{SUFFIXES[format]}"))}


def remove_partial_shards(folder: Path) -> int:
    """Delete the temporary files of shards a killed run was writing."""
    partial = list(Path(folder).glob(_PARTIAL))
    for path in partial:
        path.unlink()
    return len(partial)


def read_rows(folder: Path) -> List[dict]:
    """Every row of a run's shards, shard by shard (Parquet or JSONL; the
    project's PubTator and BioC readers read those formats back)."""
    folder = Path(folder)
    format = read_manifest(folder)["settings"]["output_format"]
    if format not in ("parquet", "jsonl"):
        raise CorpusError(f"{folder}: its shards are {format}, read them with spacy_biosyn.corpus_linking.read_documents")
    rows: List[dict] = []
    for path in finished_shards(folder, format).values():
        if format == "parquet":
            import pyarrow.parquet as pq

            rows.extend(pq.read_table(path).to_pylist())
        else:
            # Split at "\n" only: str.splitlines also splits at U+2028 and U+0085 inside an id.
            rows.extend(json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line)
    return rows


def row_differences(left: Iterable[dict], right: Iterable[dict], tolerance: float = 1e-4) -> List[str]:
    """How two runs' rows differ: keys, IDs, texts, candidate IDs exactly,
    scores to `tolerance` (encoder batches differ across engines, and so
    do the last bits of their sums). Empty when they are the same."""
    def keyed(rows: Iterable[dict]) -> Dict[tuple, dict]:
        # A document id may recur in another input file: the n-th row at the
        # same place is paired with the other run's n-th, whatever the files are called.
        seen: Dict[tuple, int] = {}
        keyed_rows = {}
        for row in rows:
            place = (row["doc_id"], row["start"], row["end"])
            seen[place] = seen.get(place, -1) + 1
            keyed_rows[(*place, seen[place])] = row
        return keyed_rows

    left_rows, right_rows = keyed(left), keyed(right)
    differences = [f"{k}: only in the first" for k in sorted(left_rows.keys() - right_rows.keys())]
    differences += [f"{k}: only in the second" for k in sorted(right_rows.keys() - left_rows.keys())]
    for k in sorted(left_rows.keys() & right_rows.keys()):
        a, b = left_rows[k], right_rows[k]
        exact = ("text", "label", "id", "gold_id")
        if any(a[field] != b[field] for field in exact) or [c["id"] for c in a["candidates"]] != [
            c["id"] for c in b["candidates"]
        ]:
            differences.append(f"{k}: {a['id']} vs {b['id']}")
        elif not all(
            math.isclose(x["score"], y["score"], abs_tol=tolerance) for x, y in zip(a["candidates"], b["candidates"])
        ):
            differences.append(f"{k}: scores differ by more than {tolerance}")
    return differences


def check_own_folder(folder: Path) -> None:
    """Refuse an output folder that holds anything a run did not write (a
    user's own manifest.json, notes, another tool's output): a run writes,
    replaces and deletes files there, and must not touch theirs."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise CorpusError(f"{folder} is a file; give a folder for the output (a new one, or a run's)")
    if not folder.is_dir():
        return
    foreign = sorted(
        entry.name for entry in folder.iterdir()
        if entry.name != MANIFEST and not _is_shard(entry.name)
        and not any(entry.match(p) for p in (*_OWN_EXTRA, *_SYSTEM_FILES))
    )
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise CorpusError(
            f"{folder} holds files link-corpus did not write ({shown}); give an empty or new output folder "
            f"(a run's folder holds only {MANIFEST}, shard-NNNNN files, _input/ and {DELETED})"
        )


def _is_shard(name: str) -> bool:
    stem, _, suffix = name.partition(".")
    return suffix in SUFFIXES.values() and stem.startswith("shard-") and stem[6:].isdigit()


def has_manifest(folder: Path) -> bool:
    return (Path(folder) / MANIFEST).exists()


def read_manifest(folder: Path) -> dict:
    path = Path(folder) / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as error:
        raise CorpusError(f"{path}: not a corpus run's manifest ({error})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("settings"), dict):
        raise CorpusError(f"{path}: not a corpus run's manifest (it has no settings); give a new output folder")
    return manifest


def write_manifest(folder: Path, manifest: dict) -> None:
    path = Path(folder) / MANIFEST
    partial = path.with_name(f".{MANIFEST}.tmp-{uuid.uuid4().hex[:8]}")
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


def write_deleted(folder: Path, deleted: Sequence[Tuple[str, str]]) -> None:
    """DELETED: a `pmid<TAB>file` line for each (file, PMID) in `deleted`,
    under a header. The rows stay as linked (a shard is written whole and
    never again): this list is what to drop from them. It depends on the
    input alone, so a resumed run writes it again the same."""
    path = Path(folder) / DELETED
    partial = path.with_name(f".{DELETED}.tmp-{uuid.uuid4().hex[:8]}")
    partial.write_text("pmid\tfile\n" + "".join(f"{pmid}\t{file}\n" for file, pmid in deleted), encoding="utf-8")
    os.replace(partial, path)


def check_settings(folder: Path, settings: dict) -> None:
    """Refuse to resume a run made with other settings, or of inputs whose
    content changed since, into the same folder."""
    if not has_manifest(folder):
        return
    saved = read_manifest(folder)["settings"]
    # Files by path (standard input has none: its digest alone tells it, as a setting).
    files = {i[0]: i for i in saved.get("input", []) if len(i) == 3}
    edited = [str(i[0]) for i in settings["input"] if len(i) == 3 and i[0] in files and files[i[0]] != i]
    if edited:
        raise CorpusError(
            f"{folder} holds a run of inputs whose content has changed since ({', '.join(edited[:5])}): its rows "
            "would not be those of the files as they are; give a new output folder to link them again"
        )
    if saved.get("pipeline") != settings["pipeline"]:
        raise CorpusError(
            f"{folder} holds a run of another pipeline than {settings['pipeline'].rpartition(' ')[0]} is now (its "
            "files differ: rebuilt or retrained since?): its rows would mix two pipelines' links; give a new output "
            "folder, or remove this one to link everything again"
        )
    changed = [f"{key} {saved.get(key)!r} -> {value!r}" for key, value in settings.items() if saved.get(key) != value]
    if changed:
        raise CorpusError(
            f"{folder} holds a run with other settings ({'; '.join(changed)}): "
            "re-run with the same settings to resume it, or give a new output folder"
        )
