"""CPU pool and model lane: where work runs, and the embedder's split of lookup and model work."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest

from ruwikibench.config import EmbedderConfig
from ruwikibench.executors import (
    call_on_model_lane,
    cpu_workers,
    embed_async,
    run_cpu,
    run_io,
    run_on_model_lane,
)
from ruwikibench.models.cache import EmbeddingCache
from ruwikibench.models.embeddings import CachedEmbedder


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

    from ruwikibench.executors import gc_paused_for_startup, pause_gc, resume_gc

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
    from ruwikibench.jsonl import append_jsonl, read_jsonl

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
    from ruwikibench.jsonl import append_jsonl, read_jsonl

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
