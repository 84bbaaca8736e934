"""CPU pool and model lane: where work runs, and the embedder's split of lookup and model work."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections import Counter, deque
from pathlib import Path

import numpy as np
import pytest

from ruwikibench.conf.config import EmbedderConfig
from ruwikibench.models.cache import EmbeddingCache
from ruwikibench.models.embeddings import CachedEmbedder
from ruwikibench.runtime import executors
from ruwikibench.runtime.executors import (
    call_on_model_lane,
    cpu_workers,
    embed_async,
    run_cpu,
    run_io,
    run_on_model_lane,
)


class RecordingEmbedder:
    id = "rec"
    dim = 3

    def __init__(self) -> None:
        self.threads: list[str] = []
        self.texts: list[str] = []
        self.config = EmbedderConfig()

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        self.texts += texts
        return np.asarray([[len(t), 1.0, 0.0] for t in texts], dtype=np.float32)


async def test_cpu_pool_and_model_lane_are_separate_threads() -> None:
    loop_thread = threading.current_thread().name
    cpu = await run_cpu(lambda: threading.current_thread().name)
    lane = await run_on_model_lane(lambda: threading.current_thread().name)
    assert cpu.startswith("ruwikibench-cpu") and lane.startswith("ruwikibench-model-lane")
    assert loop_thread not in (cpu, lane)
    assert cpu_workers() >= 2
    # from a CPU-pool thread, model work hops to the lane; on the lane it runs in place
    assert (await run_cpu(call_on_model_lane, lambda: threading.current_thread().name)).startswith(
        "ruwikibench-model-lane"
    )
    assert await run_on_model_lane(call_on_model_lane, lambda: threading.current_thread().name) == lane


async def test_cached_embedder_embeds_on_the_lane_and_only_once(tmp_path) -> None:
    inner = RecordingEmbedder()
    embedder = CachedEmbedder(inner, EmbeddingCache(tmp_path / "e.sqlite"))
    first = await embed_async(embedder, ["a", "bb", "a"], "passage")
    assert inner.texts == ["a", "bb"] and all(t.startswith("ruwikibench-model-lane") for t in inner.threads)
    again = await run_cpu(embedder.embed, ["bb", "a"], "passage")  # sync use from a worker thread: cached
    assert inner.texts == ["a", "bb"]
    np.testing.assert_array_equal(again, first[[1, 0]])
    await embed_async(embedder, ["a"], "query")  # another use is another vector
    assert inner.texts == ["a", "bb", "a"]


async def test_embed_async_runs_plain_embedders_on_the_lane() -> None:
    inner = RecordingEmbedder()
    vectors = await embed_async(inner, ["xyz"], "symmetric")
    assert vectors.shape == (1, 3) and inner.threads[0].startswith("ruwikibench-model-lane")


def test_gc_paused_for_startup_resumes_however_the_block_ends() -> None:
    import gc

    import pytest

    from ruwikibench.runtime.executors import gc_paused_for_startup, pause_gc, resume_gc

    assert gc.isenabled()
    try:
        with gc_paused_for_startup():
            assert not gc.isenabled()
            resume_gc()  # the runner's call at the first request: on again before the block ends
            assert gc.isenabled()
        with pytest.raises(RuntimeError), gc_paused_for_startup():
            assert not gc.isenabled()
            raise RuntimeError("bad config")
        assert gc.isenabled()
        resume_gc()  # without a pause: nothing to do
        assert gc.isenabled()
        gc.disable()  # the caller turned it off: a pause and its end leave it off
        pause_gc()
        resume_gc()
        assert not gc.isenabled()
    finally:
        gc.enable()
        gc.unfreeze()


async def test_writes_keep_their_order_and_leave_the_loop_free(tmp_path) -> None:
    from ruwikibench.storage.jsonl import append_jsonl, read_jsonl

    path = tmp_path / "records.jsonl"
    loop_thread = threading.current_thread()
    threads: list[threading.Thread] = []

    def append(i: int) -> None:
        threads.append(threading.current_thread())
        time.sleep(0.001 * (i % 3))  # later appends finishing first would reorder them
        append_jsonl(path, [{"i": i}])

    await asyncio.gather(*(run_io(append, i) for i in range(30)))
    assert [record["i"] for _, record in read_jsonl(path)] == list(range(30))
    assert {thread.name for thread in threads} == {threads[0].name} and threads[0] is not loop_thread


async def test_a_write_handed_over_is_finished_when_its_task_is_cancelled(tmp_path) -> None:
    from ruwikibench.storage.jsonl import append_jsonl, read_jsonl

    path = tmp_path / "records.jsonl"
    started = threading.Event()

    def slow_append() -> None:
        started.set()
        time.sleep(0.2)
        append_jsonl(path, [{"unit": "u1"}])

    task = asyncio.ensure_future(run_io(slow_append))
    await asyncio.to_thread(started.wait)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await run_io(lambda: None)  # the writer's queue is drained: the cancelled task's record is on disk
    assert [record for _, record in read_jsonl(path)] == [{"unit": "u1"}]


ARENAS_CHILD = """
import ctypes, json, os, sys, tempfile, threading
sys.path.insert(0, ".")
from ruwikibench.runtime import executors
limit = sys.argv[1] == "limit"
limited = executors.limit_malloc_arenas() if limit else False
again = executors.limit_malloc_arenas() if limit else False
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.fopen.restype = ctypes.c_void_p
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
barrier = threading.Barrier(8)

