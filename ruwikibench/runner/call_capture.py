"""Capture every LLM call of a unit with its messages as sent: one record per call, attributed to the node
that made it (its LangGraph task id and name) and to the prompt templates it was rendered from.

The templates of a call are the prompt files served in the calling task since its previous call (the calling
coroutine's context: concurrent calls of one node each see their own), else those of its previous call (a
node that loads a template once and sends it many times). The records are written with the unit's node
records (:meth:`~ruwikibench.runner.unit_runner.Runner.run_unit`) into ``messages/`` of the run directory
(:class:`~ruwikibench.storage.call_log.CallLog`); cached answers are recorded like the others.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ruwikibench.models.llm import SentCall
from ruwikibench.prompts import Prompt
from ruwikibench.runner.capture import PROMPT_HASH_CHARS, NodeCapture, active_capture
from ruwikibench.stage.context import StageContext

Templates = tuple[tuple[str, str], ...]  # (prompt file name, first characters of its sha256)

# (served since the task's last call, used by its last call)
_TEMPLATES: ContextVar[tuple[Templates, Templates]] = ContextVar(
    "ruwikibench_call_templates", default=((), ())
)


def _current_node() -> tuple[str | None, str | None]:
    """(task id, node name) of the LangGraph task running in this context; (None, None) outside a graph."""
    try:
        from langgraph.config import get_config

        metadata = get_config()["metadata"]
    except Exception:  # noqa: BLE001 - called outside a graph run
        return None, None
    last = str(metadata.get("langgraph_checkpoint_ns", "")).split("|")[-1]
    task_id = last.split(":", 1)[1] if ":" in last else None
    node = metadata.get("langgraph_node")
    return task_id, str(node) if node is not None else None


@dataclass
class CallCapture:
    """Collects the calls of one unit's graph (the calls made while ``nodes`` is the active capture)."""

    nodes: NodeCapture
    calls: list[dict[str, Any]] = field(default_factory=list)
    _per_task: dict[str, int] = field(default_factory=dict)

    def on_prompt(self, prompt: Prompt) -> None:
        if active_capture() is not self.nodes:
            return
        pending, last = _TEMPLATES.get()
        entry = (prompt.name, prompt.sha256[:PROMPT_HASH_CHARS])
        if entry not in pending:
            _TEMPLATES.set(((*pending, entry), last))

    def on_call(self, call: SentCall) -> None:
        if active_capture() is not self.nodes:
            return
        pending, last = _TEMPLATES.get()
        used = pending or last
        _TEMPLATES.set(((), used))
        task_id, node = _current_node()
        number = self._per_task.get(task_id or "", 0) + 1
        self._per_task[task_id or ""] = number
        completion = call.completion
        record: dict[str, Any] = {
            "stage": self.nodes.stage,
            "article": self.nodes.article,
            "unit": self.nodes.unit,
            "node": node,
            "task_id": task_id,
            "call": number,
            "role": call.role,
            "templates": [{"name": name, "sha256": sha} for name, sha in used],
            "messages": [dict(m) for m in call.messages],
            "answer": completion.text if completion is not None else None,
            "raw_answer": None,
            "error": call.error,
        }
        if completion is not None:
            if completion.raw_text and completion.raw_text != completion.text:
                record["raw_answer"] = completion.raw_text
            record |= {
                "model": completion.model,
                "cached": completion.cached,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
            }
        self.calls.append(record)


@contextmanager
def capturing_calls(context: StageContext, nodes: NodeCapture) -> Iterator[CallCapture]:
    """Listen to the context's LLM client and prompt library for the block: the unit's calls gather in the
    :class:`CallCapture` yielded (kept when the block fails: a failed attempt's calls are written too)."""
    calls = CallCapture(nodes)
    context.llm.sent_listeners.append(calls.on_call)
    context.prompts.listeners.append(calls.on_prompt)
    try:
        yield calls
    finally:
        context.llm.sent_listeners.remove(calls.on_call)
        context.prompts.listeners.remove(calls.on_prompt)
