"""Re-score a saved run from its captured outputs: no LLM call is made (the context's LLM has no backend).

When the code that scores is not the code that made the outputs (ruwikibench's version or commit, a plug-in
stage's code, prompts or options), spec.json records it (``scored_with``: those, and what differs):
``stage_identity`` keeps saying which code made the outputs and is never taken for the code that scored.
"""

from __future__ import annotations

import time

from ruwikibench.aggregation.baselines import UNIT_BASELINES_FILE, baseline_names, unit_baselines
from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.conf.config import RunConfig
from ruwikibench.runner.finalize import finalize
from ruwikibench.runner.identity import stages_identity
from ruwikibench.runner.run_spec import git_commit
from ruwikibench.runner.same_run import code_changes
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Unit, score_failure
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.jsonl import JsonlRewriter
from ruwikibench.storage.results import versioned
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import SPEC_FILE, ScoredWithRecord, read_spec_if_any
from ruwikibench.version import __version__


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
    record_scoring(rundir, context.config)
    return finalize(rundir)


def record_scoring(rundir: RunDir, config: RunConfig) -> None:
    """spec.json's ``scored_with``: the code that scored the run now, when it is not the code spec.json says
    made the outputs (else spec.json is left as it is, an earlier ``scored_with`` dropped: it no longer
    holds)."""
    spec = read_spec_if_any(rundir)
    if spec is None:
        return
    current = stages_identity([get_stage(name) for name in spec.stages], config)
    commit = git_commit()
    changed = ["ruwikibench"] if (spec.package_version, spec.git_commit) != (__version__, commit) else []
    changed += code_changes(spec, spec.model_copy(update={"stage_identity": current}))
    if not changed and spec.scored_with is None:
        return
    spec.scored_with = None
    if changed:
        spec.scored_with = ScoredWithRecord(
            at=time.strftime("%Y-%m-%dT%H:%M:%S"),
            package_version=__version__,
            git_commit=commit,
            stage_identity=current,
            changed=changed,
        )
    rundir.write_json(SPEC_FILE, spec.record())
