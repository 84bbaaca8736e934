"""The writer registered as the 'writer' stage: run by the ordinary runner under the writer profile."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ruwikibench.conf.config import ConfigError
from ruwikibench.conf.loader import load_config
from ruwikibench.reporting.jsonl_index import JsonlIndex
from ruwikibench.runner.execute import RunOptions, execute, finalize
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.rundir import RunDir
from tests.graphs.writer_fixture import TITLE, make_context


async def test_the_writer_runs_as_a_stage(tmp_path: Path) -> None:
    context, _ = make_context(tmp_path)
    options = RunOptions(stages=["writer"], article_names=[TITLE], out=tmp_path / "runs", progress=False)
    rundir = await execute(context, "mem", options)
    spec = rundir.read_json("spec.json")
    assert (
        spec["profile"] == "writer"
        and spec["config"]["stage_options"]["ranking"]["query_mode"] == "generated"
    )
    assert list(rundir.read("errors.jsonl")) == []
    records = list(rundir.read("results.jsonl"))
    assert {r["stage"] for r in records} == {"outline", "sections", "writer"}
    article = next(r for r in records if r["stage"] == "writer")
    # the fake model writes from the selected snippets, all of the article's own sources (the fixture's
    # corpus)
    assert article["metrics"]["source_precision"] == 1.0 and article["metrics"]["sources_selected"] == 6
    assert {"f1", "rouge_l", "cited_own_share"} <= set(article["metrics"])
    texts = list(rundir.read("generated.jsonl"))
    assert {t["stage"] for t in texts} >= {"outline", "writer"}
    assert (
        vars(get_stage("writer")) == {}
    )  # the texts come back with score()'s records: no state between calls
    nodes = {n["node"] for n in rundir.read("nodes.jsonl")}
    assert {
        "select_sources",
        "assign",
        "write_lead",
        "merge",
    } <= nodes  # writer and stage subgraph nodes captured


def test_the_writer_stage_needs_the_writer_profile(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("models:\n  writer: {name: m}\nstages: [writer]\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match="stages.0: stage 'writer' runs under profile writer; set 'profile: writer'"
    ):
        load_config(path)
    path.write_text("profile: writer\nmodels:\n  writer: {name: m}\nstages: [writer]\n", encoding="utf-8")
    assert load_config(path).stages == ["writer"]


def test_a_config_naming_the_writer_article_runs_the_writer_stage(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("profile: writer\nmodels:\n  writer: {name: m}\nstages: [article]\n", encoding="utf-8")
    renamed = load_config(path)
    path.write_text("profile: writer\nmodels:\n  writer: {name: m}\nstages: [writer]\n", encoding="utf-8")
    assert renamed.stages == ["writer"] and renamed.identity() == load_config(path).identity()


async def test_overrides_reach_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An 'outline.merge' node override (a stage node) changes the outline `ruwikibench write` produces; the
    spec of the written article records it."""
    import json

    from ruwikibench.writer.run import write_article

    (tmp_path / "my_merge.py").write_text(
        "async def merge(state, runtime):\n    return {'merged_text': '## Своё начало\\n## Свой конец'}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    context, _ = make_context(tmp_path)
    context.config.overrides = {"outline.merge": "my_merge:merge"}
    result = await write_article(context, TITLE, tmp_path / "out")
    assert result.article is not None
    assert [item.title for item in result.article.outline] == ["Своё начало", "Свой конец"]
    saved = json.loads(result.paths["json"].read_text(encoding="utf-8"))
    assert saved["overrides"]["outline.merge"]["target"] == "my_merge:merge"


async def test_a_run_written_when_the_writer_was_named_article_reads_as_writer(tmp_path: Path) -> None:
    context, _ = make_context(tmp_path)
    options = RunOptions(stages=["article"], article_names=[TITLE], out=tmp_path / "runs", progress=False)
    assert options.stages == ["writer"] and get_stage("article") is get_stage("writer")
    rundir = await execute(context, "mem", options)
    old = RunDir(tmp_path / "old")
    shutil.copytree(rundir.path, old.path)
    for name in ("outputs.jsonl", "results.jsonl", "generated.jsonl", "nodes.jsonl"):
        path = old.file(name)
        path.write_text(path.read_text("utf-8").replace('"stage": "writer"', '"stage": "article"'), "utf-8")
    assert '"stage": "article"' in old.file("results.jsonl").read_text("utf-8")  # the old name is on disk
    assert {r["stage"] for r in old.results()} == {"outline", "sections", "writer"}
    assert {o["stage"] for o in old.outputs()} == {"writer"}
    assert finalize(old)["writer"]["counts"] == finalize(rundir)["writer"]["counts"]
    assert JsonlIndex(old.file("outputs.jsonl")).units() == JsonlIndex(rundir.file("outputs.jsonl")).units()


@pytest.mark.parametrize("key", ["writer.write_lead", "article.write_lead"])  # "article": the earlier name
async def test_a_writer_node_override_replaces_the_lead(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ruwikibench.writer.run import write_article

    (tmp_path / "my_lead.py").write_text(
        "async def write_lead(state, runtime):\n"
        "    return {'lead': 'Своё вступление.', 'lead_cited': [], 'lead_markers': {}}\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    context, _ = make_context(tmp_path)
    context.config.overrides = {key: "my_lead:write_lead"}
    result = await write_article(context, TITLE, tmp_path / "out")
    assert result.article is not None and result.article.lead == "Своё вступление."
