"""The STORM adapter on folders written by knowledge-storm 1.1.1 itself (tests/fixtures/storm_real, made by
its script offline: scripted local LM, a retriever over two articles of the real sample).

``truth.json`` holds what STORM kept in memory only: the polished article's own ``url_to_unified_index``;
every polished marker must resolve to the URL STORM meant by it, or be counted unresolved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ruwikibench.external.article import SourceIndex
from ruwikibench.external.score import ExternalOptions, score_outputs
from ruwikibench.external.storm import storm_rows, write_rows
from ruwikibench.nodes.citations import MARKER, marker_numbers
from tests.external.conftest import read_jsonl
from tests.sample import sample_dataset_or_skip

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "storm_real" / "output"
TRUTH = json.loads((ROOT / "truth.json").read_text(encoding="utf-8"))
OLYMPICS, QUANTUM = "Летние_Олимпийские_игры_2024", "Квантовый_компьютер"


def polished(folder: str) -> str:
    return (ROOT / folder / "storm_gen_article_polished.txt").read_text(encoding="utf-8")


def markers(text: str) -> list[int]:
    return [n for m in MARKER.finditer(text) for n in marker_numbers(m.group(1))]


@pytest.fixture(scope="module")
def rows() -> dict[str, dict]:
    return {row["storm_folder"]: row for row in storm_rows(ROOT, sample_dataset_or_skip())}


def test_fixture_has_what_the_mapping_must_handle() -> None:
    for folder in (OLYMPICS, QUANTUM):
        lead = polished(folder).split("\n# ", 1)[0]
        assert "[2] [3]" in lead  # a run of markers separated by a space
        draft = json.loads((ROOT / folder / "url_to_info.json").read_text("utf-8"))["url_to_unified_index"]
        truth = TRUTH[folder]["polished_url_to_unified_index"]
        assert any(draft[url] != n for url, n in truth.items())  # polishing renumbered the citations
    assert TRUTH[OLYMPICS]["remove_duplicate"] and polished(OLYMPICS).count("Эти сведения приводят") == 1


@pytest.mark.parametrize("folder", [OLYMPICS, QUANTUM])
def test_every_polished_marker_points_where_storm_pointed(rows, folder) -> None:
    url_of = {n: url for url, n in TRUTH[folder]["polished_url_to_unified_index"].items()}
    row = rows[folder]
    cited = markers(polished(folder))
    for n in cited:
        assert row["sources"].get(str(n)) == url_of.get(n), n  # a number STORM had no URL for stays unmapped
    assert {int(n) for n in row["sources"]} == set(cited) & set(url_of)
    assert row["storm_markers"]["unresolved"] == [n for n in dict.fromkeys(cited) if n not in url_of]


def test_draft_numbers_were_wrong_for_the_polished_text(rows) -> None:
    """What reading the polished text with the draft's numbers gave: not one marker right."""
    for folder in (OLYMPICS, QUANTUM):
        url_of = {n: url for url, n in TRUTH[folder]["polished_url_to_unified_index"].items()}
        draft = json.loads((ROOT / folder / "url_to_info.json").read_text("utf-8"))["url_to_unified_index"]
        by_draft = {n: url for url, n in draft.items()}
        assert not [n for n in markers(polished(folder)) if n in url_of and by_draft.get(n) == url_of[n]]


def test_shared_urls_resolved_through_storm_snippets(rows) -> None:
    dataset = sample_dataset_or_skip()
    index = SourceIndex(dataset)
    row = rows[OLYMPICS]
    url = "https://www.rbc.ru/sport/08/06/2024/666434d59a7947a5b6252041"  # sources 52 and 53 of the article
    n = next(k for k, v in row["sources"].items() if v == url)
    match = index.match(int(n), url, dataset.article(row["article"]), row["source_snippets"][n])
    assert match.how == "url_snippets"  # STORM recorded a snippet of each: both, not the first of the two
    assert match.source_ids == [
        "Летние Олимпийские игры 2024/source_52",
        "Летние Олимпийские игры 2024/source_53",
    ]
    row = rows[QUANTUM]  # sources 24 and 25 share a URL and hold the same text: no snippet tells them apart
    url = next(v for v in row["sources"].values() if "ixbt.com" in v)
    n = next(k for k, v in row["sources"].items() if v == url)
    match = index.match(int(n), url, dataset.article(row["article"]), row["source_snippets"][n])
    assert match.how == "url_shared"
    assert match.source_ids == ["Квантовый компьютер/source_24", "Квантовый компьютер/source_25"]


def test_real_storm_folders_scored(tmp_path) -> None:
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.models.llm import LLM
    from ruwikibench.prompts import PromptLibrary
    from ruwikibench.stage.context import StageContext
    from tests.graphs.writer_fixture import HashEmbedder

    dataset = sample_dataset_or_skip()
    context = StageContext(
        config=RunConfig(name="storm", models={}),
        llm=LLM({}, 2),
        embedder=HashEmbedder(),
        prompts=PromptLibrary(),
        dataset=dataset,
    )
    path = write_rows(storm_rows(ROOT, dataset), tmp_path / "storm.jsonl")
    options = ExternalOptions(
        stage="writer",
        outputs=path,
        out=tmp_path / "runs",
        name="storm",
        article_names=["Летние Олимпийские игры 2024", "Квантовый компьютер"],
    )
    rundir = score_outputs(context, "sample", options)
    writer = {r["article"]: r for r in read_jsonl(rundir.file("results.jsonl")) if r["stage"] == "writer"}
    for record in writer.values():
        assert record["metrics"]["markers_unresolved"] == 1  # the lead's made-up number
        assert record["metrics"]["sources_unmatched"] == 0  # every cited URL is a source of the dataset
        assert record["metrics"]["cited_own_share"] == 1.0
    olympics = writer["Летние Олимпийские игры 2024"]
    assert olympics["info"]["storm_markers"]["unresolved"] == [4]
    assert any(len(ids) == 2 for ids in olympics["info"]["shared_url_sources"].values())
