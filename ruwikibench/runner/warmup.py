"""Load, before a run sends its first request, what its stages would otherwise load lazily mid-run.

Importing a large package (sklearn, scipy, langchain-openai) or loading a morphology dictionary runs C
initializers that hold the GIL; done lazily in a worker thread in the middle of a run, each stalls the event
loop (and with it every request in flight) for up to half a second — measured on 2 loaded cores. Done once up
front, before any request is in flight, it costs the same CPU and stalls nothing that matters.
"""

from __future__ import annotations

import importlib
from typing import Any

from ruwikibench.conf.config import RunConfig
from ruwikibench.stage.contract import Stage
from ruwikibench.stage.registry import StageRegistryError, get_stage

COMMON = ("httpx", "openai", "langchain_openai", "numpy")


def _stages(names: list[str]) -> list[Stage[Any]]:
    """The registered stages of ``names`` (an unknown name adds nothing)."""
    found = []
    for name in names:
        try:
            found.append(get_stage(name))
        except StageRegistryError:
            continue
    return found


def modules_for(stages: list[str]) -> list[str]:
    """The modules the given stages load lazily (their ``warm_modules``; unknown stages add nothing), in a
    stable order."""
    names = list(COMMON)
    for stage in _stages(stages):
        names += [m for m in stage.warm_modules if m not in names]
    return names


def warm_up(stages: list[str], config: RunConfig, *, scoring: bool = True) -> list[str]:
    """Import the stages' modules and build the lazily built helpers they share (each stage's ``warm_up``);
    returns what was imported. ``scoring=False``: units are scored in another process
    (runner/score_process.py), which loads the NER model.

    A module that is not installed is skipped here: the stage that needs it reports that itself."""
    loaded = []
    for name in modules_for(stages):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        loaded.append(name)
    for stage in _stages(stages):
        stage.warm_up(config, scoring=scoring)
    return loaded
