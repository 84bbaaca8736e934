"""Writer-mode scoring: hand-computed cases (a copy of the reference scores 1, nothing scores 0), matching,
source shares; the batch run directory in the runner's layout."""

from __future__ import annotations

import asyncio
import json

import pytest

from ruwikibench.nodes.citations import Citation
from ruwikibench.writer.batch import BatchOptions, write_batch
from ruwikibench.writer.models import OutlineItem, WrittenArticle, WrittenSection
from ruwikibench.writer.score import best_matches, score_written, source_metrics
from tests.graphs.writer_fixture import TITLE, make_context


def copy_of_reference(article, reverse: bool = True) -> WrittenArticle:
    """The reference article itself as a written article (by default in reverse order: matching must work)."""
    body = article.sections()[1:]
    sections = [
        WrittenSection(id=f"g{i}", level=s.level, title=s.title, text=s.text() + " [1]")
        for i, s in enumerate(reversed(body) if reverse else body)
    ]
    return WrittenArticle(
        title=article.title,
        lead=article.root.text(),
        outline=[OutlineItem(id=s.id, level=s.level, title=s.title) for s in sections],
        sections=sections,
    )


def test_a_copy_of_the_reference_scores_one(tmp_path) -> None:
    context, _ = make_context(tmp_path)
    article = context.dataset.article(TITLE)
    records = score_written(article, copy_of_reference(article), [], context)
    by_stage = {}
    for record in records:
        by_stage.setdefault(record.stage, []).append(record)
    assert by_stage["outline"][0].metrics["f1"] == pytest.approx(1.0)
    sections = by_stage["sections"]
    assert [r.item for r in sections] == [s.id for s in article.sections()]
    for record in sections:
        assert record.metrics["f1"] == pytest.approx(1.0) and record.metrics["rouge_l"] == pytest.approx(1.0)
        if record.item != "s0":
            assert record.info["matched_title"] == record.info["title"]  # found despite the reversed order
    whole = by_stage["writer"][0].metrics
    assert whole["f1"] == pytest.approx(1.0)  # the same sentences
    assert whole["rouge_l"] < 1.0  # but in another order: the longest common subsequence is shorter
    in_order = score_written(article, copy_of_reference(article, reverse=False), [], context)[-1].metrics
    assert in_order["rouge_l"] == pytest.approx(1.0)


def test_an_empty_article_scores_zero(tmp_path) -> None:
    context, _ = make_context(tmp_path)
    article = context.dataset.article(TITLE)
    records = score_written(article, WrittenArticle(title=TITLE), [], context)
    outline, *sections, whole = records
    assert outline.metrics["f1"] == 0.0
    assert all(r.metrics["f1"] == 0.0 and r.metrics["rouge_l"] == 0.0 for r in sections)
    assert whole.metrics["f1"] == 0.0 and whole.metrics["source_recall"] == 0.0


def test_best_matches_and_source_shares(tmp_path) -> None:
    context, _ = make_context(tmp_path)
    matches = best_matches(
        ["кот спит", "собака лает громко"], ["собака лает", "кот спит дома", "птица"], context
    )
    assert [m[0] for m in matches] == [1, 0]
    article = context.dataset.article(TITLE)
    own = [s.id for s in context.dataset.snippets_of(TITLE)]  # six snippets
    written = WrittenArticle(
        title=TITLE,
        references=[
            Citation(n=1, snippet_id=own[0], source_id=""),
            Citation(n=2, snippet_id="Python/src0#0", source_id=""),
        ],
    )
    shares = source_metrics(
        article, written, [own[0], own[1], "Python/src0#0", "Python/src0#1"], context.dataset
    )
    assert shares == {"source_recall": 2 / 6, "source_precision": 2 / 4, "cited_own_share": 1 / 2}


def test_batch_writes_scores_and_resumes(tmp_path) -> None:
    context, chat = make_context(tmp_path)
    options = BatchOptions(article_names=[TITLE], out=tmp_path / "runs", run_id="w", progress=False)
    rundir = asyncio.run(write_batch(context, "synthetic", options))
    metrics = json.loads((rundir.path / "metrics.json").read_text(encoding="utf-8"))
    assert {"outline", "sections", "writer"} <= set(metrics)
    assert metrics["sections"]["counts"]["evaluated"] == 4  # the lead and three sections with reference text
    assert (rundir.path / "articles" / TITLE / "article.html").exists()
    report = (rundir.path / "report.md").read_text(encoding="utf-8")
    assert "## outline" in report and "## sections" in report and "## writer (whole article" in report
    assert report.count("\n## writer") == 1  # the whole-article table once, with its title
    assert {"f1_floor", "f1_rescaled"} <= set(metrics["outline"]["metrics"])  # floored as the stage tables
    assert {"f1_floor", "f1_rescaled"} <= set(metrics["sections"]["metrics"])
    for stage in ("outline", "sections", "writer"):  # the writer's no-LLM baseline beside the run, compared
        assert list(metrics[stage]["baselines"]) == ["extractive"] and metrics[stage]["vs_baseline"]
    spec = json.loads((rundir.path / "spec.json").read_text(encoding="utf-8"))
    assert spec["mode"] == "writer"
    # citation faithfulness: each section sentence names the tag of the snippet it cites (supported); the
    # lead's "Москва — город [n]." names none (unsupported); the writer removed the out-of-range markers
    citations = json.loads((rundir.path / "citations.json").read_text(encoding="utf-8"))["overall"]["counts"]
    assert (citations["cited"], citations["supported"], citations["unsupported"]) == (10, 9, 1)
    assert "## citation faithfulness" in report.split("## writer (whole article")[1]
    calls = len(chat.calls)
    asyncio.run(write_batch(context, "synthetic", options))  # already written: nothing to do
    assert len(chat.calls) == calls


def test_batch_resumes_a_failed_article_from_its_checkpoint(tmp_path) -> None:
    from tests.graphs.writer_fixture import kind

    context, chat = make_context(tmp_path)
    answer = chat.responder
    failing = {"on": True}

    def flaky(messages):  # the outline merge fails in the first session
        if failing["on"] and kind(messages[-1]["content"]) == "merge":
            raise RuntimeError("server went away")
        return answer(messages)

    chat.responder = flaky
    options = BatchOptions(article_names=[TITLE], out=tmp_path / "runs", run_id="w", progress=False)
    rundir = asyncio.run(write_batch(context, "synthetic", options))
    errors = [json.loads(line) for line in (rundir.path / "errors.jsonl").read_text("utf-8").splitlines()]
    assert {e["stage"] for e in errors} == {"outline", "sections", "writer"}
    assert "server went away" in errors[0]["reason"]
    judged = sum(kind(m[-1]["content"]) == "relevance" for m in chat.calls)
    failing["on"] = False
    rundir = asyncio.run(write_batch(context, "synthetic", options))
    assert sum(kind(m[-1]["content"]) == "relevance" for m in chat.calls) == judged  # ranking not rerun
    metrics = json.loads((rundir.path / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["writer"]["counts"] == {**metrics["writer"]["counts"], "evaluated": 1, "failed_units": 0}
