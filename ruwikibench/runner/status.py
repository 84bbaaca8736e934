"""Exit statuses of the commands that run units (``run``, ``write --batch``, ``score-outputs``, the judges).

- 0: no unit failed;
- 1: units failed and no unit that needed the endpoint succeeded (the endpoint down, every request failing,
  or every unit's scoring failing: a unit succeeds only when it ran and was scored); for commands that make no
  LLM call (``score-outputs``): no unit succeeded at all;
- 2: bad input (a file, field, option or article), a run directory in use: one ``error:`` line, nothing run;
- 3: some units failed, others succeeded: a partial run; the same command resumes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ruwikibench.storage.jsonl import unit_key
from ruwikibench.storage.rundir import RunDir

OK, NONE_SUCCEEDED, BAD_INPUT, PARTIAL = 0, 1, 2, 3


def exit_status(failed: int, succeeded: int) -> int:
    """0 without failures; else 1 when nothing (that needed the endpoint) succeeded, 3 when something did."""
    if not failed:
        return OK
    return PARTIAL if succeeded else NONE_SUCCEEDED


def combined(statuses: Iterable[int]) -> int:
    """One status for several runs (``run outline --mode all``): 0 if all are 0, 1 if all are 1, else 3."""
    values = set(statuses)
    if values <= {OK}:
        return OK
    return NONE_SUCCEEDED if values == {NONE_SUCCEEDED} else PARTIAL


def succeeded_units(rundir: RunDir, errors: Iterable[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Units with an output and no open error among ``errors``: a unit whose ``score()`` failed has an output
    but did not succeed."""
    return rundir.output_keys() - {unit_key(error) for error in errors}


def endpoint_units(rundir: RunDir, errors: Iterable[dict[str, Any]] = ()) -> int:
    """Units of the run that succeeded (:func:`succeeded_units`) and whose nodes asked the LLM (answers from
    the cache count): the units that needed the endpoint and succeeded. Units that make no call (a section
    without snippets) do not count."""
    done = succeeded_units(rundir, errors)
    asked = {unit_key(r) for r in rundir.read("nodes.jsonl") if r.get("llm_calls")}
    return len(done & asked)


def run_status(rundir: RunDir) -> int:
    """The exit status of a benchmark run directory (``run``): from its open errors and its units."""
    errors = rundir.open_errors()
    return exit_status(len(errors), endpoint_units(rundir, errors) if errors else 0)
