"""A whole benchmark run (three stages) of the writer fixture's corpus against the fake OpenAI-compatible
server on 127.0.0.1, with deterministic answers and embeddings: used by the event-loop and metrics tests."""

from __future__ import annotations

import asyncio
import multiprocessing
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ruwikibench.conf.config import RunConfig
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.runner.setup import build_context
from ruwikibench.storage.rundir import RunDir
from tests.cli.small_runs import BenchModel
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import HashEmbedder, make_dataset


def _serve(conn: Any) -> None:
    with fake_openai_server(BenchModel()) as url:
        conn.send(url)
        threading.Event().wait()


@contextmanager
def fake_server_process() -> Iterator[str]:
    """The fake endpoint in a child process, as a real endpoint would be: its request handling does not
    compete with the run for this process's GIL (which would show as event-loop lag that is not the run's
    doing)."""
    context = multiprocessing.get_context("fork")
    parent, child = context.Pipe()
    process = context.Process(target=_serve, args=(child,), daemon=True)
    process.start()
    try:
        if not parent.poll(30):
            raise RuntimeError("the fake endpoint did not start")
        yield parent.recv()
    finally:
        process.terminate()
        process.join(10)


def sample_config(url: str, cache: Path, **extra: Any) -> RunConfig:
    endpoint = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 20}
    return RunConfig.model_validate(
        {
            "name": "sample",
            "models": {"writer": endpoint},
            "cache_dir": str(cache),
            "ranking": {"query_mode": "generated"},
            "max_concurrency": 4,
            **extra,
        }
    )


async def run_sample(
    tmp_path: Path,
    monkeypatch: Any,
    embedder: Any = None,
    during: Callable[[], Awaitable[None]] | None = None,
) -> RunDir:
    """Run all stages on the fixture corpus; ``embedder`` replaces the run's embedder (default: HashEmbedder);
    ``during`` is a coroutine run as a task for exactly as long as the run itself (cancelled at its end)."""
    monkeypatch.setattr(
        "ruwikibench.runner.setup.make_embedder", lambda config, *_: embedder or HashEmbedder()
    )
    dataset = make_dataset()
    with fake_server_process() as url:
        context = build_context(sample_config(url, tmp_path / "cache"), dataset)
        try:
            probe = asyncio.create_task(during()) if during else None
            try:
                return await execute(context, "fixture", RunOptions(out=tmp_path / "runs", progress=False))
            finally:
                if probe is not None:
                    probe.cancel()
        finally:
            await context.llm.aclose()
