"""The first unit of a run starts alone: the others start once its first request is out, once it ends, or
after HEAD_START seconds — so their first steps do not delay that request."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from types import SimpleNamespace
from typing import Any

import pytest
from rich.progress import Progress

from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.runner import lifecycle
from ruwikibench.stage.contract import Unit


class Units:
    """A stand-in runner: unit 0 does ``first`` (given the LLM and the event list), every other unit records
    when it starts."""

    def __init__(self, llm: LLM, first: Callable[[LLM, list[str]], Coroutine[Any, Any, None]]) -> None:
        self.llm, self.first = llm, first
        self.stages = {"s": None}
        self.scoring = None  # as the runner's: no scoring process
        self.events: list[str] = []
        self.started = time.perf_counter()

    async def run_unit(self, unit: Unit) -> None:
        if unit.unit_id == "0":
            await self.first(self.llm, self.events)
            self.events.append("0 done")
        else:
            self.events.append(f"{unit.unit_id} starts")


async def run(first: Callable[[LLM, list[str]], Coroutine[Any, Any, None]], n: int = 3) -> Units:
    llm = LLM({"writer": ScriptedChat(lambda m: "ok")})
    runner = Units(llm, first)
    context = SimpleNamespace(llm=llm, config=SimpleNamespace(max_concurrency=8))
    units = [Unit(stage="s", article="a", unit_id=str(i), input={}) for i in range(n)]
    with Progress(disable=True) as progress:
        await asyncio.wait_for(lifecycle._run_units(context, runner, units, progress), 10)  # type: ignore[arg-type]
    return runner


async def test_the_others_start_once_the_first_request_is_out() -> None:
    async def first(llm: LLM, events: list[str]) -> None:
        await asyncio.sleep(0.05)  # a first step before its request: the others do not start meanwhile
        events.append("0 asks")
        await llm.complete("writer", "привет")
        await asyncio.sleep(0.2)  # waiting for the answer: the others run

    runner = await run(first)
    assert runner.events == ["0 asks", "1 starts", "2 starts", "0 done"]
    assert runner.llm.usage.as_dict()["writer"]["calls"] == 1


async def test_a_first_unit_without_requests_holds_no_one_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lifecycle, "HEAD_START", 30.0)

    async def first(
        llm: LLM, events: list[str]
    ) -> None:  # every answer cached, say: it ends without a request
        await asyncio.sleep(0.01)

    started = time.perf_counter()
    assert (await run(first)).events == ["0 done", "1 starts", "2 starts"]
    assert time.perf_counter() - started < 5


async def test_a_slow_first_request_holds_the_others_head_start_seconds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(lifecycle, "HEAD_START", 0.05)

    async def first(
        llm: LLM, events: list[str]
    ) -> None:  # CPU work first (a BM25 index built, say): others start
        await asyncio.sleep(0.5)

    assert (await run(first)).events == ["1 starts", "2 starts", "0 done"]


class Building(ScriptedChat):
    """A backend whose clients are built by ``prepare`` once, or by its first request (as OpenAIBackend's)."""

    def __init__(self, name: str, events: list[str]) -> None:
        super().__init__(lambda m: "ok", name)
        self.events, self.built = events, False

    async def prepare(self) -> None:
        if not self.built:
            self.built = True
            self.events.append(f"{self.name} built")

    async def generate(self, messages: Any, *, max_tokens: int | None, top_logprobs: int) -> Any:
        await self.prepare()
        return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)


async def test_only_the_first_role_s_clients_are_built_before_the_first_request() -> None:
    """One role's clients (and with them the client library) before the first unit; the role of its first
    request on that request; every other role's once it is out, before the other units start."""
    events: list[str] = []
    llm = LLM({role: Building(role, events) for role in ("writer", "query", "outline", "judge")})
    context = SimpleNamespace(llm=llm, config=SimpleNamespace(max_concurrency=8))

    async def first(llm: LLM, events: list[str]) -> None:
        events.append("0 asks")
        await llm.complete("query", "привет")
        await asyncio.sleep(0.2)

    runner = Units(llm, first)
    runner.events = events
    units = [Unit(stage="s", article="a", unit_id=str(i), input={}) for i in range(3)]
    await lifecycle._prepare_first_client(context)  # type: ignore[arg-type]
    assert events == ["writer built"]
    with Progress(disable=True) as progress:
        await asyncio.wait_for(lifecycle._run_units(context, runner, units, progress), 10)  # type: ignore[arg-type]
    assert events == [
        "writer built",
        "0 asks",
        "query built",
        "outline built",
        "judge built",
        "1 starts",
        "2 starts",
        "0 done",
    ]


async def test_no_backend_to_prepare_is_no_error() -> None:
    llm = LLM({"writer": ScriptedChat(lambda m: "ok")})
    await lifecycle._prepare_first_client(SimpleNamespace(llm=llm))  # type: ignore[arg-type]
