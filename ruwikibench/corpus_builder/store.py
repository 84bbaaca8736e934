"""A processed dataset directory: ``articles.jsonl``, ``sources.jsonl``, ``snippets.jsonl`` and
``manifest.json``.

One JSON object per line (the pydantic models' JSON). The manifest holds the format version, the dataset id
(content hash), counts, build parameters, the import's per-article errors and each file's sha256.
``load_dataset(save_dataset(ds))`` gives an equal dataset with the same dataset id.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ruwikibench.dataset import Article, Dataset, Snippet, Source, TextMayStayOnDisk, TextOnDisk
from ruwikibench.storage.durable import replace_durably

FORMAT = "ruwikibench-dataset"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
FILES = {"articles": "articles.jsonl", "sources": "sources.jsonl", "snippets": "snippets.jsonl"}
_MODELS: dict[str, type[BaseModel]] = {"articles": Article, "sources": Source, "snippets": Snippet}

M = TypeVar("M", bound=BaseModel)


class DatasetStoreError(Exception):
    """A processed dataset directory that cannot be read; the message names the file."""


def _write_jsonl(path: Path, items: list[Any]) -> str:
    digest = hashlib.sha256()
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for item in items:
            line = item.model_dump_json() + "\n"
            digest.update(line.encode())
            fh.write(line)
    replace_durably(tmp, path)
    return digest.hexdigest()


def save_dataset(
    dataset: Dataset,
    directory: str | Path,
    *,
    errors: list[str] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """Write the dataset into ``directory`` (created if needed); returns the manifest path.

    ``errors`` (articles that failed to import) and ``extra`` (e.g. per-article filter reports) go to the
    manifest.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    groups: dict[str, list[Any]] = {
        "articles": dataset.articles,
        "sources": dataset.sources,
        "snippets": dataset.snippets,
    }
    hashes = {key: _write_jsonl(directory / FILES[key], items) for key, items in groups.items()}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "dataset_id": dataset.dataset_id,
        "counts": {key: len(items) for key, items in groups.items()},
        "params": dataset.params,
        "files": {key: {"path": FILES[key], "sha256": hashes[key]} for key in groups},
        "errors": list(errors or []),
        **(extra or {}),
    }
    path = directory / MANIFEST
    path.write_text(json.dumps(manifest, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return path


def _as_written(manifest: dict[str, Any], digests: dict[str, str]) -> bool:
    """Whether every file has the sha256 the manifest recorded when it was written (and there is an id)."""
    files = manifest.get("files")
    if not isinstance(files, dict) or not isinstance(manifest.get("dataset_id"), str):
        return False
    return all(
        isinstance(files.get(key), dict) and files[key].get("sha256") == digest
        for key, digest in digests.items()
    )


def read_manifest(directory: str | Path) -> dict[str, Any]:
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise DatasetStoreError(
            f"{path}: no manifest — not a processed dataset directory (run `corpus import`)"
        )
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DatasetStoreError(
            f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DatasetStoreError(f"{path}: not a {FORMAT} manifest")
    if manifest.get("format_version") != FORMAT_VERSION:
        raise DatasetStoreError(
            f"{path}: format_version {manifest.get('format_version')!r}, expected {FORMAT_VERSION}"
        )
    return manifest


def _read_jsonl(path: Path, model: type[M], lazy_texts: bool = False) -> tuple[list[M], str]:
    """The file's items and the sha256 of its bytes, read a line at a time: the file is never held whole
    beside its items (at the paper's size the snippets and sources are ~240 MB each, a transient quarter GB at
    start-up). ``lazy_texts`` (sources, snippets): each text is left on disk, at its line
    (:class:`~ruwikibench.dataset.TextOnDisk`).

    Each line's bytes are validated as they are (pydantic decodes them as it parses): decoding to text first,
    which pydantic then encodes back to UTF-8, was 40 % of the time on the 10 MB sample, before a run's first
    request. A line that does not validate so — or is blank as text only — is read as text
    (:func:`_text_items`), for the same items or the same error as reading the file as text gave (its lines
    numbered as text lines: ``\r`` ends one)."""
    if not path.is_file():
        raise DatasetStoreError(f"{path}: missing")
    digest = hashlib.sha256()
    items: list[M] = []
    offset = text_lines = 0
    with open(path, "rb") as handle:
        for raw in handle:
            digest.update(raw)
            start, offset = offset, offset + len(raw)
            number = text_lines + 1
            text_lines += 1 if b"\r" not in raw else len(_text_lines(raw))
            if not raw.strip():
                continue
            try:
                item = model.model_validate_json(raw)
            except ValidationError:
                items += _text_items(path, number, raw, model)  # kept in memory, however they split
                continue
            if lazy_texts and isinstance(item, TextMayStayOnDisk):
                item.leave_text_on_disk(TextOnDisk(str(path), start))
            items.append(item)
    return items, digest.hexdigest()


def _text_lines(raw: bytes) -> list[str]:
    """``raw`` as UTF-8 text lines (``\r``, ``\r\n`` and ``\n`` end a line; bytes that are not UTF-8 raise
    :class:`UnicodeDecodeError`)."""
    return io.StringIO(raw.decode("utf-8"), newline=None).readlines()


def _text_items(path: Path, number: int, raw: bytes, model: type[M]) -> list[M]:
    """The items of ``raw`` read as text lines numbered from ``number``: a line blank as text skipped, a bad
    one an error naming it (a :class:`DatasetStoreError`)."""
    items = []
    for lineno, line in enumerate(_text_lines(raw), number):
        if not line.strip():
            continue
        try:
            items.append(model.model_validate_json(line))
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise DatasetStoreError(f"{path}:{lineno}: {loc or 'line'}: {first['msg']}") from exc
    return items


def load_dataset(
    directory: str | Path, *, verify: bool = True, source_texts: bool = True, snippet_texts: bool = True
) -> Dataset:
    """Read a directory written by :func:`save_dataset`; with ``verify`` the content hash must match the
    manifest. ``source_texts=False`` leaves the sources' texts on disk, each read from its line when asked for
    (:class:`~ruwikibench.dataset.Source`): what a run loads, it never reads them (a file not as written has
    its id recomputed over every item, which loads them); ``snippet_texts=False`` does the same for the
    snippets (the scoring process).

    Files byte for byte as written (their sha256 in the manifest) hold the content the manifest's dataset id
    was computed from: the id is taken from there instead of recomputed over every item (~60 ms on the 10 MB
    sample, before a run's first request). Any other file — edited, or written elsewhere with other line ends
    — is checked by recomputing the id, as before."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    on_disk = {"sources": not source_texts, "snippets": not snippet_texts}
    loaded = {
        key: _read_jsonl(directory / FILES[key], model, lazy_texts=on_disk.get(key, False))
        for key, model in _MODELS.items()
    }
    dataset = Dataset(
        articles=loaded["articles"][0],  # type: ignore[arg-type]
        sources=loaded["sources"][0],  # type: ignore[arg-type]
        snippets=loaded["snippets"][0],  # type: ignore[arg-type]
        params=manifest.get("params", {}),
    )
    if verify and _as_written(manifest, {key: digest for key, (_, digest) in loaded.items()}):
        dataset.__dict__["dataset_id"] = manifest["dataset_id"]  # Dataset.dataset_id's cached value
    elif verify and dataset.dataset_id != manifest.get("dataset_id"):
        raise DatasetStoreError(
            f"{directory / MANIFEST}: dataset_id {manifest.get('dataset_id')!r} does not match the files' "
            f"content ({dataset.dataset_id}); the files were changed after import"
        )
    return dataset
