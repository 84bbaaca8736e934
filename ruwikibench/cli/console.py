"""The CLI's rich console: terminal width on a terminal; wide enough for the paper's tables in logs and pipes."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from rich.console import Console

LOG_WIDTH = 200


def print_error(message: object) -> None:
    """``error: MESSAGE`` on stderr as plain text: user text (paths, titles) never goes through rich markup."""
    from ruwikibench.secrets import redact

    print(redact(f"error: {message}"), file=sys.stderr, flush=True)


def make_console(file: TextIO | None = None, **kwargs: Any) -> Console:
    """A Console that does not squeeze tables to 80 columns when the output is a file or a pipe (COLUMNS wins)."""
    stream = file or sys.stdout
    wide = not stream.isatty() and "COLUMNS" not in os.environ
    return Console(file=file, width=LOG_WIDTH if wide else None, **kwargs)
