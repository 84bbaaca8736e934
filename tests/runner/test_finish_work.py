"""What the finish of a run no longer does: the units' baselines are scored as each unit is
(baseline_scores.jsonl), the finish only gathers them — streaming the outputs, never holding them all — and
the entities of a text are read by the NER once, so scoring a run again reads none."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ruwikibench.aggregation import derived
from ruwikibench.aggregation.baselines import (
    BASELINES_FILE,
    UNIT_BASELINES_FILE,
    baseline_names,
    output_digest,
)
from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.conf.config import RunConfig
from ruwikibench.evaluators import entities
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import finalize
from ruwikibench.runner.rescore import rescore
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.jsonl import unit_key
from ruwikibench.storage.rundir import FLOORS_FILE, RunDir
from tests.graphs.writer_fixture import HashEmbedder, make_dataset
from tests.runner.sample_run import run_sample


def _context(rundir: RunDir) -> StageContext:
    config = RunConfig.model_validate(rundir.read_json("spec.json")["config"])
    return StageContext(
        config=config,
        llm=None,
        embedder=HashEmbedder(),
        prompts=PromptLibrary(),  # type: ignore[arg-type]
        dataset=make_dataset(),
    )


def _forbidden(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("not in the finish")


def _files(rundir: RunDir) -> tuple[list[dict], list[dict]]:
    return list(rundir.read(FLOORS_FILE)), list(rundir.read(BASELINES_FILE))


async def test_the_finish_gathers_the_units_baselines_and_scores_none(tmp_path, monkeypatch) -> None:
    rundir = await run_sample(tmp_path, monkeypatch)
    with_baselines = {unit_key(o) for o in rundir.outputs() if baseline_names(get_stage(o["stage"]))}
    records = list(rundir.read(UNIT_BASELINES_FILE))
    assert with_baselines and sorted(unit_key(r) for r in records) == sorted(with_baselines)  # one per unit
    expected = _files(rundir)
    metrics = rundir.file("metrics.json").read_bytes()
    context = _context(rundir)

    with monkeypatch.context() as patch:  # nothing scored, and no step holds every output at once
        patch.setattr(derived, "unit_baselines", _forbidden)
        patch.setattr(RunDir, "outputs", _forbidden)
        compute_floors_and_baselines(rundir, context)
        finalize(rundir)
    assert _files(rundir) == expected and rundir.file("metrics.json").read_bytes() == metrics

    rundir.file(UNIT_BASELINES_FILE).unlink()  # a run from before the file: its baselines are scored here
    compute_floors_and_baselines(rundir, context)
    assert _files(rundir) == expected
    assert sorted(unit_key(r) for r in rundir.read(UNIT_BASELINES_FILE)) == sorted(with_baselines)


async def test_a_unit_with_another_output_gets_its_baselines_scored_again(tmp_path, monkeypatch) -> None:
    rundir = await run_sample(tmp_path, monkeypatch)
    ranking = next(o for o in rundir.outputs() if o["stage"] == "ranking")
    changed = json.loads(json.dumps(ranking))
    changed["output"]["candidates"] = changed["output"]["candidates"][:-1]  # the pool a baseline reorders
    rundir.append("outputs.jsonl", changed)
    scored: list[tuple[str, str, str]] = []
    real = derived.unit_baselines

    def counting(stage: Any, unit: Any, output: Any, context: Any) -> Any:
        scored.append((unit.stage, unit.article, unit.unit_id))
        return real(stage, unit, output, context)

    monkeypatch.setattr(derived, "unit_baselines", counting)
    compute_floors_and_baselines(rundir, _context(rundir))
    assert scored == [unit_key(ranking)]
    latest = [r for r in rundir.read(UNIT_BASELINES_FILE) if unit_key(r) == unit_key(ranking)][-1]
    assert latest["output_sha256"] == output_digest(changed["output"]) != output_digest(ranking["output"])
    scored.clear()
    compute_floors_and_baselines(rundir, _context(rundir))
    assert scored == []  # the record written then is current now


async def test_scoring_a_run_again_reads_no_text_with_the_ner(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(
        entities, "_store", None
    )  # the run's context sets its own cache folder; restored after
    entities.forget_in_memory()  # texts this process read before must not hide the run's own reads
    before = entities.ner_texts()
    rundir = await run_sample(tmp_path, monkeypatch)
    assert entities.ner_texts() > before  # the run read its texts (sections and outline entities)
    assert (tmp_path / "cache" / entities.CACHE_FILE).exists()
    metrics = rundir.file("metrics.json").read_bytes()
    entities.forget_in_memory()  # as a new process: only the disk cache is left
    read = entities.ner_texts()
    rescore(rundir, _context(rundir))
    assert entities.ner_texts() == read
    assert rundir.file("metrics.json").read_bytes() == metrics
    entities.forget_in_memory()


def test_one_blas_thread_gives_the_same_products_to_float32_rounding() -> None:
    import numpy as np

    from ruwikibench.aggregation.derived import one_blas_thread
    from ruwikibench.evaluators.outline import soft_cardinality
    from ruwikibench.evaluators.similarity import greedy_prf

    rng = np.random.default_rng(0)
    generated, reference = (rng.normal(size=(n, 384)).astype(np.float32) for n in (90, 120))  # threaded sizes
    generated /= np.linalg.norm(generated, axis=1, keepdims=True)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    threaded = greedy_prf(generated, reference), soft_cardinality(reference)
    with one_blas_thread():
        single = greedy_prf(generated, reference), soft_cardinality(reference)
    assert single[0] == pytest.approx(threaded[0], rel=1e-6)  # bit-equal on some CPUs, not on all
    assert single[1] == pytest.approx(threaded[1], rel=1e-6)
    assert single[1] != pytest.approx(
        threaded[1] * (1 + 1e-4), rel=1e-6
    )  # the tolerance is float32's, no wider
