"""The run's progress: one bar per stage with that stage's own calls, cache hits and tokens.

On a terminal a live rich display; when the output is not a terminal (redirected to a file, a pipe, CI) plain
lines instead — a stage's first and last unit and at most one line every :data:`PLAIN_EVERY_S` seconds per
stage between them — since a live display shows nothing there until it ends.

A call counts for the stage whose unit made it: the unit's :class:`~ruwikibench.runner.capture.NodeCapture` is
active while its graph runs (:func:`~ruwikibench.runner.capture.active_stage`).
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from types import TracebackType
from typing import IO, Any, Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from ruwikibench.models.types import Completion
from ruwikibench.runner.capture import active_stage

PLAIN_EVERY_S = 10.0
"""Seconds between two plain progress lines of one stage (its first and last unit always print)."""


@dataclass
class _Counts:
    calls: int = 0
    cache_hits: int = 0
    tokens: int = 0


class StageUsage:
    """Calls, cache hits and tokens of requests sent, per stage: an LLM listener (``llm.listeners``)."""

    def __init__(self) -> None:
        self._by_stage: defaultdict[str, _Counts] = defaultdict(_Counts)

    def on_completion(self, role: str, completion: Completion) -> None:
        stage = active_stage()
        if stage is None:
            return
        counts = self._by_stage[stage]
        counts.calls += 1
        if completion.cached:
            counts.cache_hits += 1
        else:
            counts.tokens += completion.prompt_tokens + completion.completion_tokens

    def line(self, stage: str) -> str:
        counts = self._by_stage[stage]
        return f"calls {counts.calls} · cache hits {counts.cache_hits} · tokens {counts.tokens}"


@dataclass
class _Bar:
    name: str
    total: int
    done: int = 0
    usage: str = ""
    printed_at: float | None = None


class PlainProgress:
    """The subset of rich's ``Progress`` the runner uses, printing plain lines."""

    def __init__(self, stream: IO[str] | None = None, every_s: float = PLAIN_EVERY_S) -> None:
        self.stream = stream
        self.every_s = every_s
        self.started = time.monotonic()
        self._bars: list[_Bar] = []

    def add_task(self, description: str, total: float | None = None, **fields: Any) -> TaskID:
        self._bars.append(_Bar(description, int(total or 0), usage=str(fields.get("usage", ""))))
        return TaskID(len(self._bars) - 1)

    def update(self, task_id: TaskID, *, advance: int = 0, **fields: Any) -> None:
        bar = self._bars[task_id]
        bar.done += advance
        bar.usage = str(fields.get("usage", bar.usage))
        now = time.monotonic()
        due = bar.printed_at is None or now - bar.printed_at >= self.every_s or bar.done >= bar.total
        if due:
            bar.printed_at = now
            self._print(bar, now)

    def _print(self, bar: _Bar, now: float) -> None:
        elapsed = int(now - self.started)
        clock = f"{elapsed // 3600}:{elapsed // 60 % 60:02d}:{elapsed % 60:02d}"
        usage = f" · {bar.usage}" if bar.usage else ""
        stream = self.stream or sys.stdout
        print(f"{bar.name} {bar.done}/{bar.total} · {clock}{usage}", file=stream, flush=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        return None


def run_progress(enabled: bool, console: Console | None = None) -> Progress | PlainProgress:
    """The run's progress display: rich's live bars on a terminal, :class:`PlainProgress` lines elsewhere,
    nothing when disabled."""
    console = console or Console()
    if enabled and not console.is_terminal:
        return PlainProgress(console.file)
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[usage]}"),
        console=console,
        disable=not enabled,
    )
