"""Small samples on the validity ladder: a ladder of too few items says "cannot decide" with an exit status of
its own (4), never FAIL (1) or PASS (0); heading proxies are distinct, so a parent heading and its first
subsection do not plant the same string twice and the replacements are not cut to the distinct ones. The
planted dataset is built here: two articles whose h2 sections have no text of their own, only subsections."""

from __future__ import annotations

import itertools
from pathlib import Path

import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.dataset import Article, Dataset, Paragraph, Section
from ruwikibench.evaluators.stats import Estimate, smallest_p
from ruwikibench.validity.check import (
    DECISIVE,
    EXIT_UNDECIDED,
    MIN_ITEMS,
    RUNGS,
    MetricCheck,
    Step,
    failed_headlines,
    undecided_headlines,
)
from ruwikibench.validity.ladder import heading_proxies, outline_items
from tests.graphs.writer_fixture import HashEmbedder

TOPICS = {
    "Альфа": {
        "История": {
            "Ранний период": "Поселение основали рыбаки у устья реки. Первые дома были деревянными и стояли "
            "на сваях. Через век здесь появилась каменная церковь.",
            "Новое время": "В девятнадцатом веке город стал центром торговли зерном. Железная дорога "
            "соединила его со столицей.",
        },
        "География": {
            "Климат": "Зима здесь мягкая и влажная, снег лежит недолго. Лето прохладное, часты туманы с "
            "моря.",
            "Рельеф": "Город стоит на низких холмах вдоль берега. Болота к северу осушены в прошлом веке.",
        },
        "Экономика": "Порт принимает суда с лесом и углём. Рыбный промысел кормит треть жителей.",
    },
    "Бета": {
        "Биография": {
            "Детство": "Композитор родился в семье органиста и рано начал играть на скрипке. Первые "
            "уроки ему давал отец.",
            "Учёба": "В консерватории он изучал контрапункт и оркестровку. Его дипломной работой стала "
            "симфония.",
        },
        "Творчество": {
            "Оперы": "Его оперы написаны на сюжеты народных сказок. Премьера первой прошла с успехом.",
            "Камерная музыка": "Квартеты он писал всю жизнь для друзей-музыкантов. Поздние квартеты "
            "сложны и мрачны.",
        },
        "Память": "Его именем названа улица и музыкальная школа. Ежегодно проходит фестиваль его музыки.",
    },
}
HEADINGS = 7  # per article: three h2, four h3


def _section(ids: itertools.count, level: int, title: str, body: str | dict) -> Section:
    if isinstance(body, str):
        return Section(id=f"s{next(ids)}", level=level, title=title, paragraphs=[Paragraph(text=body)])
    head = Section(id=f"s{next(ids)}", level=level, title=title)
    head.children = [_section(ids, level + 1, t, b) for t, b in body.items()]
    return head


def planted_dataset() -> Dataset:
    articles = []
    for title, sections in TOPICS.items():
        ids = itertools.count(1)
        root = Section(id="s0", level=1, title=title, paragraphs=[Paragraph(text=f"{title} — предмет.")])
        root.children = [_section(ids, 2, t, b) for t, b in sections.items()]
        articles.append(Article(title=title, name=title, root=root))
    return Dataset(articles=articles, sources=[], snippets=[])


def test_a_parent_heading_and_its_first_subsection_get_distinct_proxies() -> None:
    article = planted_dataset().articles[0]
    pairs = heading_proxies(article)
    assert [t for t, _ in pairs] == [s.title for s in article.sections() if s.level >= 2]
    proxies = [p for _, p in pairs]
    assert len(set(proxies)) == len(proxies) == HEADINGS
    found = dict(pairs)
    assert found["Ранний период"] == "Поселение основали рыбаки у устья реки. Первые дома"  # its own opening
    assert found["История"] == "Первые дома были деревянными и стояли на сваях."  # the next sentence below
    assert found["Экономика"] == "Порт принимает суда с лесом и углём. Рыбный"


def test_two_articles_plant_every_heading() -> None:
    """Each article's 7 headings are all planted: the other article has 7 distinct proxies to replace them
    with (duplicated proxies made it 5, and cut both articles' ladders to 5 units)."""
    items = outline_items(planted_dataset(), 2, "outline")
    assert len(items) == 2
    for item in items:
        restated, wrong = item.outputs["restated"][1], item.outputs["wrong article"][1]
        assert len(restated) == len(set(restated)) == HEADINGS
        assert len(wrong) == len(set(wrong)) == HEADINGS and not set(wrong) & set(restated)


def _check(n: int) -> MetricCheck:
    estimate = Estimate(mean=0.1, low=0.05, high=0.15, n=n)
    means = {rung: Estimate(mean=0.5 - 0.1 * i, low=0.0, high=1.0, n=n) for i, rung in enumerate(DECISIVE)}
    rescaled = {r: means.get(r, estimate) for r in RUNGS}
    steps = [Step(upper=a, lower=b, difference=estimate) for a, b in itertools.pairwise(DECISIVE)]
    return MetricCheck(
        stage="outline", metric="f1", floor=estimate, raw=rescaled, rescaled=rescaled, steps=steps
    )


def test_too_few_items_cannot_decide() -> None:
    """Every step separated (CI above 0) and monotone: PASS with 6 items, 'cannot decide' with 5 — the least
    n whose sign-flip test can reach p < 0.05."""
    assert MIN_ITEMS == 6 and smallest_p(5) >= 0.05 > smallest_p(6)
    enough, few = _check(6), _check(5)
    assert enough.passed and enough.reason() == "PASS"
    assert not few.passed and few.reason() == "cannot decide: 5 items, needs ≥ 6"
    assert failed_headlines([few]) == [] and undecided_headlines([few]) == ["outline/f1 (5 items, needs ≥ 6)"]
    assert undecided_headlines([enough]) == []


def test_check_metrics_on_two_articles_cannot_decide(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(planted_dataset(), tmp_path / "data")
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"name": "c", "models": {"writer": {"name": "fake"}}}), encoding="utf-8")
    args = ["--dataset", str(tmp_path / "data"), "--config", str(config), "--stage", "outline"]
    result = CliRunner().invoke(app, ["check-metrics", *args], terminal_width=1000)
    assert result.exit_code == EXIT_UNDECIDED == 4, result.output + repr(result.exception)
    output = " ".join(result.output.split())
    assert (
        "│ cannot decide: 2 │" in output
    )  # the verdict column (wrapped): 'cannot decide: 2 items, needs ≥ 6'
    assert "Headline metrics that cannot be decided: outline/f1 (2 items, needs ≥ 6)" in output
    assert "FAIL" not in output and "PASS:" not in output


def test_the_exit_status_is_in_the_help() -> None:
    result = CliRunner().invoke(app, ["check-metrics", "--help"], terminal_width=1000)
    assert result.exit_code == 0
    assert "4 none fails but one cannot be decided" in " ".join(result.output.split())
