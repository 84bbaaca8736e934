"""The event loop is never blocked during a run: a heartbeat task measures how much CPU the loop's own thread
spends between two of its wake-ups while every CPU step of the pipeline (embedding, BM25 search, KMeans,
grouping, scoring) is made slow on purpose. A step run on the loop shows as that much loop CPU between two
beats; steps run in worker threads do not. (The loop thread's CPU time is measured rather than its wall-clock
lag, which on a loaded shared machine also counts time the OS gave to other processes.)"""

from __future__ import annotations

import asyncio
import time

import numpy as np

from ruwikibench.nodes import outline as outline_nodes
from ruwikibench.nodes import sections as sections_nodes
from ruwikibench.retrieval.bm25 import BM25Index
from tests.graphs.writer_fixture import HashEmbedder
from tests.runner.sample_run import run_sample

STALL = 0.15  # CPU seconds each slowed step burns; run on the loop it would block the loop that long
LIMIT = 0.1


def burn(seconds: float) -> None:
    """Busy CPU work of the calling thread (what embedding or KMeans is to the interpreter)."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


class Heartbeat:
    """Wakes every ``tick`` seconds; records the loop thread's CPU time and wall lag between wake-ups."""

    def __init__(self, tick: float = 0.01) -> None:
        self.tick = tick
        self.max_busy = 0.0  # loop-thread CPU seconds between two beats
        self.max_lag = 0.0  # wall seconds a beat came late (informative only)
        self.beats = 0

    async def __call__(self) -> None:
        while True:
            start, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(self.tick)
            self.max_busy = max(self.max_busy, time.thread_time() - cpu)
            self.max_lag = max(self.max_lag, time.perf_counter() - start - self.tick)
            self.beats += 1


class SlowEmbedder(HashEmbedder):
    calls = 0

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        SlowEmbedder.calls += 1
        burn(STALL)
        return super().embed(texts, use)


def _slowed(fn, counter: dict[str, int], name: str):
    def slow(*args, **kwargs):
        counter[name] = counter.get(name, 0) + 1
        burn(STALL)
        return fn(*args, **kwargs)

    return slow


async def test_heartbeat_sees_a_blocked_loop() -> None:
    beat = Heartbeat()
    task = asyncio.create_task(beat())
    await asyncio.sleep(0.05)
    burn(STALL)  # what a CPU step inside an async node does
    await asyncio.sleep(0.05)
    task.cancel()
    assert beat.max_busy >= STALL * 0.9


async def test_run_never_blocks_the_loop(tmp_path, monkeypatch) -> None:
    slowed: dict[str, int] = {}
    monkeypatch.setattr(BM25Index, "search", _slowed(BM25Index.search, slowed, "bm25"))
    monkeypatch.setattr(
        outline_nodes, "cluster_snippets", _slowed(outline_nodes.cluster_snippets, slowed, "kmeans")
    )
    monkeypatch.setattr(
        sections_nodes, "similarity_groups", _slowed(sections_nodes.similarity_groups, slowed, "grouping")
    )
    SlowEmbedder.calls = 0
    beat = Heartbeat()
    rundir = await run_sample(tmp_path, monkeypatch, SlowEmbedder(), during=beat)

    assert set(slowed) == {"bm25", "kmeans", "grouping"} and SlowEmbedder.calls >= 5
    assert list(rundir.read("errors.jsonl")) == []
    assert beat.beats > 50
    assert beat.max_busy < LIMIT, f"event loop busy for {beat.max_busy:.3f} s between two beats"
