"""On-disk caches of the model layer (SQLite, WAL): LLM responses and embedding vectors.

A row that does not read back as what was stored (a vector of the wrong size or with non-finite values, an
answer that is not a completion) is a miss: logged, computed or asked again, and replaced. A file that is not
an SQLite database is a :class:`CacheFileError` naming it.

Both are safe to share between processes (SQLite locking, WAL journal) and between threads of one process
(one connection guarded by a lock). Values are written as soon as they are computed (LLM answers by a writer
thread, milliseconds later, and all of them when the cache is closed), so an interrupted run keeps everything
it already paid for.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from ruwikibench.conf.config import RunInputError
from ruwikibench.conf.secrets import redact
from ruwikibench.models.types import Completion, Messages

if TYPE_CHECKING:  # numpy is imported where it is used: a run loads this module before its first request
    import numpy as np

log = logging.getLogger(__name__)


class CacheFileError(RunInputError):
    """A cache file that cannot be used (not an SQLite database, unreadable); the message names it."""


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


def _connect(path: Path | None, schema: str | None = None) -> sqlite3.Connection:
    """A connection to the cache at ``path`` (in memory for None), ``schema`` created; a file that is not a
    usable SQLite database is a :class:`CacheFileError` naming it."""
    if path is None:
        connection = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path, timeout=60.0, check_same_thread=False, isolation_level=None)
    try:
        if path is not None:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
        if schema is not None:
            connection.execute(schema)
    except sqlite3.DatabaseError as exc:
        connection.close()
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            raise
        raise CacheFileError(
            f"{path}: not a usable cache ({exc}); move it away or delete it (it is rebuilt)"
        ) from None
    return connection


class ResponseCache:
    """LLM completions by request key. ``path=None`` keeps them in memory (tests, throwaway runs).

    A file-backed cache writes on a thread of its own (:class:`_BatchWriter`): :meth:`put` hands the answer
    over and returns, the thread commits whatever has arrived in one transaction (one answer per transaction
    on the event loop cost ~30 µs each and held the loop through every WAL append, 4.8 % of the run process's
    samples at 64 articles). An answer is readable by :meth:`get` from the moment it is put; it is on disk a
    few milliseconds later, and :meth:`flush` / :meth:`close` wait for everything put so far."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._db = _connect(
            self.path,
            "CREATE TABLE IF NOT EXISTS responses (key TEXT "
            "PRIMARY KEY, model TEXT, value TEXT, created REAL)",
        )
        self._writer = _BatchWriter(self.path) if self.path is not None else None

    def get(self, key: str) -> Completion | None:
        """The answer stored under ``key``; None when there is none or the row is not a completion (a miss:
        the request is sent again and its answer replaces the row)."""
        pending = self._writer.pending(key) if self._writer is not None else None
        if pending is not None:
            value = pending[2]
        else:
            with self._lock:
                row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
            if row is None:
                return None
            value = row[0]
        try:
            return Completion.model_validate_json(value).model_copy(update=CACHED)
        except (ValidationError, ValueError, TypeError) as exc:
            log.warning(
                "%s: unreadable cached answer %s… read as a miss (asked again): %s", self.path, key[:12], exc
            )
            return None

    def put(self, key: str, completion: Completion) -> None:
        value = redact(completion.model_dump_json(exclude=set(CACHED)))  # the endpoint may carry a secret
        row = (key, completion.model, value, time.time())
        if self._writer is not None:
            self._writer.put(row)
            return
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", row)

    def flush(self) -> None:
        """Return once every answer put so far is committed."""
        if self._writer is not None:
            self._writer.flush()

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        with self._lock:
            self._db.close()


Row = tuple[str, str, str, float]
_OPEN_WRITERS: weakref.WeakSet[_BatchWriter] = weakref.WeakSet()


@atexit.register
def _close_open_writers() -> None:
    """A cache nobody closed still commits what it was given before the interpreter exits."""
    for writer in list(_OPEN_WRITERS):
        writer.close()


