"""Capture every node's output while a stage graph runs (LangGraph ``tasks`` stream, subgraphs included).

LLM usage, answers and the prompt files a node used are attributed to the node through the LangGraph task id
found in the runnable config of the calling node (``langgraph_checkpoint_ns``). Each record carries the
wall-clock start and end of the node (``started_at``/``ended_at``, Unix seconds), so a report can draw what
ran in parallel, and the seconds its own LLM calls waited for a concurrency slot (``queued_s``) and were
served after it (``service_s``), summed over the calls (records written before these fields lack them).

Records of earlier versions also carry an ``input_digest`` (a hash of the node's whole input state) that
nothing read; hashing every node's input was ~8 % of a run's event-loop CPU at 64 articles (bench/scale.py).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ruwikibench.models.types import Completion
from ruwikibench.prompts import Prompt


def _current_task_id() -> str | None:
    try:
        from langgraph.config import get_config

        namespace = get_config()["metadata"].get("langgraph_checkpoint_ns", "")
    except Exception:  # noqa: BLE001 - called outside a graph run
        return None
    last = namespace.split("|")[-1]
    return last.split(":", 1)[1] if ":" in last else None


PROMPT_HASH_CHARS = 12

_ACTIVE: ContextVar[NodeCapture | None] = ContextVar("ruwikibench_node_capture", default=None)


def active_capture() -> NodeCapture | None:
    """The capture of the unit whose graph runs in this context, if any."""
    return _ACTIVE.get()


def active_stage() -> str | None:
    """The stage of the unit whose graph runs in this context (its capture is active), if any."""
    capture = _ACTIVE.get()
    return capture.stage if capture is not None else None


@dataclass
class TaskUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    queued_s: float = 0.0
    service_s: float = 0.0
    prompts: dict[str, str] = field(default_factory=dict)
    answers: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class NodeCapture:
    """Collects task start/finish events and per-task LLM usage; yields one record per finished node."""

    stage: str
    article: str
    unit: str
    started: dict[str, tuple[float, float]] = field(default_factory=dict)
    usage: dict[str, TaskUsage] = field(default_factory=lambda: defaultdict(TaskUsage))

    @contextmanager
    def active(self) -> Iterator[None]:
        """Run the unit's graph inside: its calls (the graph's tasks inherit the context) are this capture's,
        and the captures of the other units running at the same time ignore them. Without it every capture
        kept a usage entry for every call of every unit in flight: 5 GB at 64 articles (bench/scale.py)."""
        token = _ACTIVE.set(self)
        try:
            yield
        finally:
            _ACTIVE.reset(token)

    def on_completion(self, role: str, completion: Completion) -> None:
        if _ACTIVE.get() is not self:
            return
        task_id = _current_task_id()
        if task_id is None:
            return
        usage = self.usage[task_id]
        usage.calls += 1
        usage.prompt_tokens += completion.prompt_tokens
        usage.completion_tokens += completion.completion_tokens
        usage.cache_hits += int(completion.cached)
        usage.queued_s += completion.queued_s
        usage.service_s += completion.service_s
        usage.answers.append({"role": role, "text": completion.text, "cached": completion.cached})

    def on_prompt(self, prompt: Prompt) -> None:
        """A prompt file served to the running node (name -> first characters of its sha256)."""
        if _ACTIVE.get() is not self:
            return
        task_id = _current_task_id()
        if task_id is not None:
            self.usage[task_id].prompts[prompt.name] = prompt.sha256[:PROMPT_HASH_CHARS]

    def on_task(self, namespace: tuple[str, ...], event: dict[str, Any]) -> dict[str, Any] | None:
        task_id = event["id"]
        if "input" in event:
            self.started[task_id] = (time.time(), time.perf_counter())
            return None
        began_at, began = self.started.pop(task_id, (time.time(), time.perf_counter()))
        usage = self.usage.pop(task_id, TaskUsage())
        return {
            "stage": self.stage,
            "article": self.article,
            "unit": self.unit,
            "node": event["name"],
            "namespace": "|".join(namespace),
            "task_id": task_id,
            "output": event.get("result"),
            "error": event.get("error"),
            "duration_s": round(time.perf_counter() - began, 4),
            "started_at": round(began_at, 4),
            "ended_at": round(time.time(), 4),
            "llm_calls": usage.calls,
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cache_hits": usage.cache_hits,
            "queued_s": round(usage.queued_s, 4),
            "service_s": round(usage.service_s, 4),
            "prompts": [{"name": name, "sha256": sha} for name, sha in usage.prompts.items()],
            "answers": usage.answers,
        }