def work():
    barrier.wait()
    for _ in range(200):
        libc.malloc(64 << 10)  # kept: each thread's arena stays in use
    barrier.wait()

threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
path = tempfile.mktemp()
handle = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, handle)
libc.fclose(handle)
heaps = open(path).read().count("<heap nr=")
print(json.dumps({"limited": limited, "again": again, "heaps": heaps}))
"""


def _arenas(mode: str, env: dict[str, str] | None = None) -> dict[str, object]:
    import json
    import subprocess
    import sys
    from pathlib import Path

    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | (env or {})
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_CHILD, mode],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        env=environ,
        timeout=60,
    )
    return json.loads(done.stdout)


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_threads_share_the_limited_malloc_arenas() -> None:
    """Eight threads allocating at once: one arena each without the limit, at most MALLOC_ARENAS with it (set
    once; an environment's MALLOC_ARENA_MAX is left to glibc)."""
    free = _arenas("none")
    assert free["heaps"] > executors.MALLOC_ARENAS  # type: ignore[operator]
    limited = _arenas("limit")
    assert limited["limited"] is True and limited["again"] is False
    assert limited["heaps"] <= executors.MALLOC_ARENAS  # type: ignore[operator]
    assert _arenas("limit", {"MALLOC_ARENA_MAX": "4"})["limited"] is False


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_free_memory_goes_back_to_the_system() -> None:
    """Many mid-sized objects freed in a heap with a live object above them: glibc keeps the pages until
    give_back_free_memory trims them."""
    script = """
import json
from ruwikibench.runtime.executors import give_back_free_memory
def rss():
    return int(open("/proc/self/status").read().split("VmRSS:")[1].split()[0]) / 1024
blocks = [bytes(2048) + bytes([i % 251]) for i in range(150_000)]
keep = bytes(4096) + b"k"  # above the freed blocks: the heap's top cannot shrink
del blocks
before = rss()
done = give_back_free_memory()
print(json.dumps({"before": before, "after": rss(), "done": done}))
"""
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    assert figures["done"] and figures["before"] - figures["after"] > 150, figures


def _collections_while_requests_are_in_flight(
    in_flight: int = 3000, requests: int = 1_200_000
) -> Counter[int]:
    """Collections by generation while ``requests`` objects in reference cycles (as a LangGraph task with its
    futures is) each live while ``in_flight`` later ones are made."""
    import gc

    counts: Counter[int] = Counter()

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            counts[info["generation"]] += 1

    gc.collect()
    # the test process's own heap out of the count (a full collection waits for 25 % more objects)
    gc.freeze()
    gc.callbacks.append(count)
    try:
        window: deque[dict[str, object]] = deque()
        for number in range(requests):
            task: dict[str, object] = {"request": number}
            task["self"] = task  # a cycle: only the collector frees it
            window.append(task)
            if len(window) > in_flight:
                window.popleft()
    finally:
        gc.callbacks.remove(count)
        gc.unfreeze()
    return counts


def test_run_thresholds_spare_the_full_collections_of_requests_in_flight() -> None:
    import gc

    from ruwikibench.runtime.executors import RUN_GC_THRESHOLDS, run_gc_thresholds

    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)  # CPython's own
        assert _collections_while_requests_are_in_flight()[2] >= 5  # the requests in flight reach the oldest
        with run_gc_thresholds():
            assert gc.get_threshold() == RUN_GC_THRESHOLDS
            during_run = _collections_while_requests_are_in_flight()
        assert during_run[2] == 0
        assert during_run[0] > 0  # the garbage is still collected, young
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_run_thresholds_keep_higher_ones_and_come_back_however_the_block_ends() -> None:
    import gc

    import pytest

    from ruwikibench.runtime.executors import run_gc_thresholds

    default = gc.get_threshold()
    try:
        gc.set_threshold(50_000, 5, 20)  # the caller's: a higher first threshold
        with pytest.raises(RuntimeError), run_gc_thresholds((10_000, 10, 100)):
            assert gc.get_threshold() == (50_000, 10, 100)
            raise RuntimeError("a unit's bug")
        assert gc.get_threshold() == (50_000, 5, 20)
        gc.set_threshold(0, 10, 10)  # automatic collection off: left off
        with run_gc_thresholds((10_000, 10, 100)):
            assert gc.get_threshold() == (0, 10, 10)
    finally:
        gc.set_threshold(*default)
