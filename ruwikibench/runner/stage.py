"""The stage contract, re-exported where the runner used to define it.

The types live in :mod:`ruwikibench.contract` (the bottom layer graphs and evaluators import); stages are found
by name through :mod:`ruwikibench.registry`.
"""

from ruwikibench.contract import GeneratedText, ScoreRecord, Stage, Unit
from ruwikibench.registry import get_stage, known_stages, register_stage, stage_names

__all__ = [
    "GeneratedText", "ScoreRecord", "Stage", "Unit", "get_stage", "known_stages", "register_stage", "stage_names"
]
