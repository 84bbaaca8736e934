"""The example plug-in package (examples/rwb_plugins, importable through PYTHONPATH only — ruwikibench is not
edited) run through `ruwikibench run all` in a real process against a fake OpenAI-compatible endpoint, beside
a built-in run, compared in one `ruwikibench report`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ruwikibench.conf.loader import load_config
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.runner.overrides import check_overrides
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TITLE, FakeWriterModel, make_dataset

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rwb_plugins"
ONE_CALL = "Составь план статьи"


class Model(FakeWriterModel):
    """The writer fixture's answers plus the one-call outline prompt; counts the relevance requests."""

    def __init__(self) -> None:
        super().__init__(make_dataset())
        self.relevance = 0
        self.one_call = 0

    def __call__(self, messages):
        prompt = messages[-1]["content"]
        if ONE_CALL in prompt:
            self.one_call += 1
            return "# Москва\n## История города\n## География\n### Климат"
        answer = super().__call__(messages)
        if not isinstance(answer, str):
            self.relevance += 1
        return answer


def cli(*args: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(EXAMPLE)]), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ruwikibench", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        cwd=tmp,
    )


def _write_config(path: Path, name: str, url: str, tmp: Path, overrides: dict[str, str] | None) -> Path:
    config = {
        "name": name,
        "models": {"writer": {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 60}},
        "cache_dir": str(tmp / "cache"),
        "ranking": {"query_mode": "generated"},
        "stages": ["ranking", "outline"],
        "max_concurrency": 2,
    }
    if overrides:
        config["overrides"] = overrides
    path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return path


def _run_dir(result: subprocess.CompletedProcess) -> Path:
    assert result.returncode == 0, result.stdout + result.stderr
    return Path(result.stdout.split("run directory: ")[1].split()[0])


def test_the_shipped_example_config_loads_and_its_overrides_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    config = load_config(EXAMPLE / "configs" / "plugins.yaml")
    resolved = check_overrides(config)
    assert set(resolved) == {"outline", "ranking.rerank"}
    assert (
        resolved["outline"].record()["kind"] == "graph"
        and resolved["ranking.rerank"].record()["kind"] == "node"
    )


def test_plugins_run_beside_a_builtin_run_in_one_report(tmp_path: Path) -> None:
    save_dataset(make_dataset(), tmp_path / "data")
    model = Model()
    overrides = {
        "outline": "rwb_plugins.one_call_outline:build_graph",
        "ranking.rerank": "rwb_plugins.embedding_rerank:rerank",
    }
    with fake_openai_server(model) as url:
        builtin = _write_config(tmp_path / "builtin.yaml", "builtin", url, tmp_path, None)
        plugins = _write_config(tmp_path / "plugins.yaml", "plugins", url, tmp_path, overrides)
        common = ["--dataset", str(tmp_path / "data"), "--article", TITLE, "--out", str(tmp_path / "runs")]
        builtin_dir = _run_dir(cli("run", "all", "--config", str(builtin), *common, tmp=tmp_path))
        judged_by_llm = model.relevance
        plugin_dir = _run_dir(cli("run", "all", "--config", str(plugins), *common, tmp=tmp_path))
    assert judged_by_llm > 0 and model.relevance == judged_by_llm  # the plug-in reranks without the LLM
    assert model.one_call == 1

    nodes = [
        json.loads(line) for line in (plugin_dir / "nodes.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    by_node = {n["node"] for n in nodes}
    assert "outline_in_one_call" in by_node and "rerank" in by_node
    assert not {"cluster", "mini_outline", "merge"} & by_node  # the whole outline graph was replaced
    spec = json.loads((plugin_dir / "spec.json").read_text(encoding="utf-8"))
    assert {k: v["target"] for k, v in spec["overrides"].items()} == overrides
    assert all(len(v["sha256"]) == 64 for v in spec["overrides"].values())
    assert list(spec["overrides"]["outline"]["prompts"]) == ["rwb_plugins:prompts/one_call_outline.txt"]
    assert "rwb_plugins/prompts/one_call_outline.txt" in spec["overrides"]["outline"]["files"]

    metrics = json.loads((plugin_dir / "metrics.json").read_text(encoding="utf-8"))
    outline = metrics["outline"]["metrics"]["f1"]["failures_excluded"]["mean"]
    assert 0 < outline <= 1
    assert metrics["ranking"]["counts"]["failed_units"] == 0
    results = [
        json.loads(line) for line in (plugin_dir / "results.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    outline_record = next(r for r in results if r["stage"] == "outline")
    assert (
        outline_record["info"]["generated_scored"] == 3
    )  # История города, География, Климат (not the title)

    report = cli("report", str(builtin_dir), str(plugin_dir), "--out", str(tmp_path / "cmp"), tmp=tmp_path)
    assert report.returncode == 0, report.stdout + report.stderr
    text = (tmp_path / "cmp" / "report.md").read_text(encoding="utf-8")
    for stage in ("ranking", "outline"):
        section = text.split(f"## {stage} (")[1].split("\n## ")[0]
        assert builtin_dir.name in section and plugin_dir.name in section
    assert "override.outline.sha256" in text and "override.ranking.rerank.sha256" in text
