"""The writer registered as the 'article' stage: run by the ordinary runner under the writer profile."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruwikibench.config import ConfigError
from ruwikibench.config_loader import load_config
from ruwikibench.registry import get_stage
from ruwikibench.runner.execute import RunOptions, execute
from tests.graphs.writer_fixture import TITLE, make_context


async def test_the_writer_runs_as_the_article_stage(tmp_path: Path) -> None:
    context, _ = make_context(tmp_path)
    options = RunOptions(stages=["article"], article_names=[TITLE], out=tmp_path / "runs", progress=False)
    rundir = await execute(context, "mem", options)
    spec = rundir.read_json("spec.json")
    assert spec["profile"] == "writer" and spec["config"]["ranking"]["query_mode"] == "generated"
    assert list(rundir.read("errors.jsonl")) == []
    records = list(rundir.read("results.jsonl"))
    assert {r["stage"] for r in records} == {"outline", "sections", "article"}
    article = next(r for r in records if r["stage"] == "article")
    # the fake model writes from the selected snippets, all of the article's own sources (the fixture's corpus)
    assert article["metrics"]["source_precision"] == 1.0 and article["metrics"]["sources_selected"] == 6
    assert {"f1", "rouge_l", "cited_own_share"} <= set(article["metrics"])
    texts = list(rundir.read("generated.jsonl"))
    assert {t["stage"] for t in texts} >= {"outline", "article"}
    unit = get_stage("article").units(context.dataset, context.dataset.article(TITLE), context.config)[0]
    assert get_stage("article").texts(unit, {}) == []  # handed out once, to the runner
    nodes = {n["node"] for n in rundir.read("nodes.jsonl")}
    assert {"select_sources", "assign", "write_lead", "merge"} <= nodes  # writer and stage subgraph nodes captured


def test_the_article_stage_needs_the_writer_profile(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("models:\n  writer: {name: m}\nstages: [article]\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="stages.0: stage 'article' runs under profile writer; set 'profile: writer'"):
        load_config(path)
    path.write_text("profile: writer\nmodels:\n  writer: {name: m}\nstages: [article]\n", encoding="utf-8")
    assert load_config(path).stages == ["article"]


async def test_overrides_reach_the_writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An 'outline.merge' node override (a stage node) changes the outline `ruwikibench write` produces; the spec
    of the written article records it."""
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
