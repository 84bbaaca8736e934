"""Entity metrics in the stages: sections and outline records, the writer's scoring, the report's columns."""

from __future__ import annotations

import pytest

from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.dataset import Article, Dataset, Paragraph, Section
from ruwikibench.evaluators.entities import KEYS, entity_scores
from ruwikibench.evaluators.outline import score_outline
from ruwikibench.evaluators.text_scores import text_scores
from ruwikibench.graphs.sections import score_section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.reporting.tables import stage_table
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import ScoreRecord, Unit
from ruwikibench.storage.results import StageMetrics
from ruwikibench.writer.score import score_written
from tests.evaluators.test_entities import _article_text
from tests.graphs.writer_fixture import HashEmbedder
from tests.sample import sample_dataset_or_skip
from tests.writer.test_score import copy_of_reference

REFERENCE = "Пётр Первый основал Санкт-Петербург. Позже столицу перенесли в Москву."
GENERATED = "Санкт-Петербург заложил Петр Первый. Город стоит на Неве."


def context(dataset: Dataset | None = None) -> StageContext:
    config = RunConfig(models={"writer": ModelConfig(name="fake")})
    return StageContext(
        config=config,
        llm=LLM({"writer": ScriptedChat(lambda _: "")}),
        embedder=HashEmbedder(),
        prompts=PromptLibrary(),
        dataset=dataset,
    )


def section_result(text: str) -> dict:
    return {
        "id": "s1",
        "title": "История",
        "level": 2,
        "status": "ok",
        "snippets_total": 1,
        "snippet_ids": ["x"],
        "groups": [],
        "calls": 1,
        "text": text,
    }


def test_a_scored_section_gets_entity_keys_beside_unchanged_text_scores() -> None:
    ctx = context()
    unit = Unit(stage="sections", article="a", unit_id="s1", input={})
    record = score_section(unit, {"reference": REFERENCE}, section_result(GENERATED), ctx)
    expected_text = text_scores(
        GENERATED, REFERENCE, ctx.embedder, tokenize=ctx.config.options(SectionsConfig).bleu_tokenize
    )
    assert {k: v for k, v in record.metrics.items() if k not in KEYS} == expected_text
    # reference {петр первый, санкт-петербург, москва}, generated {санкт-петербург, петр первый, нева}
    assert {k: record.metrics[k] for k in KEYS} == pytest.approx(
        {"entity_recall": 2 / 3, "entity_precision": 2 / 3, "entity_f1": 2 / 3}
    )
    empty = score_section(unit, {"reference": REFERENCE}, section_result(""), ctx).metrics
    assert empty["entity_recall"] == 0.0 and "entity_precision" not in empty
    plain = score_section(unit, {"reference": "Текст без имён."}, section_result(GENERATED), ctx).metrics
    assert not set(KEYS) & set(plain)


def article_with(headings: list[str]) -> Article:
    children = [
        Section(id=f"s{i}", level=2, title=h, paragraphs=[Paragraph(text="Текст.")])
        for i, h in enumerate(headings, 1)
    ]
    root = Section(
        id="s0", level=1, title="Пётр I", paragraphs=[Paragraph(text="Преамбула.")], children=children
    )
    return Article(title="Пётр I", name="Пётр I", root=root)


def test_outline_entities_over_joined_headings() -> None:
    article = article_with(["Основание Санкт-Петербурга", "Правление Петра Первого", "Ранние годы"])
    generated = [(2, "Пётр Первый и его реформы"), (2, "Санкт-Петербург"), (3, "Отношения со Швецией")]
    metrics = score_outline(article, generated, HashEmbedder()).metrics
    assert {k: metrics[k] for k in KEYS} == pytest.approx(
        {"entity_recall": 1.0, "entity_precision": 2 / 3, "entity_f1": 4 / 5}
    )
    no_entities = score_outline(article_with(["История", "Ранние годы"]), generated, HashEmbedder()).metrics
    assert not set(KEYS) & set(no_entities) and "f1" in no_entities


def test_report_shows_entity_columns_and_zeroed_ignores_absent_keys() -> None:
    with_entities = ScoreRecord(
        stage="sections", article="a", item="s1", metrics={"f1": 0.5, "entity_recall": 0.25, "entity_f1": 0.4}
    )
    failure = {"stage": "sections", "article": "b", "unit": "s1", "reason": "error: boom"}
    metrics = StageMetrics.model_validate(aggregate([with_entities.model_dump()], [failure])["sections"])
    header, row = stage_table("sections", [("run", metrics)], "failures_excluded")
    cells = dict(zip(header, row, strict=True))
    assert cells["Entity R"].startswith("25.00") and cells["Entity F1"].startswith("40.00")
    assert cells["Entity P"] == "—"  # no item had a generated entity: no estimate
    header, row = stage_table("sections", [("run", metrics)], "failures_as_zero")
    assert dict(zip(header, row, strict=True))["zeroed"] == "1"  # every present metric got the failure's zero


def test_writer_scoring_of_a_copy_of_a_real_article_has_full_entity_recall() -> None:
    dataset = sample_dataset_or_skip()
    article = next(a for a in dataset.articles if a.title.startswith("Присоединение Крыма"))
    records = score_written(article, copy_of_reference(article), [], context(dataset).with_profile("writer"))
    outline = next(r for r in records if r.stage == "outline")
    assert {k: outline.metrics[k] for k in KEYS} == dict.fromkeys(KEYS, 1.0)
    sections = [
        r for r in records if r.stage == "sections" and not r.excluded and "entity_recall" in r.metrics
    ]
    assert sections and all(r.metrics["entity_recall"] == pytest.approx(1.0) for r in sections)
    other = next(a for a in dataset.articles if a.name != article.name)
    assert entity_scores(_article_text(other), _article_text(article))["entity_recall"] < 0.35
