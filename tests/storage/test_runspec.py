"""spec.json typed and versioned (ruwikibench.storage.runspec): old run directories (no format_version, older
stage names) read, score, report and resume; a bad spec.json names the file and the field; the run ids of
existing configurations are the ids the code computed before the run orchestrator (runner/open_run.py)
existed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import ruwikibench
from ruwikibench.conf.config import RunConfig, RunInputError
from ruwikibench.storage.rundir import NotARunDir
from ruwikibench.storage.runspec import FORMAT_VERSION, InvalidSpec, read_spec
from tests.cli.small_runs import fake_setup


def _unversioned(spec: dict[str, Any]) -> dict[str, Any]:
    """A spec.json as runs wrote it before format_version: no version, no mode for benchmark runs."""
    old = {k: v for k, v in spec.items() if k not in ("format_version", "mode")}
    assert "format_version" in spec  # the current format writes it
    return old


def _write(path: Path, data: Any) -> bytes:
    path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    return path.read_bytes()


def test_an_unversioned_spec_is_upgraded_in_memory_never_rewritten(tmp_path: Path) -> None:
    spec = {
        "run_id": "old",
        "dataset": {"id": "d", "path": "data", "params": {}},
        "config": {"name": "old"},
        "options": {"stages": ["ranking", "article"], "articles": 2, "article_names": None},
        "external": {
            "stage": "article",
            "file": "x.jsonl",
            "sha256": "ab",
            "copy": "external_outputs.jsonl",
            "storm_dir": "/storm",
        },
        "units": {"total": 3, "run_now": 3, "scored_on_resume": 0},
        "some_key_of_another_version": 1,
    }
    before = _write(tmp_path / "spec.json", spec)
    read = read_spec(tmp_path)
    assert read.format_version == FORMAT_VERSION and read.mode == "benchmark"
    assert (
        read.stages == ["ranking", "writer"] and read.external is not None and read.external.stage == "writer"
    )
    assert read.external.copy_name == "external_outputs.jsonl" and read.external.model_extra == {
        "storm_dir": "/storm"
    }
    assert read.units is not None and read.units.total == 3 and read.dataset_id == "d"
    assert read.record()["some_key_of_another_version"] == 1  # kept, not dropped
    assert read_spec(tmp_path / "spec.json") == read  # the directory or the file
    assert (tmp_path / "spec.json").read_bytes() == before


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"dataset": {"path": "data"}}, "field 'dataset.id': Field required"),
        ({"options": {"stages": "ranking"}}, "field 'options.stages': Input should be a valid list"),
        ({"units": {"total": "many"}}, "field 'units.total': Input should be a valid integer"),
        ({"format_version": "one"}, "field 'format_version': 'one' is not a format version"),
        ({"format_version": FORMAT_VERSION + 1}, f"field 'format_version': {FORMAT_VERSION + 1} is newer"),
        ([1, 2], "not a run spec (a JSON object expected, found list)"),
    ],
)
def test_a_bad_spec_names_the_file_and_the_field(tmp_path: Path, data: Any, message: str) -> None:
    _write(tmp_path / "spec.json", data)
    with pytest.raises(InvalidSpec) as raised:
        read_spec(tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'spec.json'}: ") and message in str(raised.value)
    assert isinstance(raised.value, RunInputError)  # the CLI prints it as one line


def test_a_missing_or_unreadable_spec_says_so(tmp_path: Path) -> None:
    with pytest.raises(NotARunDir, match="spec.json: not found"):
        read_spec(tmp_path)
    (tmp_path / "spec.json").write_text("{", encoding="utf-8")
    with pytest.raises(NotARunDir, match="not readable JSON"):
        read_spec(tmp_path)


def test_a_recorded_config_that_is_not_one_names_the_field(tmp_path: Path) -> None:
    _write(tmp_path / "spec.json", {"run_id": "r", "config": {"models": "none"}})
    with pytest.raises(InvalidSpec, match=r"spec\.json: field 'config' is not a valid run config \(models"):
        read_spec(tmp_path).run_config(tmp_path / "spec.json")


def test_an_old_run_directory_reads_scores_reports_and_resumes(tmp_path: Path, monkeypatch) -> None:
    with fake_setup(tmp_path, monkeypatch) as (_, configs, model):
        run = ruwikibench.run(
            configs[0], tmp_path / "data", stages=["ranking", "outline"], out=tmp_path / "runs"
        )
        spec_path = run.path / "spec.json"
        old_bytes = _write(spec_path, _unversioned(json.loads(spec_path.read_text(encoding="utf-8"))))
        assert read_spec(run.path).mode == "benchmark" and read_spec(run.path).stages == [
            "ranking",
            "outline",
        ]

        scored = ruwikibench.score(run.path)
        assert scored.metrics == run.metrics and scored.exit_status == 0
        report = ruwikibench.report([run.path], out=tmp_path / "report")
        assert run.run_id in report.read_text(encoding="utf-8")
        assert spec_path.read_bytes() == old_bytes  # read, scored and reported: never rewritten

        requests = model.requests
        again = ruwikibench.run(
            configs[0], tmp_path / "data", stages=["ranking", "outline"], out=tmp_path / "runs"
        )
        assert again.path == run.path and model.requests == requests  # resumed: every unit was done
        assert again.metrics == run.metrics
        resumed = json.loads(spec_path.read_text(encoding="utf-8"))
        assert resumed["format_version"] == FORMAT_VERSION and resumed["units"]["run_now"] == 0


PINNED = {  # computed by the code before runner/open_run.py, with tests/retrieval/synthetic.make_dataset()
    "default": "r-a7a4a4e6",
    "outline2": "r-1447c96b",
    "sections_named": "r-f8a48274",
    "refq": "r-f0130af6",
    "refq_missing": "r-f7734bc2",
    "batch": "r-writer-4ca78c5c",
    "batch2": "r-writer-be026904",
    "external": "external-outline-047ffde7",
    "external_w": "external-writer-4be6c990",
}


def _ids() -> dict[str, str]:
    from ruwikibench.external.score import ExternalOptions, external_run_id
    from ruwikibench.runner.execute import RunOptions, run_id_for
    from ruwikibench.writer.batch import BatchOptions, batch_run_id
    from tests.retrieval.synthetic import make_dataset

    dataset = make_dataset()

    def config(**extra: Any) -> RunConfig:
        model = {"name": "fake", "endpoints": ["http://127.0.0.1:8000/v1"]}
        return RunConfig.model_validate({"name": "r", "models": {"writer": model}, **extra})

    reference = config(ranking={"query_mode": "reference"})
    stored = {"path": "/data/reference_queries.json", "sha256": "ab" * 32, "model": "fake"}
    missing = {"path": "/data/reference_queries.json", "sha256": None, "model": None}

    class Context:  # what batch_run_id reads of a StageContext
        def __init__(self) -> None:
            self.config, self.dataset = config(), dataset

    outputs = Path("x.jsonl")
    return {
        "default": run_id_for(config(), dataset, RunOptions()),
        "outline2": run_id_for(config(), dataset, RunOptions(stages=["outline"], articles=2)),
        "sections_named": run_id_for(
            config(), dataset, RunOptions(stages=["sections"], article_names=[dataset.articles[0].name])
        ),
        "refq": run_id_for(reference, dataset, RunOptions(stages=["ranking"]), {"reference_queries": stored}),
        "refq_missing": run_id_for(
            reference, dataset, RunOptions(stages=["ranking"]), {"reference_queries": missing}
        ),
        "batch": batch_run_id(Context(), BatchOptions()),  # type: ignore[arg-type]
        "batch2": batch_run_id(Context(), BatchOptions(articles=2)),  # type: ignore[arg-type]
        "external": external_run_id(
            "outline", "cd" * 32, dataset, ExternalOptions(stage="outline", outputs=outputs)
        ),
        "external_w": external_run_id(
            "writer", "cd" * 32, dataset, ExternalOptions(stage="writer", outputs=outputs, articles=3)
        ),
    }


def test_run_ids_of_existing_configurations_do_not_change() -> None:
    """Runs, writer batches and external runs resume into the directories they had."""
    assert _ids() == PINNED
