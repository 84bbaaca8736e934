"""Every LLM call's messages as sent and its answer, kept in the run directory: ``messages/<stage>/<article>.
jsonl.gz``, one gzip'ed JSONL file per stage and article.

Texts are stored by content: a message's text, an answer, a raw answer (with its reasoning) is written once
per file as a ``{"sha256", "text"}`` line, and each call line (``{"stage", "article", "unit", "node",
"task_id", "call", "role", "messages": [{"role", "sha256"}], "answer", …}``) refers to it by sha256. A prompt
sent again (a retried unit, a resumed run, the same request answered from the response cache, a system text
shared by calls) therefore costs one call line, not another copy of the text. Every text is redacted
(:func:`ruwikibench.conf.secrets.redact`) before it is hashed and written.

Durability, as for the JSONL files (:mod:`ruwikibench.storage.jsonl`): each batch (a unit attempt's calls) is
one gzip member written in one write, flushed and fsynced; gzip readers read concatenated members as one
stream. A run killed mid-write leaves at most one torn last member: reading skips it, and the first append of
a process cuts it off (a resumed run appends after the last whole member). A text line always comes in the
same member as (or an earlier one than) the first call line that refers to it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import shutil
import threading
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ruwikibench.conf.secrets import redact
from ruwikibench.storage.durable import write_atomic

MESSAGES_DIR = "messages"
COMPRESSION = 6
"""gzip level of the members: on a ranking unit's 167 calls (867 kB of JSONL) 34 ms of CPU and 203 kB; level 9
took 82 ms for 197 kB, level 1 6 ms for 273 kB."""
KNOWN_FILES = 64
"""Files whose stored texts a writer keeps in memory (the units running at a time are those of a few articles:
they start article by article)."""
_UNSAFE = re.compile(r"[^\w.-]+")
_NAME_CHARS = 60


def shard_path(root: Path, stage: str, article: str) -> Path:
    """``root/<stage>/<article>-<hash>.jsonl.gz``: the article's name made file-safe and cut to 60 characters,
    with the first 10 hex digits of its sha256 so two names made alike stay apart."""
    digest = hashlib.sha256(article.encode("utf-8")).hexdigest()[:10]
    name = _UNSAFE.sub("_", article).strip("._")[:_NAME_CHARS] or "article"
    return root / (_UNSAFE.sub("_", stage) or "stage") / f"{name}-{digest}.jsonl.gz"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def whole_members(raw: bytes) -> Iterator[tuple[int, bytes]]:
    """(end offset, decompressed bytes) of each complete gzip member of ``raw``, in order; stops at the first
    member that is torn or not gzip."""
    position = 0
    while position < len(raw):
        inflater = zlib.decompressobj(wbits=31)
        try:
            data = inflater.decompress(raw[position:]) + inflater.flush()
        except zlib.error:
            return
        if not inflater.eof:
            return
        position = len(raw) - len(inflater.unused_data)
        yield position, data


def _lines(data: bytes) -> Iterator[dict[str, Any]]:
    for raw in data.splitlines():
        try:
            row = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(row, dict):
            yield row


def read_shard(path: Path) -> Iterator[dict[str, Any]]:
    """The lines of one file's whole members (a missing file yields nothing)."""
    if not path.exists():
        return
    for _, data in whole_members(path.read_bytes()):
        yield from _lines(data)


