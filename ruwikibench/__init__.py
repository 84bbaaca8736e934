"""ruwikibench: the RuWikiBench benchmark as LangGraph stage graphs, and a STORM-like writer built from them.

The names below are imported from their modules on first use (PEP 562): ``import ruwikibench`` loads nothing
else, so the command line (``python -m ruwikibench``) can pause the garbage collector before its own imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruwikibench.api import Run, merge, report, run, score
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.conf.loader import load_config
    from ruwikibench.dataset import Article, Dataset, Paragraph, Reference, Section, Snippet, Source
    from ruwikibench.version import __version__

_HOME = {
    **dict.fromkeys(("Run", "merge", "report", "run", "score"), "api"),
    "RunConfig": "conf.config",
    "load_config": "conf.loader",
    **dict.fromkeys(
        ("Article", "Dataset", "Paragraph", "Reference", "Section", "Snippet", "Source"), "dataset"
    ),
    "__version__": "version",
}

__all__ = [
    "Article",
    "Dataset",
    "Paragraph",
    "Reference",
    "Run",
    "RunConfig",
    "Section",
    "Snippet",
    "Source",
    "__version__",
    "load_config",
    "merge",
    "report",
    "run",
    "score",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
