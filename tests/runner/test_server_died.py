"""A local server that exits stops the run (one line, resumable), instead of every unit failing after
retries."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ruwikibench.models.local_server import LocalServerDied
from ruwikibench.runner import execute
from ruwikibench.stage.contract import Unit

UNIT = Unit(stage="ranking", article="Python", unit_id="0", input={})


def runner(error: Exception) -> tuple[Any, list[Unit], list[tuple[Any, ...]]]:
    attempts: list[Unit] = []
    errors: list[tuple[Any, ...]] = []

    async def attempt(unit: Unit) -> dict[str, Any]:
        attempts.append(unit)
        raise error

    fake = SimpleNamespace(
        options=SimpleNamespace(retries=2, unit_timeout=10),
        _attempt=attempt,
        record_error=lambda *args, **kwargs: errors.append(args),
    )
    return fake, attempts, errors


async def test_a_dead_local_server_ends_the_run_at_the_first_unit() -> None:
    fake, attempts, errors = runner(
        LocalServerDied("llama.cpp server … exited with signal SIGSEGV; log x.log")
    )
    with pytest.raises(LocalServerDied, match="SIGSEGV"):
        await execute.Runner.run_unit(fake, UNIT)
    assert len(attempts) == 1 and errors == []  # not retried, not recorded as the unit's failure


async def test_other_failures_are_retried_and_recorded_as_before() -> None:
    fake, attempts, errors = runner(RuntimeError("bad answer"))
    assert await execute.Runner.run_unit(fake, UNIT) is None
    assert len(attempts) == 3 and len(errors) == 1 and "bad answer" in errors[0][3]
