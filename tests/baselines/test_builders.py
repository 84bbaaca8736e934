"""The no-LLM baselines' outputs, by hand: what each builds from gold input, deterministically."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ruwikibench.baselines import BaselineSkipped
from ruwikibench.baselines.outline import TEMPLATE, frequent_headings, template, title_template
from ruwikibench.baselines.ranking import bm25_order, random_order
from ruwikibench.baselines.sections import lead_text, random_text
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.runner.stage import get_stage
from ruwikibench.stage.contract import Unit
from tests.graphs.writer_fixture import make_dataset


def _outline_unit(article: str, headings: list[str]) -> Unit:
    return Unit(
        stage="outline",
        article=article,
        unit_id="article",
        input={"title": article, "snippets": [], "headings": headings},
    )


def _titles(output: dict[str, Any]) -> list[str]:
    return [h["title"] for h in output["outline"]]


def _article(name: str, titles: list[str]) -> SimpleNamespace:
    return SimpleNamespace(name=name, h2_titles=lambda: titles)


def test_every_builtin_stage_has_its_baselines() -> None:
    names = {
        stage: [b.name for b in get_stage(stage).baselines]
        for stage in ("ranking", "outline", "sections", "writer")
    }
    assert names == {
        "ranking": ["bm25 order", "random order"],
        "outline": ["template", "title template", "frequent headings"],
        "sections": ["lead", "random sentences"],
        "writer": ["extractive"],
    }


def test_templates_read_nothing_but_the_title() -> None:
    unit = _outline_unit("Квантовый компьютер", ["Принцип работы", "История"])
    assert _titles(template(unit, {}, None)) == list(TEMPLATE)  # type: ignore[arg-type]
    titled = _titles(title_template(unit, {}, None))  # type: ignore[arg-type]
    assert titled[0] == "Квантовый компьютер" and "История Квантовый компьютер" in titled
    assert all(h["level"] == 2 for h in template(unit, {}, None)["outline"])  # type: ignore[arg-type]


def test_frequent_headings_leave_the_article_out() -> None:
    """Counts by article (a heading twice in one article counts once), case and ё folded; the article's own
    headings never count; k = the number of reference H2 headings; ties alphabetical."""
    dataset = SimpleNamespace(
        articles=[
            _article("A", ["История", "Свойства", "Свойства"]),
            _article("B", ["история", "Применение", "Ссылки"]),
            _article("C", ["История", "Применение", "Ёмкость"]),
            _article("D", ["Секрет D", "Ещё секрет"]),
            *(_article(name, [f"Эпилог {name}"]) for name in "EFG"),  # enough other articles to count
        ]
    )
    context = SimpleNamespace(dataset=dataset)
    got = _titles(frequent_headings(_outline_unit("D", ["x", "y", "z"]), {}, context))  # type: ignore[arg-type]
    assert got == ["История", "Применение", "Ёмкость"]  # 3, 2, then the first of the 1-article ties (е < с)
    assert "Секрет D" not in got
    own = _titles(frequent_headings(_outline_unit("C", ["x"]), {}, context))  # type: ignore[arg-type]
    assert own == ["История"]  # A and B still say История; C's own count is left out


def test_frequent_headings_need_five_other_articles() -> None:
    """On a tiny dataset the 'most frequent' headings are one other article's outline (the very reference its
    floor is drawn from): below 5 other articles with H2 headings the baseline is skipped, saying why."""
    articles = [_article(f"A{i}", ["История", f"Раздел {i}"]) for i in range(6)]
    articles.append(_article("Пустая", []))  # an article with no H2 heading does not count
    unit = _outline_unit("A0", ["x", "y"])
    built = frequent_headings(unit, {}, SimpleNamespace(dataset=SimpleNamespace(articles=articles)))  # type: ignore[arg-type]
    assert _titles(built)[0] == "История"
    with pytest.raises(
        BaselineSkipped, match="needs at least 5 other articles with H2 headings, the dataset has 4"
    ):
        frequent_headings(unit, {}, SimpleNamespace(dataset=SimpleNamespace(articles=articles[2:])))  # type: ignore[arg-type]


def _spec(snippets: list[str], reference: str, section: str = "s1") -> dict[str, Any]:
    return {
        "id": section,
        "title": "Т",
        "level": 2,
        "reference": reference,
        "snippets": [{"id": f"n{i}", "text": t, "source_id": "x"} for i, t in enumerate(snippets)],
    }


def test_lead_takes_first_sentences_round_robin_to_the_reference_length() -> None:
    spec = _spec(["Альфа один. Альфа два. Альфа три.", "Бета один. Бета два."], "слово " * 5)
    assert lead_text(spec) == "Альфа один. Бета один. Альфа два."  # 2 + 2 + 2 words >= 5
    assert lead_text(_spec(["Альфа один."], "слово " * 50)) == "Альфа один."  # all there is
    assert lead_text(_spec([], "слово слово")) == ""


def test_random_sentences_depend_on_the_section_key_only() -> None:
    snippets = [f"Предложение номер {i}. Ещё одно {i}." for i in range(10)]
    spec = _spec(snippets, "слово " * 12)
    first = random_text(spec, "A")
    assert first == random_text(dict(spec), "A")  # reproducible
    assert (
        random_text(_spec(snippets, "слово " * 12, section="s2"), "A") != first
    )  # another section, another draw
    pool = {s for t in snippets for s in t.replace(". ", ".|").split("|")}
    chosen = [s + "." for s in first.split(". ") if s]
    assert {c.rstrip(".") + "." for c in chosen} <= {p.rstrip(".") + "." for p in pool}
    assert 12 <= len(first.split()) < 12 + 4  # length matched (at most one sentence over)


def _ranking_output(order: list[str], bm25: list[str]) -> dict[str, Any]:
    candidates = [
        {
            "snippet_id": s,
            "rank": i + 1,
            "bm25_rank": bm25.index(s) + 1,
            "bm25_score": 1.0,
            "llm_score": None,
            "source": "logprobs",
        }
        for i, s in enumerate(order)
    ]
    return {
        "article": "A",
        "title": "A",
        "query": "q",
        "query_mode": "title",
        "pool_size": 4,
        "candidates": candidates,
        "error": None,
    }


def test_ranking_baselines_reorder_the_runs_own_pool() -> None:
    unit = Unit(stage="ranking", article="A", unit_id="article", input={})
    output = _ranking_output(["c", "a", "d", "b"], bm25=["a", "b", "c", "d"])
    bm25 = bm25_order(unit, output, None)  # type: ignore[arg-type]
    assert [c["snippet_id"] for c in bm25["candidates"]] == ["a", "b", "c", "d"]
    assert [c["rank"] for c in bm25["candidates"]] == [1, 2, 3, 4]
    shuffled = random_order(unit, output, None)  # type: ignore[arg-type]
    same_pool_other_order = _ranking_output(["b", "d", "a", "c"], bm25=["a", "b", "c", "d"])
    assert shuffled["candidates"] == random_order(unit, same_pool_other_order, None)["candidates"]  # type: ignore[arg-type]
    assert sorted(c["snippet_id"] for c in shuffled["candidates"]) == ["a", "b", "c", "d"]
    with pytest.raises(BaselineSkipped, match="empty"):
        bm25_order(unit, {**output, "candidates": []}, None)  # type: ignore[arg-type]
    no_bm25 = {
        **output,
        "candidates": [{k: v for k, v in c.items() if k != "bm25_rank"} for c in output["candidates"]],
    }
    with pytest.raises(BaselineSkipped, match="BM25"):
        bm25_order(unit, no_bm25, None)  # type: ignore[arg-type]


def test_bm25_baseline_scores_as_the_runs_bm25_columns() -> None:
    """Cross-check: the bm25 baseline, scored as a rerank, gets the run's own BM25 figures."""
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.prompts import PromptLibrary
    from ruwikibench.stage.context import StageContext

    dataset = make_dataset()
    relevant = [s.id for s in dataset.snippets_of("Python")]
    others = [s.id for s in dataset.snippets if s.article != "Python"][:6]
    pool = [others[0], relevant[0], others[1], others[2], relevant[1], others[3]]
    output = _ranking_output(list(reversed(pool)), bm25=pool)
    output["article"] = "Python"
    unit = Unit(stage="ranking", article="Python", unit_id="article", input={})
    config = RunConfig(name="t", models={"writer": {"name": "fake"}})
    context = StageContext(config=config, llm=None, embedder=None, prompts=PromptLibrary(), dataset=dataset)  # type: ignore[arg-type]
    stage = get_stage("ranking")
    run = stage.checked_score(unit, output, context).records[0].metrics
    base = stage.checked_score(unit, bm25_order(unit, output, context), context).records[0].metrics
    assert base["rerank_ndcg"] == pytest.approx(run["bm25_ndcg"])
    assert base["rerank_r_precision"] == pytest.approx(run["bm25_r_precision"])


