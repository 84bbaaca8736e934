"""Outputs of other systems (JSONL per stage, STORM output folders) scored into normal run directories.

See docs/external.md for the formats. Nothing here calls an LLM.
"""

from ruwikibench.external.formats import STAGES, ExternalFormatError, read_rows
from ruwikibench.external.score import ExternalOptions, score_outputs
from ruwikibench.external.storm import storm_rows

__all__ = ["STAGES", "ExternalFormatError", "ExternalOptions", "read_rows", "score_outputs", "storm_rows"]
