"""How the command line ends on an error: bad input is one ``error:`` line and exit status 2; anything else is
a bug — a short line saying so and where its traceback was written, exit status :data:`INTERNAL_ERROR`.

Bad input is an exception of a known input-error type (:func:`input_error_types`): the package's own (a config
field, a dataset, a run directory, a corpus file, an outline file, a judge file, …, each one line naming the
file, field or article) and the machine's (``OSError``: a missing file, a permission, a full disk). Every
other exception (``KeyError``, ``TypeError``, an ``AttributeError`` …) escaped a loader that should have named
the problem."""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path

INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h): an internal error, not the user's input
DEBUG_ENV = "RUWIKIBENCH_DEBUG"


def input_error_types() -> tuple[type[BaseException], ...]:
    """The exception types that are bad input (or a machine fault), never a bug of the package."""
    from ruwikibench.conf.config import RunInputError
    from ruwikibench.corpus_builder.ruwikibench_json import CorpusError
    from ruwikibench.corpus_builder.store import DatasetStoreError
    from ruwikibench.evaluators.judges.rundir import RunError
    from ruwikibench.external.formats import ExternalFormatError
    from ruwikibench.models.asset_files import LocalAssetError
    from ruwikibench.models.local_server import LocalServerError
    from ruwikibench.nodes.outline_file import OutlineFileError
    from ruwikibench.reporting.paper import PaperResultsError
    from ruwikibench.stage.contract import StageOutputError, StageReturnError
    from ruwikibench.stage.registry import StageRegistryError
    from ruwikibench.storage.jsonl import JsonlError
    from ruwikibench.storage.runlock import RunDirLocked
    from ruwikibench.writer.run import WriteError

    return (
        RunInputError,
        RunDirLocked,
        JsonlError,
        LocalServerError,
        CorpusError,
        DatasetStoreError,
        RunError,
        ExternalFormatError,
        LocalAssetError,
        OutlineFileError,
        StageRegistryError,
        StageReturnError,
        StageOutputError,
        PaperResultsError,
        WriteError,
        OSError,
    )


def is_input_error(exc: BaseException) -> bool:
    try:
        known = input_error_types()
    except Exception:  # noqa: BLE001 - a module that cannot be imported: only the config's own errors are known
        from ruwikibench.conf.config import RunInputError

        known = (RunInputError, OSError)
    return isinstance(exc, known)


def input_error_line(exc: BaseException) -> str:
    """The one line of a known input error: its message (``OSError``: with its type, as
    ``FileNotFoundError: …``)."""
    text = str(exc)
    if isinstance(exc, OSError) or not text:
        text = f"{type(exc).__name__}: {text}"
    return text


def internal_error_line(exc: BaseException, debug: bool) -> str:
    """Print the traceback under ``debug``, else write it to a file; the line saying what happened and
    where."""
    if debug:
        traceback.print_exception(exc)
        return f"internal error (a bug of ruwikibench): {type(exc).__name__}: {exc}"
    where = write_traceback(exc)
    hint = f"traceback in {where}" if where else f"--debug or {DEBUG_ENV}=1 shows the traceback"
    return f"internal error (a bug of ruwikibench): {type(exc).__name__}: {exc}; {hint}"


def write_traceback(exc: BaseException) -> Path | None:
    """The traceback (and the command line) in ``<cache>/crashes/``; None when it cannot be written."""
    from ruwikibench.conf.secrets import redact
    from ruwikibench.corpus_builder.dataset_files import cache_root

    path = cache_root() / "crashes" / f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    text = "ruwikibench " + " ".join(sys.argv[1:]) + "\n\n" + "".join(traceback.format_exception(exc))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(redact(text), encoding="utf-8")
    except OSError:
        return None
    return path
