"""The run id names what changes a run's answers, not where or how fast the models are reached."""

from __future__ import annotations

from ruwikibench.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.rundir import RunDir
from ruwikibench.runner.execute import RunOptions, _check_same_run, run_id_for


def _config(**model: object) -> RunConfig:
    base = {"name": "fake", "endpoints": ["http://127.0.0.1:8000/v1"], **model}
    return RunConfig.model_validate({"name": "r", "models": {"writer": base}})


def test_run_id_ignores_endpoint_timeout_and_concurrency() -> None:
    dataset, options = Dataset(articles=[], sources=[], snippets=[]), RunOptions()
    base = run_id_for(_config(), dataset, options)
    moved = _config(endpoints=["http://127.0.0.1:9999/v1"], timeout=5.0, max_retries=0)
    assert run_id_for(moved, dataset, options) == base
    assert run_id_for(_config().model_copy(update={"max_concurrency": 64, "cache_dir": "/x"}), dataset, options) == base
    assert run_id_for(_config(temperature=0.5), dataset, options) != base
    assert run_id_for(_config(name="other"), dataset, options) != base


def test_resume_on_another_port_is_the_same_run(tmp_path) -> None:
    rundir = RunDir(tmp_path)
    rundir.write_json("spec.json", {"config": _config().model_dump(mode="json"), "dataset": {"id": "d"}})
    moved = _config(endpoints=["http://127.0.0.1:9999/v1"])
    _check_same_run(rundir, {"config": moved.model_dump(mode="json"), "dataset": {"id": "d"}})
    other = _config(temperature=0.7)
    try:
        _check_same_run(rundir, {"config": other.model_dump(mode="json"), "dataset": {"id": "d"}})
    except ValueError as exc:
        assert "another config" in str(exc)
    else:
        raise AssertionError("a run with another temperature must not resume this one")


def _ranked(embedder: dict[str, object] | None = None, **ranking: object) -> RunConfig:
    model = {"name": "fake", "endpoints": ["http://127.0.0.1:8000/v1"]}
    data: dict[str, object] = {"name": "r", "models": {"writer": model}, "ranking": ranking}
    if embedder is not None:
        data["embedder"] = embedder
    return RunConfig.model_validate(data)


BERTA = {"kind": "sentence-transformers", "name": "sergeyzh/BERTA"}


def test_run_ids_of_configs_without_the_new_inputs_are_the_ids_they_had() -> None:
    """Pinned before embedder.authors_prompt and the reference-queries identity existed: runs that use neither
    keep resuming their run directories."""
    from tests.retrieval.synthetic import make_dataset

    dataset = make_dataset()
    assert run_id_for(_ranked(query_mode="generated"), dataset, RunOptions()) == "r-586d8849"
    assert run_id_for(_ranked(query_mode="title"), dataset, RunOptions()) == "r-66468370"
    assert run_id_for(_ranked(), dataset, RunOptions(stages=["outline", "sections"])) == "r-0ca768da"
    assert run_id_for(_ranked(BERTA, query_mode="generated"), dataset, RunOptions()) == "r-66e01607"


def test_authors_prompt_is_part_of_the_run_id_and_the_spec() -> None:
    from ruwikibench.runner.execute import build_spec

    dataset, options = Dataset(articles=[], sources=[], snippets=[]), RunOptions(stages=["outline"])
    base = run_id_for(_ranked(BERTA), dataset, options)
    paper = _ranked({**BERTA, "authors_prompt": "Classification"})
    assert run_id_for(paper, dataset, options) != base
    assert run_id_for(_ranked({**BERTA, "authors_prompt": "Other"}), dataset, options) not in {
        base, run_id_for(paper, dataset, options)}
    spec = build_spec("r", paper, dataset, "data", options)
    assert spec["config"]["embedder"]["authors_prompt"] == "Classification"
