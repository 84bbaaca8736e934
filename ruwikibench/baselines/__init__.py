"""No-LLM baselines: what a stage's metrics give for outputs made without reading the sources cleverly.

A benchmark must say whether a pipeline beats doing nothing clever. Each baseline builds, for a unit the run
has an output for, an output in the stage's own output schema — from the title, from other articles' reference
outlines, from the first sentences of the snippets, from a random order — with no LLM call; the stage's own
``score()`` and permutation floor score it exactly as they score the run.
:mod:`ruwikibench.aggregation.baselines` computes them when a run is scored;
:mod:`ruwikibench.aggregation.metrics` puts them beside the run, with the paired difference run − best
baseline.

A stage declares its baselines itself (``Stage.baselines``, a tuple of :class:`Baseline`), built-in or
plug-in: the modules here define the built-in stages' (``RANKING_BASELINES``, ``OUTLINE_BASELINES``,
``SECTIONS_BASELINES``, ``WRITER_BASELINES``), which those stages name.
"""

from ruwikibench.stage.contract import Baseline, BaselineSkipped

__all__ = ["Baseline", "BaselineSkipped"]
