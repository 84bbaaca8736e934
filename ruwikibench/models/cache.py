"""On-disk caches of the model layer (SQLite, WAL): LLM responses and embedding vectors.

Both are safe to share between processes (SQLite locking, WAL journal) and between threads of one process
(one connection guarded by a lock). Values are written as soon as they are computed, so an interrupted run
keeps everything it already paid for.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ruwikibench.models.types import Completion, Messages

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np

# what a cached answer says about its request: taken from the cache, no retry, no wait, no service time
CACHED: dict[str, object] = {"cached": True, "retries": 0, "queued_s": 0.0, "service_s": 0.0}


def stable_hash(payload: object) -> str:
    """sha256 of the canonical JSON of ``payload`` (sorted keys, UTF-8 kept)."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_key(
    identity: dict[str, object], messages: Messages, max_tokens: int | None, top_logprobs: int
) -> str:
    """The cache key of one chat request: model identity (every generation parameter), messages, limits."""
    return stable_hash(
        {"model": identity, "messages": messages, "max_tokens": max_tokens, "top_logprobs": top_logprobs}
    )


def _connect(path: Path | None) -> sqlite3.Connection:
    if path is None:
        return sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    path.parent.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(path, timeout=60.0, check_same_thread=False, isolation_level=None)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA synchronous=NORMAL")
    return connection


class ResponseCache:
    """LLM completions by request key. ``path=None`` keeps them in memory (tests, throwaway runs)."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._db = _connect(self.path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, value TEXT, created REAL)"
        )

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return Completion.model_validate_json(row[0]).model_copy(update=CACHED)

    def put(self, key: str, completion: Completion) -> None:
        value = completion.model_dump_json(exclude=set(CACHED))
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)",
                (key, completion.model, value, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class EmbeddingCache:
    """float32 vectors by (embedder namespace, use, sha256 of the text)."""

    _CHUNK = 500

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._db = _connect(self.path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (ns TEXT, use TEXT, h TEXT, vec BLOB, "
            "PRIMARY KEY (ns, use, h)) WITHOUT ROWID"
        )

    @staticmethod
    def text_hash(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, ns: str, use: str, hashes: list[str]) -> dict[str, np.ndarray]:
        import numpy as np

        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(hashes), self._CHUNK):
                chunk = hashes[start : start + self._CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT h, vec FROM vectors WHERE ns = ? AND use = ? AND h IN ({marks})",
                    (ns, use, *chunk),
                ).fetchall()
                for h, blob in rows:
                    found[h] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, ns: str, use: str, items: dict[str, np.ndarray]) -> None:
        import numpy as np

        rows = [(ns, use, h, np.asarray(v, dtype=np.float32).tobytes()) for h, v in items.items()]
        with self._lock:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


class EntityCache:
    """The NER's entities of a text by (model identity, sha256 of the text), as JSON: ``[[type, text, normal], …]``
    (:mod:`ruwikibench.evaluators.entities`). Safe to share between processes and threads, like the others."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._db = _connect(self.path)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS entities (model TEXT, h TEXT, value TEXT, PRIMARY KEY (model, h)) WITHOUT ROWID"
        )

    def get(self, model: str, text_hash: str) -> list[list[str]] | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM entities WHERE model = ? AND h = ?", (model, text_hash)).fetchone()
        return None if row is None else list(json.loads(row[0]))

    def put(self, model: str, text_hash: str, entities: list[list[str]]) -> None:
        value = json.dumps(entities, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO entities VALUES (?, ?, ?)", (model, text_hash, value))

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM entities").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
