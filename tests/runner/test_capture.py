"""The node capture records, per node: wall-clock start/end (parallel nodes overlap), the prompt files it used
(name + sha256 prefix), the LLM answers it got and the seconds its calls queued for a slot and were served."""

from __future__ import annotations

import asyncio
import hashlib
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ruwikibench.conf.config import RunConfig
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.capture import PROMPT_HASH_CHARS, NodeCapture
from ruwikibench.stage.context import StageContext


class State(TypedDict, total=False):
    title: str
    answers: Annotated[list[str], operator.add]


def _asking(name: str):
    async def node(state: State, runtime: Runtime[StageContext]) -> dict[str, Any]:
        prompt = runtime.context.prompts.get(f"{name}.txt").format(title=state["title"])
        await asyncio.sleep(0.2)  # both branches wait at the same time
        answer = await runtime.context.llm.complete("writer", prompt)
        return {"answers": [answer.text]}

    return node


def quiet(state: State) -> dict[str, Any]:
    return {}


def _graph() -> Any:
    graph = StateGraph(State, context_schema=StageContext)
    graph.add_node("left", _asking("left"))
    graph.add_node("right", _asking("right"))
    graph.add_node("quiet", quiet)
    graph.add_edge(START, "left")
    graph.add_edge(START, "right")
    graph.add_edge(["left", "right"], "quiet")
    graph.add_edge("quiet", END)
    return graph.compile()


async def _captured(capture: NodeCapture, context: StageContext, title: str) -> list[dict[str, Any]]:
    records = []
    with capture.active():
        async for namespace, _mode, data in _graph().astream(
            {"title": title}, context=context, stream_mode=["tasks"], subgraphs=True
        ):
            record = capture.on_task(namespace, data)
            if record:
                records.append(record)
    return records


async def test_capture_times_prompts_and_answers(tmp_path: Path) -> None:
    for name in ("left", "right"):
        (tmp_path / f"{name}.txt").write_text(f"{name}: {{title}}", encoding="utf-8")

    class Slow(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            await asyncio.sleep(0.1)
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    chat = Slow(lambda messages: "ответ на " + messages[-1]["content"])
    context = StageContext(
        config=RunConfig(name="t", models={"writer": {"name": "fake"}}),
        llm=LLM({"writer": chat}, max_concurrency=1),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(tmp_path),
    )
    capture = NodeCapture("toy", "Кошка", "article")
    context.llm.listeners.append(capture.on_completion)
    context.prompts.listeners.append(capture.on_prompt)
    records = await _captured(capture, context, "Кошка")
    by_node = {r["node"]: r for r in records}
    assert set(by_node) == {"left", "right", "quiet"}
    left, right, quiet_node = by_node["left"], by_node["right"], by_node["quiet"]
    expected = hashlib.sha256(b"left: {title}").hexdigest()[:PROMPT_HASH_CHARS]
    assert left["prompts"] == [{"name": "left.txt", "sha256": expected}]
    assert left["answers"] == [{"role": "writer", "text": "ответ на left: Кошка", "cached": False}]
    assert (
        right["prompts"][0]["name"] == "right.txt" and right["answers"][0]["text"] == "ответ на right: Кошка"
    )
    assert quiet_node["prompts"] == [] and quiet_node["answers"] == [] and quiet_node["llm_calls"] == 0
    for record in records:
        assert record["started_at"] <= record["ended_at"]
    assert left["ended_at"] - left["started_at"] >= 0.2
    # the two branches ran in parallel: their intervals overlap; the join ran after both
    assert max(left["started_at"], right["started_at"]) < min(left["ended_at"], right["ended_at"])
    assert quiet_node["started_at"] >= max(left["ended_at"], right["ended_at"]) - 0.01
    # one slot: one branch's call waited for the other's to be served (0.1 s), both were served in ~0.1 s
    waits = sorted(r["queued_s"] for r in (left, right))
    assert waits[0] < 0.05 and 0.07 < waits[1] < 0.3
    assert all(0.09 < r["service_s"] < 0.3 for r in (left, right))
    assert quiet_node["queued_s"] == 0 and quiet_node["service_s"] == 0


async def test_units_running_together_keep_only_their_own_calls(tmp_path: Path) -> None:
    """Every unit's capture listens to the one LLM client: each records its own unit's calls and keeps nothing
    of the others' (it kept a usage entry per call of every unit in flight: gigabytes at the paper's size)."""
    for name in ("left", "right"):
        (tmp_path / f"{name}.txt").write_text(f"{name}: {{title}}", encoding="utf-8")
    chat = ScriptedChat(lambda messages: "ответ на " + messages[-1]["content"])
    context = StageContext(
        config=RunConfig(name="t", models={"writer": {"name": "fake"}}),
        llm=LLM({"writer": chat}),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(tmp_path),
    )
    titles = ["Кошка", "Собака", "Лиса"]
    captures = [NodeCapture("toy", title, "article") for title in titles]
    for capture in captures:
        context.llm.listeners.append(capture.on_completion)
        context.prompts.listeners.append(capture.on_prompt)
    runs = await asyncio.gather(*(_captured(c, context, t) for c, t in zip(captures, titles, strict=True)))
    for title, capture, records in zip(titles, captures, runs, strict=True):
        answers = sorted(a["text"] for r in records for a in r["answers"])
        assert answers == [f"ответ на left: {title}", f"ответ на right: {title}"]
        assert sum(r["llm_calls"] for r in records) == 2
        assert all(len(r["prompts"]) == (r["node"] != "quiet") for r in records)
        assert dict(capture.usage) == {} and capture.started == {}
