"""Re-score a saved run from its captured outputs: no LLM call is made (the context's LLM has no backend)."""

from __future__ import annotations

from ruwikibench.aggregation.baselines import UNIT_BASELINES_FILE, baseline_names, unit_baselines
from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.runner.finalize import finalize
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Unit, score_failure
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.jsonl import JsonlRewriter
from ruwikibench.storage.results import versioned
from ruwikibench.storage.rundir import RunDir


def rescore(rundir: RunDir, context: StageContext) -> dict:
    """Rewrite results.jsonl, generated.jsonl and the units' baselines (baseline_scores.jsonl) from the latest
    output of each unit, then floors, baselines, metrics and report (holding the run directory's lock)."""
    with rundir.lock():
        return _rescore(rundir, context)


def _rescore(rundir: RunDir, context: StageContext) -> dict:
    errors = [e for e in rundir.read("errors.jsonl") if not e["reason"].startswith("score:")]
    with (
        JsonlRewriter(rundir.file("results.jsonl")) as results,
        JsonlRewriter(rundir.file("generated.jsonl")) as texts,
        JsonlRewriter(rundir.file(UNIT_BASELINES_FILE)) as baselines,
    ):
        for saved in rundir.iter_outputs():  # one unit at a time: a run's outputs are never all held
            stage = get_stage(saved["stage"])
            unit = Unit(
                stage=saved["stage"], article=saved["article"], unit_id=saved["unit"], input=saved["input"]
            )
            tag = {"unit": unit.unit_id}
            try:
                scored = stage.checked_score(unit, saved["output"], context)
            except Exception as exc:  # noqa: BLE001
                errors.append(
                    {
                        "stage": unit.stage,
                        "article": unit.article,
                        "unit": unit.unit_id,
                        "reason": f"score: {score_failure(exc)}",
                        "attempts": 0,
                    }
                )
                continue
            results.write_many(versioned(r.model_dump(mode="json") | tag) for r in scored.records)
            texts.write_many(t.model_dump(mode="json") | tag for t in scored.texts)
            if baseline_names(stage):
                baselines.write_many([unit_baselines(stage, unit, saved["output"], context)])
    rundir.rewrite("errors.jsonl", errors)
    compute_floors_and_baselines(rundir, context)
    return finalize(rundir)
