"""The run id names what changes a run's answers, not where or how fast the models are reached."""

from __future__ import annotations

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.runner.execute import RunOptions, run_id_for
from ruwikibench.runner.same_run import check_same_run
from ruwikibench.storage.rundir import RunDir


def _config(**model: object) -> RunConfig:
    base = {"name": "fake", "endpoints": ["http://127.0.0.1:8000/v1"], **model}
    return RunConfig.model_validate({"name": "r", "models": {"writer": base}})


def test_run_id_ignores_endpoint_timeout_and_concurrency() -> None:
    dataset, options = Dataset(articles=[], sources=[], snippets=[]), RunOptions()
    base = run_id_for(_config(), dataset, options)
    moved = _config(endpoints=["http://127.0.0.1:9999/v1"], timeout=5.0, max_retries=0)
    assert run_id_for(moved, dataset, options) == base
    assert (
        run_id_for(_config().model_copy(update={"max_concurrency": 64, "cache_dir": "/x"}), dataset, options)
        == base
    )
    assert run_id_for(_config(temperature=0.5), dataset, options) != base
    assert run_id_for(_config(name="other"), dataset, options) != base


def test_resume_on_another_port_is_the_same_run(tmp_path) -> None:
    rundir = RunDir(tmp_path)
    rundir.write_json("spec.json", {"config": _config().model_dump(mode="json"), "dataset": {"id": "d"}})
    moved = _config(endpoints=["http://127.0.0.1:9999/v1"])
    check_same_run(rundir, {"config": moved.model_dump(mode="json"), "dataset": {"id": "d"}})
    other = _config(temperature=0.7)
    try:
        check_same_run(rundir, {"config": other.model_dump(mode="json"), "dataset": {"id": "d"}})
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
        base,
        run_id_for(paper, dataset, options),
    }
    spec = build_spec("r", paper, dataset, "data", options)
    assert spec["config"]["embedder"]["authors_prompt"] == "Classification"


def _stored(folder, model: str = "qwen-ref", query: str = "описание") -> bytes:
    from ruwikibench.nodes.queries import REFERENCE_QUERIES_FILE, QueryRecord, ReferenceQueries

    stored = ReferenceQueries(
        dataset_id="d", model=model, queries={"a": QueryRecord(title="A", ru=query, en="")}
    )
    data = stored.model_dump_json().encode()
    (folder / REFERENCE_QUERIES_FILE).write_bytes(data)
    return data


def test_reference_queries_file_is_part_of_the_run_id_and_the_spec(tmp_path) -> None:
    import hashlib

    from ruwikibench.runner.execute import build_spec, run_inputs

    dataset, options, config = (
        Dataset(articles=[], sources=[], snippets=[]),
        RunOptions(stages=["ranking"]),
        _ranked(),
    )
    data = _stored(tmp_path)
    inputs = run_inputs(config, options, tmp_path)
    assert inputs == {
        "reference_queries": {
            "path": str(tmp_path / "reference_queries.json"),
            "sha256": hashlib.sha256(data).hexdigest(),
            "model": "qwen-ref",
        }
    }
    first = run_id_for(config, dataset, options, inputs)
    assert run_id_for(config, dataset, options, run_inputs(config, options, tmp_path)) == first  # same file
    spec = build_spec(first, config, dataset, "data", options, inputs)
    assert spec["reference_queries"] == inputs["reference_queries"]
    _stored(tmp_path, query="другое описание")  # same model, other content
    assert run_id_for(config, dataset, options, run_inputs(config, options, tmp_path)) != first
    _stored(tmp_path, model="other-model")
    assert run_inputs(config, options, tmp_path)["reference_queries"]["model"] == "other-model"


def test_missing_reference_queries_do_not_break_the_run_id(tmp_path) -> None:
    """No file (or no place for one): the id is computed; the ranking units then fail with the error naming
    the fix."""
    from ruwikibench.runner.execute import run_inputs

    dataset, options, config = (
        Dataset(articles=[], sources=[], snippets=[]),
        RunOptions(stages=["ranking"]),
        _ranked(),
    )
    missing = run_inputs(config, options, tmp_path)
    assert missing == {
        "reference_queries": {"path": str(tmp_path / "reference_queries.json"), "sha256": None, "model": None}
    }
    assert run_inputs(config, options, None) == {
        "reference_queries": {"path": None, "sha256": None, "model": None}
    }
    before = run_id_for(config, dataset, options, missing)
    _stored(tmp_path)
    assert run_id_for(config, dataset, options, run_inputs(config, options, tmp_path)) != before
    (tmp_path / "reference_queries.json").write_text("not json", encoding="utf-8")
    assert run_inputs(config, options, tmp_path)["reference_queries"]["model"] is None


def test_runs_without_reference_ranking_ignore_the_file(tmp_path) -> None:
    """Another query mode, or no ranking stage: no input recorded, the run id is the one pinned before."""
    from ruwikibench.runner.execute import build_spec, run_inputs
    from tests.retrieval.synthetic import make_dataset

    dataset = make_dataset()
    _stored(tmp_path)
    generated, no_ranking = _ranked(query_mode="generated"), RunOptions(stages=["outline", "sections"])
    assert run_inputs(generated, RunOptions(), tmp_path) == {} == run_inputs(_ranked(), no_ranking, tmp_path)
    assert (
        run_id_for(generated, dataset, RunOptions(), run_inputs(generated, RunOptions(), tmp_path))
        == "r-586d8849"
    )
    assert (
        run_id_for(_ranked(), dataset, no_ranking, run_inputs(_ranked(), no_ranking, tmp_path))
        == "r-0ca768da"
    )
    assert "reference_queries" not in build_spec("r", generated, dataset, "data", RunOptions(), {})


def test_a_named_run_does_not_resume_with_other_reference_queries(tmp_path) -> None:
    rundir = RunDir(tmp_path)
    config = _config().model_dump(mode="json")
    stored = {"path": "q.json", "sha256": "a" * 64, "model": "m"}
    rundir.write_json("spec.json", {"config": config, "dataset": {"id": "d"}, "reference_queries": stored})
    check_same_run(rundir, {"config": config, "dataset": {"id": "d"}, "reference_queries": stored})
    missing_before = {
        "config": config,
        "dataset": {"id": "d"},
        "reference_queries": {**stored, "sha256": None},
    }
    check_same_run(rundir, missing_before)  # the file appeared: the failed ranking units are rerun
    changed = {"config": config, "dataset": {"id": "d"}, "reference_queries": {**stored, "sha256": "b" * 64}}
    with pytest.raises(ValueError, match="other stored reference queries"):
        check_same_run(rundir, changed)
