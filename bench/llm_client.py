"""CPU per chat request of the HTTP client stack, at many requests in flight (the event loop's cost per
request).

Sends ``--requests`` chat requests, ``--concurrency`` at a time, to bench/endpoint.py (``--latency`` seconds
per answer) through one client stack and prints the process's CPU milliseconds per request:

* ``llm``: the project's :class:`~ruwikibench.models.llm.LLM` over that backend, with its response cache on
  disk (what a node's request costs: cache lookup and store, the in-flight limit, usage);
* ``backend``: the project's :class:`~ruwikibench.models.openai_backend.OpenAIBackend` (ChatOpenAI on the
  openai SDK's aiohttp transport);
* ``chatopenai-httpx``: ChatOpenAI on httpx clients of 32 connections each (the backend before it moved to
  aiohttp);
* ``openai-aiohttp``, ``openai-httpx``: the openai SDK alone on either transport;
* ``httpx``, ``aiohttp``: a bare POST and JSON parse.

    python bench/llm_client.py --requests 3000 --concurrency 256 --latency 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.pipeline import start_endpoint

PROMPT = [{"role": "user", "content": "Относится ли этот фрагмент к статье «Python»? " * 20}]
BODY = {"model": "bench", "messages": PROMPT, "max_tokens": 5}
LANE = 32
Send = Callable[[int], Awaitable[object]]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _httpx_clients(n: int) -> list:
    import httpx

    limits = httpx.Limits(max_connections=LANE, max_keepalive_connections=LANE)
    return [httpx.AsyncClient(limits=limits, timeout=60) for _ in range(max(1, n // LANE))]


def sender(kind: str, url: str, concurrency: int) -> Send:
    """One request through the stack ``kind``."""
    if kind == "llm":
        import tempfile

        from ruwikibench.conf.config import ModelConfig
        from ruwikibench.models.cache import ResponseCache
        from ruwikibench.models.llm import LLM
        from ruwikibench.models.openai_backend import OpenAIBackend

        backend = OpenAIBackend(
            ModelConfig(name="bench", endpoints=[url], max_retries=0), connections=concurrency
        )
        cache = ResponseCache(Path(tempfile.mkdtemp(prefix="ruwikibench-llm-client-")) / "llm.sqlite")
        llm = LLM({"judge": backend}, max_concurrency=concurrency, cache=cache)
        # every request its own prompt, as on the benchmark (a repeated one would be answered by the cache)
        return lambda i: llm.complete("judge", f"{i} {PROMPT[0]['content']}", max_tokens=5)
    if kind == "backend":
        from ruwikibench.conf.config import ModelConfig
        from ruwikibench.models.openai_backend import OpenAIBackend

        backend = OpenAIBackend(
            ModelConfig(name="bench", endpoints=[url], max_retries=0), connections=concurrency
        )
        return lambda i: backend.generate(PROMPT, max_tokens=5, top_logprobs=0)
    if kind == "chatopenai-httpx":
        from langchain_openai import ChatOpenAI

        models = [
            ChatOpenAI(
                model="bench",
                base_url=url,
                api_key="x",
                max_retries=0,
                max_tokens=5,
                http_async_client=client,
            )
            for client in _httpx_clients(concurrency)
        ]
        return lambda i: models[i % len(models)].ainvoke(PROMPT)
    if kind.startswith("openai-"):
        import openai

        if kind == "openai-aiohttp":
            sdks = [
                openai.AsyncOpenAI(
                    base_url=url, api_key="x", max_retries=0, http_client=openai.DefaultAioHttpClient()
                )
            ]
        else:
            sdks = [
                openai.AsyncOpenAI(base_url=url, api_key="x", max_retries=0, http_client=client)
                for client in _httpx_clients(concurrency)
            ]
        return lambda i: sdks[i % len(sdks)].chat.completions.create(**BODY)
    if kind == "httpx":
        clients = _httpx_clients(concurrency)

        async def post_httpx(i: int) -> object:
            return (await clients[i % len(clients)].post(url + "/chat/completions", json=BODY)).json()

        return post_httpx
    if kind == "aiohttp":
        import aiohttp

        session: list[aiohttp.ClientSession] = []

        async def post_aiohttp(i: int) -> object:
            if not session:
                session.append(aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)))
            async with session[0].post(url + "/chat/completions", json=BODY) as response:
                return await response.json()

        return post_aiohttp
    raise SystemExit(f"unknown client stack {kind!r}")


async def measure(send: Send, requests: int, concurrency: int) -> tuple[float, float]:
    """CPU ms per request and wall seconds, after one warm-up request."""
    gate = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with gate:
            await send(i)

    await send(-1)
    cpu, started = _cpu(), time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(requests)))
    return 1000 * (_cpu() - cpu) / requests, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset", default=str(ROOT.parent / "shared/data/ruwiki/ruwikibench_articles.json")
    )
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument(
        "--stacks",
        nargs="+",
        default=["llm", "backend", "chatopenai-httpx", "openai-aiohttp", "openai-httpx", "aiohttp", "httpx"],
    )
    args = parser.parse_args()
    endpoint, url = start_endpoint(args.dataset, args.latency)
    print("| client stack | CPU per request | wall |\n|---|---|---|")
    try:
        for kind in args.stacks:
            cpu_ms, wall = asyncio.run(
                measure(sender(kind, url, args.concurrency), args.requests, args.concurrency)
            )
            print(f"| {kind} | {cpu_ms:.2f} ms | {wall:.1f} s |", flush=True)
    finally:
        endpoint.terminate()


if __name__ == "__main__":
    main()
