"""The run's warm-up (lazy imports, heap freeze) starts once the first request is out, not before it; so does
the garbage collector paused for the start-up."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.runner import lifecycle


async def test_first_request_sent_is_set_by_the_first_send() -> None:
    llm = LLM({"writer": ScriptedChat(lambda m: "ok")})
    waiting = asyncio.ensure_future(llm.first_request_sent())
    await asyncio.sleep(0.01)
    assert not waiting.done()
    await llm.complete("writer", "привет")
    await asyncio.wait_for(waiting, 1)
    await asyncio.wait_for(llm.first_request_sent(), 1)  # already sent: returns at once


def _runner(stages: list[str]) -> SimpleNamespace:
    return SimpleNamespace(stages=dict.fromkeys(stages), scoring=None)


async def test_warm_up_waits_for_the_first_request(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(lifecycle, "resume_gc", lambda: events.append("gc on"))
    monkeypatch.setattr(lifecycle, "warm_up", lambda stages, config, scoring: events.append(f"warm {stages}"))
    monkeypatch.setattr(lifecycle, "freeze_heap", lambda: events.append("freeze"))
    monkeypatch.setattr(lifecycle, "FIRST_REQUEST_WAIT", 30.0)
    llm = LLM({"writer": ScriptedChat(lambda m: "ok")})
    context = SimpleNamespace(llm=llm, config=None)
    warming = asyncio.create_task(lifecycle._warm_up_after_first_request(context, _runner(["outline"])))  # type: ignore[arg-type]
    await asyncio.sleep(0.05)
    assert events == []
    await llm.complete("writer", "привет")
    await asyncio.wait_for(warming, 5)
    assert events == [
        "gc on",
        "warm ['outline']",
        "freeze",
    ]  # the start-up's paused collector: on at the request


async def test_warm_up_runs_anyway_when_nothing_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr(lifecycle, "warm_up", lambda stages, config, scoring: events.append("warm"))
    monkeypatch.setattr(lifecycle, "freeze_heap", lambda: events.append("freeze"))
    monkeypatch.setattr(lifecycle, "FIRST_REQUEST_WAIT", 0.05)
    context = SimpleNamespace(llm=LLM({"writer": ScriptedChat(lambda m: "ok")}), config=None)
    await asyncio.wait_for(lifecycle._warm_up_after_first_request(context, _runner([])), 5)  # type: ignore[arg-type]
    assert events == ["warm", "freeze"]
