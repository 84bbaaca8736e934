"""An older name of :mod:`ruwikibench.plugin`: the stage contract and registry, re-exported (plug-ins import
``ruwikibench.plugin``)."""

from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Stage, StageScore, Unit
from ruwikibench.stage.registry import get_stage, known_stages, register_stage, stage_names

__all__ = [
    "GeneratedText",
    "ScoreRecord",
    "Stage",
    "StageScore",
    "Unit",
    "get_stage",
    "known_stages",
    "register_stage",
    "stage_names",
]
