"""The package's one JSONL writer and reader (run directories, judges, the writer's trace).

Durability rule: every append is ONE ``write`` of whole lines, then ``flush`` and ``fsync`` — per record
(:meth:`JsonlAppender.write`, :func:`append_jsonl`) or per batch (:meth:`JsonlAppender.write_many`). A process
killed at any moment (``kill -9`` included) therefore leaves every earlier record on disk and at most one torn
last line. Reading skips a torn last line; before appending, a torn tail is cut off (a last record that is
complete JSON and only lacks its newline is kept and terminated), so a new record never glues onto a torn one.
A bad line anywhere else is not ours to guess about: :class:`JsonlError` names the file and the line.

Records are keyed for de-duplication: :func:`item_key` (stage, article, item) for scores and generated texts,
:func:`unit_key` (stage, article, unit) for outputs and errors; :func:`latest` keeps the last record per key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Container, Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel

from ruwikibench.conf.secrets import redact
from ruwikibench.storage.durable import replace_durably


class JsonlError(ValueError):
    """A JSONL file that cannot be read; the message names the file and the line."""


def dumps(record: BaseModel | dict[str, Any]) -> str:
    """One record as one JSON line (no newline); pydantic models are dumped in JSON mode."""
    data = record.model_dump(mode="json") if isinstance(record, BaseModel) else record
    return redact(json.dumps(data, ensure_ascii=False, default=_fallback))


def _fallback(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return str(obj)


def repair_tail(path: Path) -> None:
    """Cut a torn last line off ``path`` (keep and terminate it when it is a complete JSON object)."""
    if not path.exists() or not path.stat().st_size:
        return
    with open(path, "rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        data = handle.read()
        start = data.rfind(b"\n") + 1
        if _is_object(data[start:]):
            handle.seek(0, os.SEEK_END)
            handle.write(b"\n")
        else:
            handle.truncate(start)
        handle.flush()
        os.fsync(handle.fileno())


def _is_object(raw: bytes) -> bool:
    try:
        return isinstance(json.loads(raw.decode("utf-8")), dict)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return False


class JsonlAppender:
    """Appends records to one JSONL file under the durability rule above (one write + flush + fsync each)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()/__exit__

    def write(self, record: BaseModel | dict[str, Any]) -> None:
        self.write_many([record])

    def write_many(self, records: Iterable[BaseModel | dict[str, Any]]) -> None:
        text = "".join(dumps(r) + "\n" for r in records)
        if not text:
            return
        self._file.write(text)
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]]) -> None:
    """Append a batch of records durably (one write, one fsync)."""
    with JsonlAppender(path) as appender:
        appender.write_many(records)


class JsonlRewriter:
    """Replaces a file atomically with records written as they come (never all held at once): a temporary
    file, fsynced, renamed over the file and the directory fsynced when the ``with`` block ends without an
    exception; on an exception the file is left as it was."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self._file = open(self.tmp, "w", encoding="utf-8")  # noqa: SIM115 - closed by __exit__

    def write_many(self, records: Iterable[BaseModel | dict[str, Any]]) -> None:
        for record in records:
            self._file.write(dumps(record) + "\n")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is not None:
            self._file.close()
            self.tmp.unlink(missing_ok=True)
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        replace_durably(self.tmp, self.path)


def rewrite_jsonl(path: str | Path, records: Iterable[BaseModel | dict[str, Any]]) -> None:
    """Replace the file atomically (:class:`JsonlRewriter`); ``records`` may be a generator."""
    with JsonlRewriter(path) as out:
        out.write_many(records)


def read_jsonl(path: str | Path, lines: Container[int] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-empty line (only those numbered in ``lines`` when given: the others
    are not parsed); a torn last line is skipped; any other line that is not a JSON object raises
    :class:`JsonlError` naming ``path:line``. A missing file yields nothing. The file is read a line at a
    time: a run's largest files (outputs.jsonl: hundreds of MB at the paper's size) are never held whole."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if (lines is not None and number not in lines) or not raw.strip():
                continue
            torn = not raw.endswith(b"\n")  # only the last line can lack its newline: an interrupted write
            row = _parse(path, number, raw, torn)
            if row is not None:
                yield number, row


def _parse(path: Path, number: int, raw: bytes, torn: bool) -> dict[str, Any] | None:
    """The object of one line; None for a torn last line that does not parse."""
    try:
        row = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        if torn:
            return None
        raise JsonlError(f"{path}:{number}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        if torn:
            return None  # the last line of an interrupted write
        raise JsonlError(f"{path}:{number}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
    if not isinstance(row, dict):
        raise JsonlError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
    return row


def read_records(path: str | Path) -> Iterator[dict[str, Any]]:
    """The objects of :func:`read_jsonl` without line numbers."""
    for _, row in read_jsonl(path):
        yield row


_STRING = rb'"(?:[^"\\]|\\.)*"'
_UNIT_PREFIX = re.compile(
    rb'\{"stage": (' + _STRING + rb'), "article": (' + _STRING + rb'), "unit": (' + _STRING + rb")[,}]"
)


def read_unit_keys(path: str | Path) -> Iterator[tuple[int, tuple[str, str, str]]]:
    """(line number, :func:`unit_key`) of each record of :func:`read_jsonl`, read from the start of its line
    where the record begins with its key (as this package writes outputs and errors:
    ``{"stage": …, "article": …, "unit": …``), so the rest of a large record is never parsed; any other line
    is parsed whole."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            complete = raw.endswith(b"\n")
            found = _UNIT_PREFIX.match(raw) if complete else None
            if found is not None:
                stage, article, unit = (json.loads(part) for part in found.groups())
                yield number, (stage, article, unit)
                continue
            row = _parse(path, number, raw, not complete)
            if row is not None:
                yield number, unit_key(row)


def item_key(record: dict[str, Any]) -> tuple[str, str, str]:
    """(stage, article, item): the key of a score record or a generated text."""
    return (str(record["stage"]), str(record["article"]), str(record["item"]))


def unit_key(record: dict[str, Any]) -> tuple[str, str, str]:
    """(stage, article, unit): the key of a unit's output or error."""
    return (str(record["stage"]), str(record["article"]), str(record["unit"]))


def latest(records: Iterable[Any], key: Callable[[Any], Hashable] = item_key) -> list[Any]:
    """One record per key, the last one written (in the order the keys were first seen)."""
    kept: dict[Hashable, Any] = {}
    for record in records:
        kept[key(record)] = record
    return list(kept.values())
