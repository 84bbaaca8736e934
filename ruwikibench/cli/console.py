"""The CLI's rich console: terminal width on a terminal; wide enough for the paper's tables in logs and
pipes."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from rich.console import Console

LOG_WIDTH = 200


def print_error(message: object) -> None:
    """``error: MESSAGE`` on stderr as plain text: user text (paths, titles) never goes through rich
    markup."""
    from ruwikibench.conf.secrets import redact

    print(redact(f"error: {message}"), file=sys.stderr, flush=True)


class RedactingStream:
    """A text stream whose every write has the registered secrets masked (:mod:`ruwikibench.conf.secrets`);
    ``None`` stands for the current ``sys.stdout`` or ``sys.stderr`` (looked up at each write, as rich
    does)."""

    def __init__(self, file: TextIO | None, stderr: bool = False) -> None:
        self._file = file
        self._stderr = stderr

    @property
    def stream(self) -> TextIO:
        return self._file or (sys.stderr if self._stderr else sys.stdout)

    def write(self, text: str) -> int:
        from ruwikibench.conf.secrets import redact

        return self.stream.write(redact(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def make_console(file: TextIO | None = None, **kwargs: Any) -> Console:
    """A Console that does not squeeze tables to 80 columns when the output is a file or a pipe (COLUMNS
    wins), and that masks the registered secrets in everything it prints."""
    stream = RedactingStream(file, stderr=bool(kwargs.pop("stderr", False)))
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(file=stream, width=LOG_WIDTH if wide else None, **kwargs)  # type: ignore[arg-type]
