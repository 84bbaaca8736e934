"""The judges' one resumable loop: ask every pending judgement at once, keep each verdict the moment it
arrives.

The LLM client's global limit bounds how many calls are in flight; each verdict is appended (and fsynced) to
the judge's JSONL file as soon as it is answered, so a killed run keeps everything answered and a rerun asks
only what is still missing (each judge decides what is pending from the file's latest verdicts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from pathlib import Path

from pydantic import BaseModel

from ruwikibench.evaluators.judges.rundir import JsonlWriter
from ruwikibench.runtime.progress import progress_bar


async def judge_pending(
    path: Path, jobs: Sequence[Awaitable[BaseModel]], description: str, *, progress: bool = True
) -> int:
    """Run ``jobs`` concurrently, appending each verdict to ``path`` as it arrives; returns how many ran."""
    with JsonlWriter(path) as writer, progress_bar(len(jobs), description, disable=not progress) as advance:
        for future in asyncio.as_completed([asyncio.ensure_future(job) for job in jobs]):
            writer.write(await future)
            advance()
    return len(jobs)