def test_a_failed_baseline_comparison_is_said_in_the_report() -> None:
    from ruwikibench.reporting.tables import baseline_note
    from ruwikibench.storage.results import StageMetrics

    failed = StageMetrics(vs_baseline_error="ValueError: boom")
    note = baseline_note("sections", failed, "run A")
    assert "- run A: no comparison with the baselines (ValueError: boom)" in note
    assert baseline_note("sections", StageMetrics()) == []


def test_the_baselines_said_to_need_no_output_build_the_same_without_one() -> None:
    """``reads_output=False`` lets the scoring process score a baseline before its unit has an output: each
    such built-in builds the same output from an empty run output as from a real-looking one; ranking's read
    it."""
    dataset = make_dataset()
    context = SimpleNamespace(dataset=dataset)
    flags = {
        stage: {b.name: b.reads_output for b in get_stage(stage).baselines}
        for stage in ("ranking", "outline", "sections")
    }
    assert flags == {
        "ranking": {"bm25 order": True, "random order": True},
        "outline": {"template": False, "title template": False, "frequent headings": False},
        "sections": {"lead": False, "random sentences": False},
    }
    article = dataset.articles[0]
    for name in ("outline", "sections"):
        stage = get_stage(name)
        unit = stage.units(dataset, article, RunConfig(models={"writer": ModelConfig(name="w")}))[0]
        run_output = {
            "outline": [{"level": 2, "title": "Что-то"}],
            "results": [{"id": "x", "text": "Текст."}],
            "article": "другое",
            "k": 1,
        }
        for baseline in stage.baselines:
            assert _built(baseline, unit, {}, context) == _built(baseline, unit, run_output, context), (
                baseline.name
            )


def _built(baseline: Any, unit: Unit, output: dict[str, Any], context: Any) -> Any:
    """The baseline's output, or the reason it is skipped (the same reason from any run output)."""
    try:
        return baseline.build(unit, output, context)
    except BaselineSkipped as exc:
        return f"skipped: {exc}"
