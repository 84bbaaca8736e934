"""The messages each node sent to the LLM, for the node trace of an article page: read from the run's
``messages/`` (:class:`~ruwikibench.storage.call_log.CallLog`) and attached to the trace's node rows.

Each call shows the prompt templates it was rendered from (name and the first hex digits of their sha256)
beside the rendered messages, then the answer; every text is cut to :data:`MESSAGE_CHARS` characters on the
page (the whole stays in the run directory). A run made before messages were kept says so once per unit.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog, shard_path
from ruwikibench.storage.rundir import RunDir

MESSAGE_CHARS = 20000
NOT_RECORDED = "messages not recorded for this run"

Calls = dict[tuple[str, str], list[dict[str, Any]]]  # (unit, task id) -> the node's calls in order
Note = Callable[
    [str], dict[str, Any]
]  # an error text -> {id, short, full, first} (the page's PageErrors.note)


def article_calls(rundir: RunDir, stage: str, article: str) -> Calls | None:
    """The article's calls of ``stage`` by (unit, task id); None when the run keeps no messages at all."""
    log = CallLog(rundir.file(MESSAGES_DIR))
    if not log.recorded():
        return None
    calls: Calls = defaultdict(list)
    for call in log.calls(stage, article):
        calls[(str(call.get("unit")), str(call.get("task_id")))].append(call)
    return calls


def with_calls(
    units: list[dict[str, Any]], calls: Calls | None, where: str = "", note: Note | None = None
) -> list[dict[str, Any]]:
    """The trace's units with each node row's calls (``sent``) and, per unit, ``messages_note``: why a node
    that called the LLM shows no messages (the run keeps none). ``where``: the messages file, named where a
    text is cut; ``note``: the page's error register (an error shown once, then referred to)."""
    for unit in units:
        unit["messages_note"] = NOT_RECORDED if calls is None else ""
        for row in unit["nodes"]:
            found = [] if calls is None else calls.get((unit["unit"], str(row.get("task_id"))), [])
            row["sent"] = [call_view(call, where, note) for call in found]
    return units


def _plain_note(text: str) -> dict[str, Any]:
    return {"id": "", "short": text, "full": text, "first": True}


def call_view(call: dict[str, Any], where: str = "", note: Note | None = None) -> dict[str, Any]:
    """One call as the page shows it: role, model, cached, templates, messages and answer (cut)."""
    error = call.get("error")
    return {
        "call": call.get("call"),
        "role": call.get("role", ""),
        "model": call.get("model") or "",
        "cached": bool(call.get("cached")),
        "error": (note or _plain_note)(str(error)) if error else None,
        "templates": call.get("templates") or [],
        "messages": [
            {"role": m.get("role", "user"), "content": _cut(m.get("content"), where)}
            for m in call.get("messages") or []
        ],
        "answer": None if call.get("answer") is None else _cut(call["answer"], where),
        "raw_answer": None if call.get("raw_answer") is None else _cut(call["raw_answer"], where),
    }


def _cut(text: str | None, where: str) -> str:
    if text is None:
        return "(text missing from the run's messages file)"
    rest = len(text) - MESSAGE_CHARS
    return (
        text if rest <= 0 else text[:MESSAGE_CHARS] + f"\n… {rest} more characters in {where or 'messages/'}"
    )


def messages_file(rundir: RunDir, stage: str, article: str) -> str:
    """The article's messages file, relative to the run directory (named on the page)."""
    return str(shard_path(rundir.file(MESSAGES_DIR), stage, article).relative_to(rundir.path))


def trace_with_calls(
    units: list[dict[str, Any]], rundir: RunDir, stage: str, article: str, note: Note | None = None
) -> list[dict[str, Any]]:
    """:func:`with_calls` with the run's calls of the article and stage."""
    calls = article_calls(rundir, stage, article)
    return with_calls(units, calls, messages_file(rundir, stage, article), note)