class CallLog:
    """The ``messages/`` folder of one run directory: appends a unit's calls (:meth:`append`), reads an
    article's calls with their texts (:meth:`calls`)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        # texts already in the files this process wrote to last (at most KNOWN_FILES; an older file's are
        # read from it again when it is written to again)
        self._known: dict[Path, set[str]] = {}
        self._lock = threading.Lock()

    def recorded(self) -> bool:
        """Whether this run keeps messages at all (runs made before they were kept have no folder)."""
        return self.root.is_dir()

    def append(self, stage: str, article: str, calls: list[dict[str, Any]]) -> None:
        """Append ``calls`` (each with ``messages`` [{role, content}], ``answer`` and ``raw_answer`` as text
        or None, and any other JSON fields) as one member: their new texts first, then one line per call."""
        if not calls:
            return
        path = shard_path(self.root, stage, article)
        with self._lock:
            known = self._known_texts(path)
            new: dict[str, str] = {}
            lines = [_dumps(self._stored(call, known, new)) for call in calls]
            texts = [_dumps({"sha256": sha, "text": text}) for sha, text in new.items()]
            member = gzip.compress(("\n".join(texts + lines) + "\n").encode("utf-8"), COMPRESSION, mtime=0)
            with open(path, "ab") as handle:
                handle.write(member)
                handle.flush()
                os.fsync(handle.fileno())
            known.update(new)

    def _known_texts(self, path: Path) -> set[str]:
        """The texts already stored in ``path``; on the first look in this process a torn last member (a
        killed run) is cut off first."""
        if path in self._known:
            self._known[path] = self._known.pop(path)  # the most recent last
            return self._known[path]
        while len(self._known) >= KNOWN_FILES:
            self._known.pop(next(iter(self._known)))
        known: set[str] = set()
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            raw = path.read_bytes()
            end = 0
            for end, data in whole_members(raw):
                known.update(str(row["sha256"]) for row in _lines(data) if "text" in row and "sha256" in row)
            if end < len(raw):
                with open(path, "rb+") as handle:
                    handle.truncate(end)
                    handle.flush()
                    os.fsync(handle.fileno())
        self._known[path] = known
        return known

    @staticmethod
    def _stored(call: dict[str, Any], known: set[str], new: dict[str, str]) -> dict[str, Any]:
        """The call line: its texts replaced by their sha256; the texts not yet in the file go to ``new``."""

        def ref(text: str | None) -> str | None:
            if text is None:
                return None
            text = redact(text)
            sha = text_hash(text)
            if sha not in known:
                new.setdefault(sha, text)
            return sha

        messages = [
            {"role": m.get("role", "user"), "sha256": ref(m.get("content", ""))} for m in call["messages"]
        ]
        return call | {
            "messages": messages,
            "answer": ref(call.get("answer")),
            "raw_answer": ref(call.get("raw_answer")),
        }

    def calls(self, stage: str, article: str) -> list[dict[str, Any]]:
        """The article's calls of ``stage`` in the order written, texts filled in (``messages`` [{role,
        content}], ``answer``, ``raw_answer``); a text missing from the file reads as None."""
        texts: dict[str, str] = {}
        calls: list[dict[str, Any]] = []
        for row in read_shard(shard_path(self.root, stage, article)):
            if "text" in row and "sha256" in row:
                texts[str(row["sha256"])] = str(row["text"])
            elif "messages" in row:
                calls.append(_resolved(row, texts))
        return calls


def merge_logs(sources: Sequence[Path], target: Path) -> None:
    """Replace the ``target`` folder by the join of the ``sources`` folders (the shards of one run): each
    file the whole members of that file in every source, in the order of the sources."""
    joined: dict[Path, list[bytes]] = {}
    for source in sources:
        for path in sorted(source.rglob("*.jsonl.gz")) if source.is_dir() else []:
            raw = path.read_bytes()
            end = max((end for end, _ in whole_members(raw)), default=0)
            joined.setdefault(path.relative_to(source), []).append(raw[:end])
    shutil.rmtree(target, ignore_errors=True)
    for relative, parts in joined.items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target / relative, b"".join(parts))


def _resolved(row: dict[str, Any], texts: dict[str, str]) -> dict[str, Any]:
    return row | {
        "messages": [
            {"role": m.get("role", "user"), "content": texts.get(str(m.get("sha256")))}
            for m in row.get("messages") or []
        ],
        "answer": texts.get(str(row.get("answer"))) if row.get("answer") else None,
        "raw_answer": texts.get(str(row.get("raw_answer"))) if row.get("raw_answer") else None,
    }


def _dumps(record: dict[str, Any]) -> str:
    return redact(json.dumps(record, ensure_ascii=False, default=str))
