"""Progress: each stage's bar shows that stage's own calls and tokens (not the run's totals), and output that
is not a terminal gets plain lines (a live display shows nothing in a file until it ends)."""

from __future__ import annotations

import asyncio
import io
from types import SimpleNamespace

from rich.console import Console
from rich.progress import Progress

from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.runner import lifecycle
from ruwikibench.runner.capture import NodeCapture
from ruwikibench.runner.progress_lines import PlainProgress, run_progress
from ruwikibench.stage.contract import Unit

CALLS = {"ranking": 3, "outline": 1}


class Units:
    """A stand-in runner: a unit makes its stage's number of calls, inside its capture as the runner's units
    do."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.stages = {name: None for name in CALLS}
        self.scoring = None

    async def run_unit(self, unit: Unit) -> None:
        with NodeCapture(unit.stage, unit.article, unit.unit_id).active():
            for n in range(CALLS[unit.stage]):
                await self.llm.complete("writer", f"{unit.stage} {unit.unit_id} {n}")


async def _run(progress: Progress | PlainProgress) -> None:
    llm = LLM({"writer": ScriptedChat(lambda m: "ответ")})
    context = SimpleNamespace(llm=llm, config=SimpleNamespace(max_concurrency=4))
    units = [Unit(stage=s, article="a", unit_id=str(i), input={}) for s in CALLS for i in range(2)]
    with progress:
        await asyncio.wait_for(lifecycle._run_units(context, Units(llm), units, progress), 10)  # type: ignore[arg-type]


async def test_each_stage_shows_its_own_calls_in_plain_lines() -> None:
    out = io.StringIO()
    await _run(run_progress(True, Console(file=out)))  # a file: not a terminal
    lines = out.getvalue().splitlines()
    last = {line.split()[0]: line for line in lines}
    assert last["ranking"].startswith("ranking 2/2 · 0:00:0") and "calls 6 · cache hits 0" in last["ranking"]
    assert last["outline"].startswith("outline 2/2") and "calls 2 · cache hits 0" in last["outline"]
    assert all("calls 8" not in line for line in lines)  # never the run's total under a stage's name


async def test_a_terminal_gets_the_live_display() -> None:
    out = io.StringIO()
    progress = run_progress(True, Console(file=out, force_terminal=True, width=120))
    assert isinstance(progress, Progress)
    await _run(progress)
    assert "outline" in out.getvalue() and "calls 2" in out.getvalue()


def test_plain_lines_are_throttled_per_stage() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, every_s=3600)
    bar = progress.add_task("sections", total=5, usage="")
    for n in range(5):
        progress.update(bar, advance=1, usage=f"calls {n}")
    assert [line.split(" · ")[0] for line in out.getvalue().splitlines()] == ["sections 1/5", "sections 5/5"]


def test_disabled_progress_prints_nothing() -> None:
    out = io.StringIO()
    progress = run_progress(False, Console(file=out))
    with progress:
        progress.update(progress.add_task("ranking", total=1, usage=""), advance=1, usage="x")
    assert out.getvalue() == ""
