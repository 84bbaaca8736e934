"""The response cache's writer thread: answers readable at once, committed in batches, none lost on close."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from ruwikibench.models.cache import ResponseCache
from ruwikibench.models.types import Completion


def _answer(i: int) -> Completion:
    return Completion(
        text=f"ответ {i}",
        raw_text=f"ответ {i} ",
        prompt_tokens=10 + i,
        completion_tokens=2,
        model="m",
        retries=1,
        queued_s=0.5,
        service_s=0.25,
    )


def _stored(path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, value FROM responses").fetchall())


def test_an_answer_is_readable_at_once_and_on_disk_after_close(tmp_path):
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    cache.put("k1", _answer(1))
    hit = cache.get("k1")  # committed or not, it is there
    assert (
        hit is not None and hit.text == "ответ 1" and hit.cached and hit.retries == 0 and hit.service_s == 0
    )
    cache.close()
    reopened = ResponseCache(path)
    assert len(reopened) == 1 and reopened.get("k1") == hit
    assert reopened.get("k2") is None
    reopened.close()


def test_answers_put_while_the_file_is_locked_wait_in_memory_and_are_committed_together(tmp_path):
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock: the writer thread must wait
    for i in range(500):
        cache.put(f"k{i}", _answer(i))
    assert cache.get("k499").text == "ответ 499"  # not on disk yet, readable all the same
    assert "k499" not in _stored(path)
    blocker.execute("COMMIT")
    cache.flush()
    assert len(_stored(path)) == 500
    assert cache._writer.commits <= 2  # the first answer's transaction, then the 499 that waited: one more
    cache.close()


def test_close_commits_everything_put_before_it(tmp_path):
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    for i in range(200):
        cache.put(f"k{i}", _answer(i))
    cache.close()
    stored = _stored(path)
    assert len(stored) == 200
    assert Completion.model_validate_json(stored["k7"]).text == "ответ 7"


def test_puts_from_many_threads_all_arrive(tmp_path):
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)

    def put_some(start: int) -> None:
        for i in range(start, start + 100):
            cache.put(f"k{i}", _answer(i))

    threads = [threading.Thread(target=put_some, args=(100 * t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(cache) == 400
    cache.close()


def test_a_cache_that_cannot_be_written_says_so_at_the_next_put(tmp_path):
    path = tmp_path / "llm.sqlite"
    cache = ResponseCache(path)
    cache.put("k1", _answer(1))
    cache.flush()
    with sqlite3.connect(path) as db:
        db.execute("DROP TABLE responses")
    cache.put("k2", _answer(2))
    cache.flush()  # returns: the writer failed and stopped
    with pytest.raises(OSError, match="llm.sqlite: the response cache cannot be written"):
        cache.put("k3", _answer(3))


def test_an_in_memory_cache_writes_at_once(tmp_path):
    cache = ResponseCache(None)
    cache.put("k", _answer(0))
    assert cache._writer is None and len(cache) == 1 and cache.get("k").text == "ответ 0"
    cache.close()
