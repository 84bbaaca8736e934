"""The STORM adapter on a hand-made folder in STORM's layout: conversion, scoring, missing files, unknown
URLs."""

from __future__ import annotations

import shutil

import pytest

from ruwikibench.external.formats import ExternalFormatError
from ruwikibench.external.score import ExternalOptions, score_outputs
from ruwikibench.external.storm import storm_folder_name, storm_rows, write_rows
from tests.external.conftest import read_jsonl
from tests.external.storm_fixture import LONG_TITLE, make_storm_dir, storm_dataset


def test_folder_name_as_storm_makes_it() -> None:
    assert storm_folder_name("Квантовый компьютер / обзор") == "Квантовый_компьютер___обзор"
    assert len(storm_folder_name("а" * 300)) == 125


def test_rows_from_storm_folders(tmp_path) -> None:
    rows = storm_rows(make_storm_dir(tmp_path / "storm"), storm_dataset())
    by_title = {r["article"]: r for r in rows}
    assert set(by_title) == {"Москва", LONG_TITLE}  # 'Инновационный_центр_Сколково' -> the dataset title
    moscow = by_title["Москва"]
    assert (
        moscow["storm_file"] == "storm_gen_article_polished.txt"
    )  # the polished article wins over the draft
    assert moscow["markdown"].startswith("# Москва\n\nМосква — столица России")  # '# summary' became the lead
    assert "\n## История\n" in moscow["markdown"] and "\n### Основание\n" in moscow["markdown"]
    assert moscow["outline"] == "# Москва\n## История\n### Основание\n## География\n## Экономика\n"
    assert moscow["sources"] == {
        "1": "https://example.org/0/0",
        "2": "https://www.example.org/0/1/",
        "3": "https://ru.wikipedia.org/wiki/Москва",
    }
    assert by_title[LONG_TITLE]["storm_file"] == "storm_gen_article.txt"  # no polished file: the draft


def test_storm_scored_unknown_urls_counted(tmp_path) -> None:
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.models.llm import LLM
    from ruwikibench.prompts import PromptLibrary
    from ruwikibench.stage.context import StageContext
    from tests.graphs.writer_fixture import HashEmbedder

    dataset = storm_dataset()
    context = StageContext(
        config=RunConfig(name="external", models={}),
        llm=LLM({}, 2),
        embedder=HashEmbedder(),
        prompts=PromptLibrary(),
        dataset=dataset,
    )
    path = write_rows(storm_rows(make_storm_dir(tmp_path / "storm"), dataset), tmp_path / "storm.jsonl")
    rundir = score_outputs(
        context, "data", ExternalOptions(stage="writer", outputs=path, out=tmp_path / "runs")
    )
    results = read_jsonl(rundir.file("results.jsonl"))
    moscow = next(r for r in results if r["stage"] == "writer" and r["article"] == "Москва")
    assert moscow["metrics"]["sources_unmatched"] == 1  # the Wikipedia page is not a source of the dataset
    assert moscow["metrics"]["cited_own_share"] == pytest.approx(2 / 3)
    assert moscow["metrics"]["source_recall"] == pytest.approx(4 / 6)  # src0, src1 of Москва's three sources
    assert moscow["info"]["unmatched_sources"] == ["https://ru.wikipedia.org/wiki/Москва"]
    outline = next(r for r in results if r["stage"] == "outline" and r["article"] == "Москва")
    assert outline["info"]["generated_scored"] == 4  # the outline file's headings, not the article's three
    skolkovo = next(r for r in results if r["stage"] == "writer" and r["article"] == "Сколково")
    assert skolkovo["metrics"]["cited_own_share"] == pytest.approx(1.0)
    assert skolkovo["metrics"]["sources_unmatched"] == 0
    metrics = rundir.read_json("metrics.json")
    assert metrics["writer"]["counts"]["failed_units"] == 1  # Python: no folder, a failure, not dropped


@pytest.mark.parametrize("missing", ["url_to_info.json", "storm_gen_outline.txt"])
def test_missing_file_names_folder_and_file(tmp_path, missing) -> None:
    root = make_storm_dir(tmp_path / "storm")
    (root / "Москва" / missing).unlink()
    with pytest.raises(ExternalFormatError) as err:
        storm_rows(root, storm_dataset())
    assert str(root / "Москва") in str(err.value) and f"missing {missing}" in str(err.value)


def test_missing_article_text_and_unknown_topic(tmp_path) -> None:
    root = make_storm_dir(tmp_path / "storm")
    (root / "Москва" / "storm_gen_article_polished.txt").unlink()
    (root / "Москва" / "storm_gen_article.txt").unlink()
    with pytest.raises(
        ExternalFormatError, match="missing storm_gen_article_polished.txt and storm_gen_article.txt"
    ):
        storm_rows(root, storm_dataset())
    shutil.rmtree(root / "Москва")
    (root / "Марс_и_Венера").mkdir()
    with pytest.raises(ExternalFormatError, match="topic 'Марс и Венера' is not an article of the dataset"):
        storm_rows(root, storm_dataset())


def test_bad_url_to_info_layout(tmp_path) -> None:
    root = make_storm_dir(tmp_path / "storm")
    (root / "Москва" / "url_to_info.json").write_text('{"url_to_info": {}}', encoding="utf-8")
    with pytest.raises(ExternalFormatError, match="url_to_info.json: field 'url_to_unified_index'"):
        storm_rows(root, storm_dataset())


def test_polished_numbers_mapped_through_shared_sentences() -> None:
    from ruwikibench.external.storm_citations import map_polished

    draft = "# История\n\nОснована в 1147 году.[2] Стоит на реке.[1][3]\n\n# Экономика\n\nРастёт.[3]"
    polished = (
        "# summary\n\nСтолица.[1] Город.[9] Река.[2, 4]\n\n# История\n\nОснована в 1147 году.[1] "
        "Стоит на реке.[2] [3]\n\n# Экономика\n\nРастёт.[3]"
    )
    result = map_polished(polished, draft)
    assert result.mapped == {1: 2, 3: 3}  # 2 is also in a grouped (not renumbered) marker: ambiguous
    assert result.unresolved == [9, 2, 4]  # the lead's own number and the grouped ones, never guessed


def test_inconsistent_pairings_are_unresolved() -> None:
    from ruwikibench.external.storm_citations import map_polished

    draft = "# А\n\nПервое.[1]\n\n# Б\n\nВторое.[2]"
    polished = "# А\n\nПервое.[1]\n\n# Б\n\nВторое.[1]"  # 1 would stand for two draft numbers
    result = map_polished(polished, draft)
    assert result.mapped == {} and result.unresolved == [1] and result.conflicting == [1]


def test_shared_url_narrowed_down_by_recorded_snippets() -> None:
    from ruwikibench.external.article import SourceIndex

    dataset = storm_dataset()
    moscow = dataset.article("Москва")
    first, second = [s for s in dataset.sources if s.article == moscow.name][:2]
    second.url = first.url  # two sources of the article behind one URL
    index = SourceIndex(dataset)
    recorded = [" ".join(dataset.snippets_of_source(second.id)[0].text.split()[:12])]
    match = index.match(1, first.url or "", moscow, recorded)
    assert (match.how, match.source_ids) == ("url_snippets", [second.id])  # not the first source of the URL
    assert match.snippet_ids == [s.id for s in dataset.snippets_of_source(second.id)]
    fallback = index.match(1, first.url or "", moscow, ["совсем другой текст без общих слов"])
    assert (fallback.how, fallback.source_ids) == ("url_shared", [first.id, second.id])