class _BatchWriter:
    """A thread with its own connection that commits the rows put since its last commit in one transaction.
    Rows not yet committed stay readable by key (:meth:`pending`). Started at the first put; :meth:`close`
    commits the rest and stops it. When a batch cannot be written (disk full) the thread stops and every later
    :meth:`put` raises, so the run learns that its answers are no longer kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._cond = threading.Condition()
        self._queued: dict[str, Row] = {}
        self._writing: dict[str, Row] = {}
        self._closed = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self.commits = 0  # transactions committed (a batch each)
        _OPEN_WRITERS.add(self)

    def pending(self, key: str) -> Row | None:
        with self._cond:
            return self._queued.get(key) or self._writing.get(key)

    def put(self, row: Row) -> None:
        with self._cond:
            if self._error is not None:
                raise OSError(
                    f"{self.path}: the response cache cannot be written: {self._error}"
                ) from self._error
            if self._closed:
                raise RuntimeError(f"{self.path}: the response cache is closed")
            self._queued[row[0]] = row
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="response-cache-writer", daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def flush(self) -> None:
        with self._cond:
            self._cond.wait_for(
                lambda: self._thread is None or not (self._queued or self._writing) or self._error is not None
            )

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()

    def _run(self) -> None:
        db = _connect(self.path)
        try:
            while self._next_batch():
                try:
                    db.execute("BEGIN")
                    db.executemany(
                        "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?)", self._writing.values()
                    )
                    db.execute("COMMIT")
                except sqlite3.Error as exc:
                    with self._cond:
                        self._error = exc
                        self._writing = {}
                        self._cond.notify_all()
                    return
                with self._cond:
                    self._writing = {}
                    self.commits += 1
                    self._cond.notify_all()
        finally:
            db.close()

    def _next_batch(self) -> bool:
        """Move the queued rows to ``_writing``; False once closed with nothing left."""
        with self._cond:
            self._cond.wait_for(lambda: self._queued or self._closed)
            if not self._queued:
                return False
            self._writing, self._queued = self._queued, {}
            return True


class EmbeddingCache:
    """float32 vectors by (embedder namespace, use, sha256 of the text)."""

    _CHUNK = 500

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._db = _connect(
            self.path,
            "CREATE TABLE IF NOT EXISTS vectors (ns TEXT, use TEXT, h TEXT, vec BLOB, "
            "PRIMARY KEY (ns, use, h)) WITHOUT ROWID",
        )
        self._db.execute("CREATE TABLE IF NOT EXISTS dims (ns TEXT PRIMARY KEY, dim INTEGER)")

    @staticmethod
    def text_hash(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get_many(self, ns: str, use: str, hashes: list[str], dim: int | None = None) -> dict[str, np.ndarray]:
        """The stored vectors of ``hashes``. A row that is not ``dim`` float32 values (``dim`` None: the size
        the namespace's vectors were stored with; any equal size in a cache from before sizes were kept), or
        holds a NaN or an infinity, is left out: a miss, computed again and replaced."""
        found: dict[str, np.ndarray] = {}
        bad = 0
        with self._lock:
            if dim is None:
                row = self._db.execute("SELECT dim FROM dims WHERE ns = ?", (ns,)).fetchone()
                dim = int(row[0]) if row is not None else None
            for start in range(0, len(hashes), self._CHUNK):
                chunk = hashes[start : start + self._CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = self._db.execute(
                    f"SELECT h, vec FROM vectors WHERE ns = ? AND use = ? AND h IN ({marks})",
                    (ns, use, *chunk),
                ).fetchall()
                for h, blob in rows:
                    vector = _vector(blob, dim)
                    if vector is None:
                        bad += 1
                    else:
                        found[h] = vector
        if dim is None and len({v.size for v in found.values()}) > 1:  # sizes disagree: none can be trusted
            bad, found = bad + len(found), {}
        if bad:
            log.warning(
                "%s: %d cached vector(s) of %s unreadable (size, dtype or values); computed again",
                self.path,
                bad,
                ns,
            )
        return found

    def put_many(self, ns: str, use: str, items: dict[str, np.ndarray]) -> None:
        import numpy as np

        vectors = {h: np.asarray(v, dtype=np.float32).ravel() for h, v in items.items()}
        rows = [(ns, use, h, v.tobytes()) for h, v in vectors.items()]
        with self._lock:
            self._db.execute("BEGIN")
            if vectors:
                size = next(iter(vectors.values())).size
                self._db.execute("INSERT OR REPLACE INTO dims VALUES (?, ?)", (ns, size))
            self._db.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _vector(blob: object, dim: int | None) -> np.ndarray | None:
    """A stored vector, or None when the row is not ``dim`` finite float32 values."""
    import numpy as np

    if not isinstance(blob, bytes) or not blob or len(blob) % 4 or (dim is not None and len(blob) != 4 * dim):
        return None
    vector = np.frombuffer(blob, dtype=np.float32)
    return vector if bool(np.isfinite(vector).all()) else None


class EntityCache:
    """The NER's entities of a text by (model identity, sha256 of the text), as JSON:
    ``[[type, text, normal], …]`` (:mod:`ruwikibench.evaluators.entities`). Safe to share between processes
    and threads, like the others."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path).expanduser() if path is not None else None
        self._lock = threading.Lock()
        self._db = _connect(
            self.path,
            "CREATE TABLE IF NOT EXISTS entities (model TEXT, "
            "h TEXT, value TEXT, PRIMARY KEY (model, h)) WITHOUT ROWID",
        )

    def get(self, model: str, text_hash: str) -> list[list[str]] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT value FROM entities WHERE model = ? AND h = ?", (model, text_hash)
            ).fetchone()
        if row is None:
            return None
        try:
            entities = json.loads(row[0])
        except (TypeError, ValueError):
            entities = None
        if not isinstance(entities, list) or not all(isinstance(e, list) for e in entities):
            log.warning("%s: unreadable cached entities of %s… read as a miss", self.path, text_hash[:12])
            return None
        return entities

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
