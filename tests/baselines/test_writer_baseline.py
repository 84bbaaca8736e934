"""The writer's extractive baseline: built by hand-checkable rules from the article's own snippets in BM25
order, scored by the writer's own scoring in every writer run (``run stage writer``, ``write --batch``,
``score-outputs --stage writer``), and its paired verdicts: a planted good article beats it, junk loses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ruwikibench.baselines import BaselineSkipped
from ruwikibench.baselines.writer import HEADINGS, extractive
from ruwikibench.conf.builtin_options import WriterConfig
from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.similarity import split_sentences
from ruwikibench.external.score import ExternalOptions, score_outputs
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.retrieval.bm25 import BM25Index
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import Unit
from ruwikibench.stage.registry import get_stage
from ruwikibench.storage.results import read_metrics, stage_dicts
from ruwikibench.storage.rundir import RunDir
from tests.graphs.writer_fixture import TITLE, HashEmbedder, make_context, make_dataset

WRITER_TABLES = ("outline", "sections", "writer")


def _context(dataset: Dataset, per_section: int = 5) -> StageContext:
    config = RunConfig(name="writer-baseline", models={}).with_profile("writer")
    config.stage_options["writer"] = WriterConfig(per_section=per_section)
    return StageContext(
        config=config, llm=LLM({}, 2), embedder=HashEmbedder(), prompts=PromptLibrary(), dataset=dataset
    )


def _unit(article: str = TITLE) -> Unit:
    return Unit(stage="writer", article=article, unit_id="article", input={"title": article})


def test_the_extractive_article_by_hand() -> None:
    """Six own snippets, two per section: lead from the top snippet, then «История Москва» (ranks 2-3),
    «Описание Москва» (4-5), «Применение Москва» (6); the order is BM25's for the title among the article's
    own snippets (snippets sharing no term with it after them, in corpus order)."""
    dataset = make_dataset()
    made = extractive(_unit(), {}, _context(dataset, per_section=2))
    own = [s.id for s in dataset.snippets_of(TITLE)]
    hits = BM25Index.build(dataset, "lemma").search(TITLE, len(dataset.snippets))
    by_bm25 = [h.snippet_id for h in hits if h.snippet_id in own]
    expected = by_bm25 + [i for i in own if i not in by_bm25]
    ranked = [s["snippet_id"] for s in made["sources"]]
    assert ranked == expected and sorted(ranked) == sorted(own)  # the article's own snippets only
    text = {s.id: s.text for s in dataset.snippets}
    article = made["article"]
    assert article["lead"] == " ".join(split_sentences(text[ranked[0]])[:3])
    assert [s["title"] for s in article["sections"]] == [
        "История Москва",
        "Описание Москва",
        "Применение Москва",
    ]
    first = " ".join(" ".join(split_sentences(text[i])[:2]) for i in ranked[1:3])
    assert article["sections"][0]["text"] == first
    assert article["sections"][2]["shown_snippets"] == [ranked[5]]
    assert [o["title"] for o in article["outline"]] == [s["title"] for s in article["sections"]]
    assert len(HEADINGS) == 5 and all("{title}" in h for h in HEADINGS)  # no bare title echo


def test_it_is_scored_by_the_writer_score_and_skips_an_article_without_snippets() -> None:
    dataset = make_dataset()
    context = _context(dataset)
    made = extractive(_unit(), {}, context)
    records = get_stage("writer").checked_score(_unit(), made, context).records
    assert [r.stage for r in records].count("sections") == 4  # the lead and three reference sections
    whole = next(r for r in records if r.stage == "writer")
    assert whole.metrics["source_precision"] == 1.0 and whole.metrics["source_recall"] == 1.0
    assert whole.metrics["f1"] > 0 and whole.metrics["rouge_l"] > 0
    empty = Dataset(
        articles=dataset.articles,
        sources=dataset.sources,
        snippets=[s for s in dataset.snippets if s.article != TITLE],
    )
    with pytest.raises(BaselineSkipped, match="no snippets"):
        extractive(_unit(), {}, _context(empty))


def _baseline_rows(rundir: RunDir) -> list[dict[str, Any]]:
    return [r for r in rundir.read("baselines.jsonl") if r["baseline"] == "extractive"]


async def test_a_writer_run_has_the_baseline_and_its_verdicts(tmp_path: Path) -> None:
    """``run stage writer`` with the scripted writer model: the baseline scored for every article in the
    three writer tables, compared in metrics.json and report.md."""
    context, _ = make_context(tmp_path)
    options = RunOptions(stages=["writer"], out=tmp_path / "runs", progress=False)
    rundir = await execute(context, "mem", options)
    rows = _baseline_rows(rundir)
    articles = {a.name for a in context.dataset.articles}
    assert {(r["stage"], r["article"]) for r in rows if r["stage"] != "sections"} == {
        (stage, a) for stage in ("outline", "writer") for a in articles
    }
    metrics = stage_dicts(read_metrics(rundir))
    for stage in WRITER_TABLES:
        assert list(metrics[stage]["baselines"]) == ["extractive"]
        compared = metrics[stage]["vs_baseline"]
        assert compared and all(v["baseline"] == "extractive" for v in compared.values())
    assert set(metrics["writer"]["vs_baseline"]) == {"f1", "rouge_l"}  # not the source columns
    assert {"f1", "rouge_l", "bleu"} <= set(metrics["sections"]["vs_baseline"])
    report = rundir.file("report.md").read_text(encoding="utf-8")
    assert report.count("| ↳ baseline: extractive |") >= 2 * len(WRITER_TABLES)  # both views
    assert "best baseline (extractive)" in report


def _markdown(article: Any, junk: bool) -> str:
    if junk:
        return "Кошки спят на тёплом подоконнике.\n\n## Разное\nКошки любят молоко и мурлычут по вечерам."
    parts = [article.root.text()]
    for section in article.sections()[1:]:
        parts.append(f"## {section.title}\n{section.text()}")
    return "\n\n".join(parts)


@pytest.mark.parametrize(("junk", "verdict"), [(False, "better"), (True, "worse")])
def test_a_good_article_beats_the_baseline_and_junk_loses(tmp_path: Path, junk: bool, verdict: str) -> None:
    """Planted whole articles scored by ``score-outputs --stage writer``: the reference text itself beats
    the extractive article on section F1 and ROUGE-L (paired over the 10 sections of the 3 articles),
    unrelated text about cats loses to it."""
    dataset = make_dataset()
    context = _context(dataset)
    rows = [{"article": a.name, "markdown": _markdown(a, junk)} for a in dataset.articles]
    path = tmp_path / "planted.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    rundir = score_outputs(
        context, "synthetic", ExternalOptions(stage="writer", outputs=path, out=tmp_path / "runs")
    )
    metrics = stage_dicts(read_metrics(rundir))
    sections = metrics["sections"]["vs_baseline"]
    for key in ("f1", "rouge_l"):
        assert sections[key]["baseline"] == "extractive" and sections[key]["items"] == 10
        assert sections[key]["verdict"] == verdict, (key, sections[key])
    whole = metrics["writer"]["vs_baseline"]["rouge_l"]["difference"]["mean"]
    assert (whole > 0) is not junk  # 3 articles: the sign, not significance (p ≥ 0.25 at n = 3)
