"""Run the writer graph for one title: checkpointed (SQLite), traced, resumable after the outline review.

An output directory holds ``session.json`` (thread id, title, status), ``checkpoints.sqlite`` (LangGraph
checkpoints of the writer and its stage subgraphs), ``trace.jsonl`` (every finished node with its output, LLM
calls and tokens, appended as it happens), ``outline.md`` (written when the run stops for review; edit it and
resume) and finally ``article.md``, ``article.html`` and ``article.json``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel, Field

from ruwikibench.dataset import safe_name
from ruwikibench.runner.call_capture import capturing_calls
from ruwikibench.runner.capture import NodeCapture
from ruwikibench.runner.overrides import check_overrides, spec_records
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog
from ruwikibench.storage.durable import write_atomic
from ruwikibench.storage.jsonl import append_jsonl, read_records
from ruwikibench.storage.rundir import run_lock
from ruwikibench.writer.export import write_exports
from ruwikibench.writer.models import OutlineItem, WrittenArticle

SESSION = "session.json"
CHECKPOINTS = "checkpoints.sqlite"
TRACE = "trace.jsonl"
OUTLINE = "outline.md"


class WriteError(RuntimeError):
    pass


class Session(BaseModel):
    title: str
    thread_id: str
    status: Literal["running", "awaiting_outline", "done", "failed"] = "running"
    wall_time_s: float = 0.0
    llm_calls: int = Field(default=0, description="LLM requests made by the nodes, cache hits included")
    cache_hits: int = Field(default=0, description="requests answered by the response cache (not sent)")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None


class WriteResult(BaseModel):
    status: Literal["awaiting_outline", "done"]
    out_dir: Path
    article: WrittenArticle | None = None
    outline: list[OutlineItem] = Field(default_factory=list, description="the outline awaiting review")
    paths: dict[str, Path] = Field(default_factory=dict)
    session: Session


def _json_default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(obj)


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, ensure_ascii=False, default=_json_default))


def serde_allowlist() -> list[type]:
    """Every pydantic model of this package (the types the checkpointer may rebuild from the database)."""
    import importlib
    import pkgutil

    from pydantic import BaseModel as Base

    import ruwikibench

    for module in pkgutil.walk_packages(ruwikibench.__path__, "ruwikibench."):
        if module.name.startswith(
            (
                "ruwikibench.nodes",
                "ruwikibench.writer",
                "ruwikibench.dataset",
                "ruwikibench.graphs",
                "ruwikibench.models.types",
            )
        ):
            importlib.import_module(module.name)
    found: list[type] = []
    stack = list(Base.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if cls.__module__.startswith("ruwikibench.") and cls not in found:
            found.append(cls)
    return found


@asynccontextmanager
async def sqlite_checkpointer(path: Path) -> AsyncIterator[Any]:
    """LangGraph's SQLite checkpointer on ``path``, allowed to rebuild this package's models only."""
    import aiosqlite
    from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    serde = JsonPlusSerializer(
        allowed_msgpack_modules=[(c.__module__, c.__name__) for c in serde_allowlist()]
    )
    async with aiosqlite.connect(str(path)) as conn:
        yield AsyncSqliteSaver(conn, serde=serde)


def read_session(out_dir: Path) -> Session:
    path = out_dir / SESSION
    if not path.is_file():
        raise WriteError(f"{path}: no writer session here — start one without --resume")
    return Session.model_validate_json(path.read_text(encoding="utf-8"))


def write_session(out_dir: Path, session: Session) -> None:
    """Replace session.json atomically (a kill or a full disk mid-write leaves the previous one for
    --resume)."""
    write_atomic(out_dir / SESSION, session.model_dump_json(indent=1))


def read_trace(out_dir: Path) -> list[dict[str, Any]]:
    """The trace records (a torn last line from an interrupted run is skipped)."""
    return list(read_records(out_dir / TRACE))


def _usage_totals(context: StageContext) -> tuple[int, int, int, int]:
    """calls, cache hits, prompt tokens, completion tokens so far (all roles)."""
    usage = context.llm.usage.as_dict()
    return tuple(
        sum(u.get(key, 0) for u in usage.values())  # type: ignore[return-value]
        for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens")
    )


def append_trace(path: Path, record: dict[str, Any]) -> None:
    append_jsonl(path, [_jsonable(record)])


async def _stream(
    app: Any, graph_input: Any, config: RunnableConfig, context: StageContext, out_dir: Path, name: str
) -> None:
    """Run until the end or an interrupt, appending one trace record per finished node (subgraphs
    included)."""
    capture = NodeCapture("writer", name, "article")
    context.llm.listeners.append(capture.on_completion)
    context.prompts.listeners.append(capture.on_prompt)
    log = CallLog(out_dir / MESSAGES_DIR)  # each call's messages, appended with the node records
    try:
        # the calls of this article's graph, not of other articles written meanwhile
        with capture.active(), capturing_calls(context, capture) as calls:
            async for namespace, mode, data in app.astream(
                graph_input, config, context=context, stream_mode=["tasks"], subgraphs=True
            ):
                record = capture.on_task(namespace, data) if mode == "tasks" else None
                if record:
                    append_trace(out_dir / TRACE, record)
                    log.append("writer", name, calls.calls)
                    calls.calls.clear()
    finally:
        context.llm.listeners.remove(capture.on_completion)
        context.prompts.listeners.remove(capture.on_prompt)


@dataclass(frozen=True)
class _WriteRequest:
    title: str | None
    out: Path
    user_outline: list[OutlineItem] | str | None
    review: bool
    resume: bool
    edited_outline: list[OutlineItem] | str | None


async def write_article(
    context: StageContext,
    title: str | None,
    out_dir: str | Path,
    *,
    user_outline: list[OutlineItem] | str | None = None,
    review: bool = False,
    resume: bool = False,
    edited_outline: list[OutlineItem] | str | None = None,
) -> WriteResult:
    """Write one article into ``out_dir``; stop for review after the outline, or resume a stopped/failed run.

    ``resume`` continues the session in ``out_dir``: with an ``edited_outline`` when it awaits one (default:
    the session's ``outline.md`` as the user left it), else from its last checkpoint. The config runs under
    its ``writer`` profile (stage settings that use no gold data; recorded in spec.json).
    """
    context = context.with_profile("writer")
    request = _WriteRequest(title, Path(out_dir), user_outline, review, resume, edited_outline)
    with run_lock(request.out):
        return await _write_article(context, request)


async def _write_article(context: StageContext, request: _WriteRequest) -> WriteResult:
    from langgraph.types import Command

    from ruwikibench.runner.overrides import stage_graph
    from ruwikibench.stage.registry import get_stage
    from ruwikibench.writer.outline_file import outline_markdown, read_outline_file

    title, out = request.title, request.out
    out.mkdir(parents=True, exist_ok=True)
    if request.resume:
        session = read_session(out)
        if title and title != session.title:
            raise WriteError(f"{out / SESSION}: the session writes {session.title!r}, not {title!r}")
    else:
        if not title:
            raise WriteError("a title is needed to start writing")
        session = Session(title=title, thread_id=f"{safe_name(title)}-{time.strftime('%Y%m%d-%H%M%S')}")
        (out / TRACE).unlink(missing_ok=True)
        shutil.rmtree(out / MESSAGES_DIR, ignore_errors=True)
    config: RunnableConfig = {"configurable": {"thread_id": session.thread_id}, "recursion_limit": 200}
    before = _usage_totals(context)
    started = time.perf_counter()
    async with sqlite_checkpointer(out / CHECKPOINTS) as saver:
        graph = stage_graph(get_stage("writer"), check_overrides(context.config))
        app = graph.compile(checkpointer=saver)
        graph_input: Any
        if request.resume:
            state = await app.aget_state(config)
            if not state.next:
                raise WriteError(f"{out}: the session {session.thread_id!r} has nothing left to run")
            if state.interrupts:
                outline = (
                    request.edited_outline
                    if request.edited_outline is not None
                    else read_outline_file(out / OUTLINE, session.title)
                )
                value = [i.model_dump() for i in outline] if isinstance(outline, list) else outline
                graph_input = Command(resume=value)
            else:
                graph_input = None  # a failed run: continue from the last checkpoint
        else:
            graph_input = {"title": title, "user_outline": request.user_outline, "review": request.review}
        session.status = "running"
        write_session(out, session)
        try:
            await _stream(app, graph_input, config, context, out, safe_name(session.title))
        except Exception as exc:
            session.status, session.error = "failed", f"{type(exc).__name__}: {exc}"
            _account(session, context, started, before)
            write_session(out, session)
            raise
        state = await app.aget_state(config)
    _account(session, context, started, before)
    if state.interrupts:
        payload = state.interrupts[0].value
        items = [OutlineItem.model_validate(i) for i in payload["outline"]]
        (out / OUTLINE).write_text(outline_markdown(session.title, items), encoding="utf-8")
        session.status = "awaiting_outline"
        write_session(out, session)
        return WriteResult(status="awaiting_outline", out_dir=out, outline=items, session=session)
    values = state.values
    article: WrittenArticle = values["article"]
    session.status = "done"
    extra = {
        "session": _jsonable(session.model_dump()),
        "sources": _jsonable(values.get("sources") or []),
        "assignments": _jsonable(values.get("assignments") or []),
        "notes": list(values.get("notes") or []),
        "config": context.config.model_dump(mode="json"),
        "overrides": spec_records(check_overrides(context.config)),
        "prompts": context.prompts.hashes(),
    }
    texts = {s.snippet_id: s.text for s in values.get("sources") or []}
    paths = write_exports(article, out, trace=read_trace(out), snippet_texts=texts, extra=extra)
    write_session(out, session)
    return WriteResult(status="done", out_dir=out, article=article, paths=paths, session=session)


def _account(
    session: Session, context: StageContext, started: float, before: tuple[int, int, int, int]
) -> None:
    calls, hits, prompt, completion = _usage_totals(context)
    session.wall_time_s = round(session.wall_time_s + time.perf_counter() - started, 2)
    session.llm_calls += calls - before[0]
    session.cache_hits += hits - before[1]
    session.prompt_tokens += prompt - before[2]
    session.completion_tokens += completion - before[3]
