"""The order units start in: article by article, each article's stages in stage order (runner/execute.py
``Runner.pending_units``), so the ranking units' independent judgements fill the request slots that the other
stages' chains leave free; units already done are left out and still counted."""

from __future__ import annotations

from pathlib import Path

from ruwikibench.runner.execute import Runner, RunOptions
from ruwikibench.runner.setup import build_context
from ruwikibench.storage.rundir import RunDir
from tests.graphs.writer_fixture import make_dataset
from tests.runner.sample_run import sample_config

STAGES = ["ranking", "outline", "sections"]


def _runner(tmp_path: Path) -> Runner:
    context = build_context(sample_config("http://127.0.0.1:9/v1", tmp_path / "cache"), make_dataset())
    return Runner(context, RunDir(tmp_path / "run"), RunOptions(stages=STAGES, out=tmp_path, progress=False))


def _article_runs(units: list) -> list[str]:
    """The articles in the order their units come, each run of consecutive units of one article once."""
    runs: list[str] = []
    for unit in units:
        if not runs or runs[-1] != unit.article:
            runs.append(unit.article)
    return runs


def test_units_come_article_by_article_in_stage_order(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    articles = runner.context.dataset.articles  # type: ignore[union-attr]
    assert len(articles) >= 2
    units, total = runner.pending_units(articles)
    assert total == len(units)
    assert _article_runs(units) == [a.name for a in articles]  # never back to an article once past it
    for article in articles:
        stages = [u.stage for u in units if u.article == article.name]
        assert stages == sorted(stages, key=STAGES.index)  # ranking, then outline, then the sections
        assert set(stages) == set(STAGES)


def test_done_units_are_left_out_and_counted(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    articles = runner.context.dataset.articles  # type: ignore[union-attr]
    units, total = runner.pending_units(articles)
    done = units[1]
    runner.rundir.append(
        "outputs.jsonl",
        {
            "stage": done.stage,
            "article": done.article,
            "unit": done.unit_id,
            "input": done.input,
            "output": {},
        },
    )
    again, total_again = runner.pending_units(articles)
    assert total_again == total
    assert [u for u in units if u is not done] == again
