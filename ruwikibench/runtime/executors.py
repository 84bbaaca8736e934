"""Where CPU work runs, so the event loop only ever waits on I/O.

Three executors, all created on first use and shared by the whole process:

* the **CPU pool** (:func:`run_cpu`): threads sized to the machine (``os.cpu_count()``, at least 2) for short
  CPU steps — BM25 build and search, KMeans and grouping, lemmatisation, similarity matrices. numpy, sklearn
  and bm25s release the GIL in their inner loops, so these overlap with the event loop.
* the **model lane** (:func:`run_on_model_lane`): one thread for the embedding model and for work that embeds
  (scoring, floors). One thread because one model uses every core on its own; queued embedding jobs wait
  here, in their own queue, instead of filling the CPU pool or asyncio's default executor (which httpx's DNS
  lookups and other libraries share).

* the **writer** (:func:`run_io`): one thread for the run directory's durable appends (JSON lines written,
  flushed and fsynced), so the loop never waits on the disk; one thread, so appends keep their order and two
  never meet in one file.

:func:`call_on_model_lane` lets synchronous code (an embedder's ``embed`` called from a CPU-pool thread)
hand model work to the lane and wait for it; on the lane itself it simply calls the function.

Before the first of these threads starts, glibc's malloc is held to :data:`MALLOC_ARENAS` arenas
(:func:`limit_malloc_arenas`): by default each thread that allocates gets an arena of its own (up to 8 per
core), and memory one thread freed stays in its arena, unused by the others — a run's finish (on the model
lane) grew new memory while what the LLM phase freed sat in the other threads' arenas.
"""

from __future__ import annotations

import asyncio
import gc
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import Any, TypeVar

T = TypeVar("T")

_LOCK = threading.Lock()
_CPU: ThreadPoolExecutor | None = None
_LANE: ThreadPoolExecutor | None = None
_IO: ThreadPoolExecutor | None = None
_LANE_THREAD = "ruwikibench-model-lane"


MALLOC_ARENAS = 2
"""glibc malloc arenas of a process that runs these executors (``MALLOC_ARENA_MAX`` in the environment wins):
at 64 articles of bench/scale.py, peak RSS 747 MB instead of 900 (the finish 747 instead of 900, the LLM phase
739 instead of 768), CPU per request unchanged (5.1 ms and 5.3), the same metrics."""
_ARENAS_LIMITED = False
_M_ARENA_MAX = -8  # mallopt's parameter number (malloc.h)


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Hold glibc's malloc to ``arenas`` arenas, once per process, unless ``MALLOC_ARENA_MAX`` is set (glibc
    read it at start-up) or the C library is not glibc. Threads take their arena on their first allocation, so
    this is called before the executors' threads start. True when the limit was set now."""
    global _ARENAS_LIMITED
    if _ARENAS_LIMITED or "MALLOC_ARENA_MAX" in os.environ:
        return False
    _ARENAS_LIMITED = True
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return False
    return bool(mallopt is not None and mallopt(_M_ARENA_MAX, arenas))


def give_back_free_memory() -> bool:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``), after a garbage collection:
    the LLM phase's graphs, states and answers are freed when it ends, but glibc keeps their pages, and the
    run process held ~1.25 GB through the finish at 285 articles while the scoring process computed the floors
    beside it. True when it was done (glibc)."""
    import ctypes
    import ctypes.util

    gc.collect()
    name = ctypes.util.find_library("c")
    try:
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None) if name else None
    except OSError:
        return False
    if trim is None:
        return False
    trim(0)
    return True


def cpu_workers() -> int:
    """Threads of the CPU pool: the machine's cores (at least 2)."""
    return max(2, os.cpu_count() or 2)


def cpu_pool() -> ThreadPoolExecutor:
    global _CPU
    with _LOCK:
        if _CPU is None:
            limit_malloc_arenas()
            _CPU = ThreadPoolExecutor(max_workers=cpu_workers(), thread_name_prefix="ruwikibench-cpu")
        return _CPU


def model_lane() -> ThreadPoolExecutor:
    global _LANE
    with _LOCK:
        if _LANE is None:
            limit_malloc_arenas()
            _LANE = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_LANE_THREAD)
        return _LANE


def writer() -> ThreadPoolExecutor:
    global _IO
    with _LOCK:
        if _IO is None:
            limit_malloc_arenas()
            _IO = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ruwikibench-writer")
        return _IO


