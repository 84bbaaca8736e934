"""One progress bar for every long job (rich, on stderr): ``with progress_bar(total, "what") as advance:
advance()``.

The runner's multi-bar display (`runner/lifecycle.py`) and the corpus builder's use rich's Progress directly;
everything with a single bar uses this.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)


@contextmanager
def progress_bar(
    total: int | None, description: str, *, disable: bool = False, in_bytes: bool = False
) -> Iterator[Callable[..., None]]:
    """A bar of ``total`` steps (None: a counter with no end); yields ``advance(steps=1)``."""
    count = DownloadColumn() if in_bytes else MofNCompleteColumn()
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        count,
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        disable=disable,
    ) as progress:
        task = progress.add_task(description, total=total)

        def advance(steps: int = 1) -> None:
            progress.advance(task, steps)

        yield advance