async def run_io(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the writer thread, awaited. The write goes on when the awaiting task is
    cancelled (a unit timing out, Ctrl-C): once handed over, a record is written whole or not at all."""
    future = asyncio.get_running_loop().run_in_executor(writer(), partial(fn, *args, **kwargs))
    return await asyncio.shield(future)


def on_model_lane() -> bool:
    return threading.current_thread().name.startswith(_LANE_THREAD)


async def run_cpu(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the CPU pool, awaited without blocking the loop."""
    return await asyncio.get_running_loop().run_in_executor(cpu_pool(), partial(fn, *args, **kwargs))


async def run_on_model_lane(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the model lane (embedding, and work that embeds), awaited."""
    return await asyncio.get_running_loop().run_in_executor(model_lane(), partial(fn, *args, **kwargs))


def call_on_model_lane(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Synchronous: run ``fn`` on the model lane and wait (directly when already on it)."""
    if on_model_lane():
        return fn(*args, **kwargs)
    return model_lane().submit(fn, *args, **kwargs).result()


async def embed_async(embedder: Any, texts: list[str], use: str = "symmetric") -> Any:
    """``embedder.embed(texts, use)`` without blocking the loop.

    A :class:`~ruwikibench.models.embeddings.CachedEmbedder` looks vectors up on the CPU pool and sends only
    missing texts to the model lane; any other embedder runs wholly on the model lane.
    """
    aembed = getattr(embedder, "aembed", None)
    if aembed is not None:
        return await aembed(texts, use)
    return await run_on_model_lane(embedder.embed, texts, use)


def freeze_heap() -> None:
    """Exclude every object alive now (imported modules, compiled graphs, the dataset) from garbage
    collection.

    A full collection walks the whole heap while holding the GIL — with langchain, pydantic and sklearn loaded
    that is 0.2–0.5 s during which the event loop (and every thread) stands still, at random moments of a run.
    Frozen objects are never scanned again, so the collections left are short. Call it once the run is set up.
    """
    gc.freeze()


RUN_GC_THRESHOLDS = (10_000, 10, 100)
"""The cyclic collector's thresholds while a run's units run (:func:`run_gc_thresholds`; CPython's are 700,
10, 10).

Each relevance judgement in flight is a LangGraph task with its config, futures and coroutine frames that
lives for the ~0.5 s of its request, long enough to outlive two young collections at the default thresholds
and reach the oldest generation. At 285 articles of bench/scale.py, 332 full collections walked every object
of the requests in flight, 0.2–0.46 s each with the GIL held: 88 s of stand-still in a 440-s run, 121 s with
the young collections, and the answers waited (0.63 s from send to answer at 0.5 s latency). With these
thresholds: 2–6 full collections, 26–31 s in all, 0.54 s from send to answer (docs/performance.md). What they
keep waiting for collection is garbage in reference cycles only (acyclic objects are freed when their last
reference goes); held through the finish too, they raised its peak memory, so the runner holds them only while
the units run."""


def _raised(current: tuple[int, ...], wanted: tuple[int, ...]) -> tuple[int, ...]:
    """Each threshold at least ``wanted``'s; all kept when the first is 0 (no automatic collection at all)."""
    if current[0] == 0:
        return current
    return tuple(max(now, want) for now, want in zip(current, wanted, strict=True))


@contextmanager
def run_gc_thresholds(thresholds: tuple[int, int, int] = RUN_GC_THRESHOLDS) -> Iterator[None]:
    """The collector's thresholds raised to ``thresholds`` for the block (a threshold set higher already
    stays, and a collector whose automatic collection is off stays off), the caller's thresholds back when it
    ends, however it ends."""
    previous = gc.get_threshold()
    gc.set_threshold(*_raised(previous, thresholds))
    try:
        yield
    finally:
        gc.set_threshold(*previous)


_GC_PAUSED = False


def pause_gc() -> None:
    """Start-up without cyclic garbage collection, until :func:`resume_gc` (the runner calls it once the first
    request is out). Start-up imports some two thousand modules and builds the config, the dataset and the
    graphs: it allocates much and frees almost nothing (some 3,500 unreachable objects of 230,000 at the first
    request), so the collections it triggers — each walking every object not yet collected — are wasted: ~15 %
    of the CPU time to the first request (bench/cold_run.py). Does nothing when the collector is off already
    (the caller's choice, left alone)."""
    global _GC_PAUSED
    with _LOCK:
        if gc.isenabled():
            gc.disable()
            _GC_PAUSED = True


def resume_gc() -> None:
    """End a :func:`pause_gc`: everything alive now is frozen (:func:`freeze_heap`: the start-up objects are
    never walked again, which is where the collections would have moved them anyway), then the collector is on
    again. Without a pause, nothing happens."""
    global _GC_PAUSED
    with _LOCK:
        if _GC_PAUSED:
            _GC_PAUSED = False
            gc.freeze()
            gc.enable()


@contextmanager
def gc_paused_for_startup() -> Iterator[None]:
    """:func:`pause_gc` for the block; the collector is on again when it ends, however it ends (the runner
    resumes it sooner: at its first request). The malloc arenas are limited first
    (:func:`limit_malloc_arenas`)."""
    limit_malloc_arenas()
    pause_gc()
    try:
        yield
    finally:
        resume_gc()
