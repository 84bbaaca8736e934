"""HTML report pieces, hand-computed: per-article deltas (wins and losses first), the timeline's lanes, item
scores (×100 but counts), the per-article JSONL index, and a page with no resource outside itself."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ruwikibench.reporting.article_page import _timeline, item_scores
from ruwikibench.reporting.data import RunData
from ruwikibench.reporting.html import environment
from ruwikibench.reporting.jsonl_index import JsonlIndex
from ruwikibench.reporting.page import delta_block
from ruwikibench.storage.results import ResultRow, StageMetrics
from ruwikibench.storage.rundir import RunDir

PAGES = {name: f"articles/a{i:04d}.html" for i, name in enumerate(["A", "B", "C", "D", "E"], 1)}


def _run(name: str, f1: dict[str, list[float]]) -> RunData:
    data = RunData(name, {"outline": StageMetrics()}, RunDir(Path("/nonexistent") / name), {})
    for article, values in f1.items():
        data.results[("outline", article)] = [
            ResultRow(stage="outline", article=article, item=f"s{i}", metrics={"f1": v})
            for i, v in enumerate(values)
        ]
    return data


def test_deltas_order_wins_and_losses_by_size() -> None:
    base = _run("base", {"A": [0.5], "B": [0.5], "C": [0.2, 0.4], "D": [0.7], "E": [0.1]})
    other = _run("other", {"A": [0.6], "B": [0.2], "C": [0.9, 0.9], "D": [0.7]})  # E failed in 'other'
    block = delta_block([base, other], "outline", list(PAGES), PAGES)
    assert block is not None and block["title"] == "Mean F1 ↑" and block["base"] == "base"
    # C: mean 0.3 -> 0.9 = +60; A: +10; B: -30; D: 0; E: no score in 'other'
    (pair,) = block["pairs"]
    assert [(r["article"], round(r["delta"], 6)) for r in pair["wins"]] == [("C", 60.0), ("A", 10.0)]
    assert [(r["article"], round(r["delta"], 6)) for r in pair["losses"]] == [("B", -30.0)]
    assert pair["ties"] == 1 and pair["other"] == "other"
    assert [r.article for r in block["rows"]] == ["C", "B", "A", "D", "E"]  # |Δ| descending, unknown last
    assert block["rows"][-1].deltas == [None] and block["rows"][-1].before == pytest.approx(10.0)
    assert delta_block([base], "outline", list(PAGES), PAGES) is None  # one run: nothing to compare


def test_deltas_give_wins_and_losses_of_every_compared_run() -> None:
    """Three runs: the third run's wins and losses against the first are its own, not the second run's."""
    base = _run("base", {"A": [0.5], "B": [0.5], "C": [0.5]})
    second = _run("second", {"A": [0.9], "B": [0.4], "C": [0.5]})
    third = _run("third", {"A": [0.1], "B": [0.8], "C": [0.6]})
    block = delta_block([base, second, third], "outline", ["A", "B", "C"], PAGES)
    assert block is not None and [p["other"] for p in block["pairs"]] == ["second", "third"]
    extremes = [
        ([r["article"] for r in p["wins"]], [r["article"] for r in p["losses"]], p["ties"])
        for p in block["pairs"]
    ]
    assert extremes == [(["A"], ["B"], 1), (["B", "C"], ["A"], 0)]
    assert [r.article for r in block["rows"]] == ["A", "B", "C"]  # by the largest |Δ| of any run: 40, 30, 10
    page = environment().get_template("report.html.j2").render(**_empty_page(deltas=[block]))
    assert "third vs base" in page and page.count("biggest wins") == 2
    third_part = page.split("third vs base")[1]
    assert 'a0002.html">B</a></td><td class="num win">+30.00' in third_part.split("biggest losses")[0]


def test_timeline_puts_overlapping_nodes_on_separate_lanes() -> None:
    nodes = [
        {"node": "a", "started_at": 10.0, "ended_at": 11.0, "llm_calls": 1},
        {"node": "b", "started_at": 10.5, "ended_at": 11.5},
        {"node": "c", "started_at": 11.0, "ended_at": 12.0},
    ]
    timeline = _timeline(nodes)
    assert [(b["node"], b["lane"]) for b in timeline["bars"]] == [("a", 0), ("b", 1), ("c", 0)]
    assert timeline["lanes"] == 2 and timeline["parallel"] and timeline["span_s"] == pytest.approx(2.0)
    assert [(b["x"], b["width"]) for b in timeline["bars"]] == [(0.0, 50.0), (25.0, 50.0), (50.0, 50.0)]
    assert [b["llm"] for b in timeline["bars"]] == [True, False, False]
    sequential = _timeline([nodes[0], nodes[2]])
    assert sequential["lanes"] == 1 and not sequential["parallel"]


def test_item_scores_scale_fractions_not_counts() -> None:
    scored = {"f1": 0.8569, "gen_headings": 9.0, "gen_max_depth": 1.0}
    results = [
        ResultRow(stage="outline", article="A", item="article", metrics=scored),
        ResultRow(stage="outline", article="A", item="other", excluded="reference outline has no sections"),
    ]
    table = item_scores("outline", StageMetrics(), results)
    row = dict(zip(table["header"], table["rows"][0]["cells"], strict=True))
    assert row["Mean F1 ↑"] == pytest.approx(85.69) and row["Headings ·"] == 9.0 and row["Max depth ·"] == 1.0
    assert table["meanings"][0].startswith("Mean F1 ↑ (×100): heading F1")  # the header's hover text
    assert table["rows"][1]["excluded"] == "reference outline has no sections"
    assert all(v is None for v in table["rows"][1]["cells"])


def test_jsonl_index_reads_one_article_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "nodes.jsonl"
    lines = [
        {"stage": "outline", "article": 'Кавычки "в" имени', "unit": "article", "node": "n1"},
        {"stage": "outline", "article": "Python", "unit": "article", "node": "n2"},
        {
            "node": "n3",
            "article": "Python",
            "stage": "sections",
            "unit": "s1",
        },  # another key order: parsed in full
        {"stage": "outline", "article": 'Кавычки "в" имени', "unit": "article", "node": "n4"},
    ]
    text = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines) + '{"stage": "x", "arti'
    path.write_text(text, encoding="utf-8")
    index = JsonlIndex(path)
    assert sorted(index.articles()) == sorted(['Кавычки "в" имени', "Python"])
    assert [r["node"] for r in index.records("Python")] == ["n2", "n3"]
    assert [r["node"] for r in index.records('Кавычки "в" имени')] == ["n1", "n4"]
    assert list(index.records("missing")) == []
    assert index.units() == [
        {"stage": "outline", "article": "Python", "unit": "article"},
        {"stage": "outline", "article": 'Кавычки "в" имени', "unit": "article"},
        {"stage": "sections", "article": "Python", "unit": "s1"},
    ]
    assert JsonlIndex(tmp_path / "absent.jsonl").articles() == []


def _empty_page(**context: object) -> dict[str, object]:
    """The report template's context for a page with nothing in it, updated with ``context``."""
    return {
        "title": "t",
        "created": "now",
        "view": "failures excluded",
        "runs": [],
        "settings": {"runs": [], "differing": [], "same": [], "same_count": 0},
        "stages": [],
        "judges": [],
        "problems": [],
        "problem_count": 0,
        "index": {"header": [], "rows": []},
        "deltas": [],
    } | context


def test_page_template_loads_nothing_from_outside() -> None:
    page = environment().get_template("report.html.j2").render(**_empty_page())
    assert "<style>" in page and "<script>" in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    assert "<link" not in page and "@import" not in page


def test_headline_is_the_declared_key_else_the_first_column() -> None:
    from ruwikibench.reporting.page import headline
    from ruwikibench.storage.results import StageMetrics

    assert headline("ranking", None) == ("Rerank NDCG", "rerank_ndcg")
    assert headline("outline", None) == ("Mean F1", "f1")
    views = {"failures_excluded": {"mean": 0.5, "low": 0.5, "high": 0.5, "n": 1}}
    views["failures_as_zero"] = views["failures_excluded"]
    unknown = StageMetrics.model_validate({"metrics": {"b": views, "a": views}})
    assert headline("no-such-stage", unknown) == ("a", "a")


def test_trace_counts_calls_on_the_inner_nodes_of_subgraphs() -> None:
    from ruwikibench.reporting.article_page import _trace

    outer = {
        "node": "section",
        "namespace": "",
        "task_id": "abc",
        "started_at": 1.0,
        "ended_at": 4.0,
        "llm_calls": 0,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cache_hits": 0,
        "output": {},
    }
    inner = {
        "node": "write",
        "namespace": "section:abc",
        "started_at": 2.0,
        "ended_at": 3.0,
        "llm_calls": 2,
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "cache_hits": 1,
        "output": {"text": "т" * 10_000},
        "prompts": [{"name": "ru/section_write.txt", "sha256": "0123456789ab"}],
    }
    trace = _trace([inner, outer])
    assert [n["node"] for n in trace["nodes"]] == ["section", "write"]  # start order
    assert [n["depth"] for n in trace["nodes"]] == [0, 1]
    assert trace["totals"] == {
        "llm_calls": 2,
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "cache_hits": 1,
        "queued_s": None,
        "service_s": None,
    }  # captured before queue timing: totals only
    shown = trace["nodes"][1]["output"]
    assert shown.endswith("more characters in nodes.jsonl") and len(shown) < 6_100
    section, write = trace["timeline"]["bars"]
    assert (
        section["llm_inside"] and not section["llm"] and write["llm"]
    )  # the parent coloured by its child's calls
    assert "2 LLM calls by the nodes inside it" in section["label"]
    assert trace["timeline"]["queued_s"] is None and section["queued"] == 0


def test_timeline_bars_stay_inside_the_track_and_show_the_queue_wait() -> None:
    """A node ending at the unit's end keeps its minimum width inside the track; a call's wait for a
    concurrency slot is the hatched share of its bar and is said in the label."""
    from ruwikibench.reporting.article_page import MIN_BAR, _trace

    def node(name: str, start: float, end: float, **extra: float) -> dict:
        return {
            "node": name,
            "namespace": "",
            "started_at": start,
            "ended_at": end,
            "llm_calls": 1,
            "prompt_tokens": 1,
            "completion_tokens": 1,
            "cache_hits": 0,
            "output": {},
            **extra,
        }

    records = [
        node("rerank", 0.0, 100.0, queued_s=80.0, service_s=20.0),
        node("tiny", 99.99, 100.0, queued_s=0.0, service_s=0.01),
    ]
    trace = _trace(records)
    bars = {b["node"]: b for b in trace["timeline"]["bars"]}
    assert all(b["x"] + b["width"] <= 100.0 + 1e-9 for b in bars.values())
    assert bars["tiny"]["width"] == MIN_BAR and bars["tiny"]["x"] == 100.0 - MIN_BAR
    assert bars["rerank"]["queued"] == 80.0
    assert "80.00 s waiting for a concurrency slot, 20.00 s served" in bars["rerank"]["label"]
    assert trace["totals"]["queued_s"] == 80.0 and trace["totals"]["service_s"] == 20.01
    assert [n["queued_s"] for n in trace["nodes"]] == [80.0, 0.0]


def test_timeline_has_a_time_axis_in_round_seconds() -> None:
    from ruwikibench.reporting.article_page import _timeline, time_axis

    nodes = [
        {"node": "a", "started_at": 5.0, "ended_at": 8.0},
        {"node": "b", "started_at": 8.0, "ended_at": 17.5},
    ]
    axis = _timeline(nodes)["axis"]
    assert [t["label"] for t in axis] == ["0 s", "2 s", "4 s", "6 s", "8 s", "10 s", "12 s"]
    assert [round(t["x"], 3) for t in axis[:3]] == [0.0, round(200 / 12.5, 3), round(400 / 12.5, 3)]
    assert [t["label"] for t in time_axis(0.9)] == ["0.0 s", "0.2 s", "0.4 s", "0.6 s", "0.8 s"]
    assert len(time_axis(1234.0)) <= 9 and time_axis(1234.0)[-1]["label"] == "1200 s"
    html = environment().get_template("_macros.html.j2").module.timeline(_timeline(nodes))  # type: ignore[attr-defined]
    assert '<div class="axis" aria-hidden="true"><span style="left: 0.000%">0 s</span>' in html
    assert html.count('class="tick"') == 7


def test_queue_and_service_times_of_concurrent_calls_are_labelled_as_sums() -> None:
    """Three calls of one node in flight at once, each waiting 2 s of the node's 3 s: the sums (6 s, 3 s)
    exceed the duration, and say so; the bar's hatched start is the wait per call."""
    from ruwikibench.reporting.article_page import _trace

    record = {
        "node": "rerank",
        "namespace": "",
        "started_at": 0.0,
        "ended_at": 3.0,
        "llm_calls": 3,
        "queued_s": 6.0,
        "service_s": 3.0,
    }
    trace = _trace([record])
    (bar,) = trace["timeline"]["bars"]
    assert (
        "3 LLM calls, summed over the calls: 6.00 s waiting for a concurrency slot, 3.00 s served"
        in bar["label"]
    )
    assert "the calls overlapped, so the sums exceed the node's duration" in bar["label"]
    assert bar["queued"] == pytest.approx(100 * 2.0 / 3.0)
    from ruwikibench.reporting.call_views import with_calls

    (unit,) = with_calls([{"unit": "u", **trace}], None)
    page = (
        environment()
        .get_template("article.html.j2")
        .render(
            article="A",
            title="A",
            prev=None,
            next=None,
            position=1,
            count=1,
            stages=[
                {
                    "stage": "ranking",
                    "paper": "",
                    "runs": [
                        {
                            "name": "r",
                            "view": {"kind": "texts", "texts": [], "problem": ""},
                            "scores": {"rows": []},
                            "failures": [],
                            "units": [unit],
                        }
                    ],
                }
            ],
        )
    )
    assert "summed over the calls: 6.00 s waiting for a slot, 3.00 s served" in page
    assert "Σ queued, s" in page and "summed over the node's calls" in page


def test_page_errors_show_each_error_once() -> None:
    """An error met again (or one that is part of an error shown before) is referred to, not repeated; paths
    are cut to their last two parts."""
    from ruwikibench.reporting.article_page import PageErrors
    from ruwikibench.reporting.failures import shorten_paths

    errors = PageErrors()
    reason = "LLMRequestError: cache at /home/someone/.cache/ruwikibench/llm.sqlite is locked"
    first = errors.note(reason)
    again = errors.note(
        "cache at /home/someone/.cache/ruwikibench/llm.sqlite is locked"
    )  # the node's own text
    other = errors.note("ValueError: bad outline")
    assert first["first"] and not again["first"] and again["id"] == first["id"]
    assert other["first"] and other["id"] != first["id"]
    assert first["short"] == "LLMRequestError: cache at …/ruwikibench/llm.sqlite is locked"
    assert first["full"] == reason
    assert (
        shorten_paths("at http://127.0.0.1:8000/v1/chat/completions")
        == "at http://127.0.0.1:8000/v1/chat/completions"
    )


def test_chart_panels_group_each_metric_with_its_floor_and_mark_failed_runs(tmp_path) -> None:
    """Outline: the three embedding metrics each with floor and rescaled, the rest in runs of up to three of
    one scale; the PNG is 1260 px wide whatever the number of metrics, a failed run named with its reason."""
    import struct

    from ruwikibench.reporting.failures import stage_failures
    from ruwikibench.reporting.plots import chart_description, metric_groups, plot_stage
    from ruwikibench.reporting.tables import stage_columns
    from ruwikibench.storage.results import StageMetrics

    groups = metric_groups("outline", stage_columns("outline"))
    assert [g[0][0] for g in groups[:3]] == ["Mean F1", "F1 (authors)", "Soft recall"]
    assert all([t for t, _ in g[1:]] == ["floor", "rescaled"] for g in groups[:3])
    assert all(len(g) <= 3 for g in groups) and sum(len(g) for g in groups) == len(stage_columns("outline"))
    estimate = {"mean": 0.4, "low": 0.3, "high": 0.5, "n": 3}
    passed = StageMetrics.model_validate(
        {
            "metrics": {"f1": {"failures_excluded": estimate, "failures_as_zero": estimate}},
            "counts": {"evaluated": 3, "failed_units": 0},
        }
    )
    failed = StageMetrics.model_validate({"metrics": {}, "counts": {"evaluated": 0, "failed_units": 3}})
    errors = [
        {
            "stage": "outline",
            "article": a,
            "unit": "article",
            "reason": "OperationalError: unable to open /home/u/.cache/ruwikibench/llm.sqlite",
        }
        for a in "ab"
    ]
    failures = stage_failures("outline", [("A", passed, []), ("B", failed, errors)])
    assert failures == {"B": "OperationalError: unable to open …/ruwikibench/llm.sqlite"}
    plot_stage(
        "outline", [("A", passed), ("B", failed)], tmp_path / "outline.png", "failures_excluded", failures
    )
    width, height = struct.unpack(">II", (tmp_path / "outline.png").read_bytes()[16:24])
    assert width == 1260 and height < 1200
    alt = chart_description("outline", ["A", "B"], failures, passed)
    assert alt.startswith("Bar chart of the outline stage") and "Mean F1 with its floor and rescaled" in alt
    assert alt.endswith("Runs: A, B (failed: OperationalError: unable to open …/ruwikibench/llm.sqlite).")


def test_a_run_that_skipped_a_stage_is_named_at_its_table_chart_and_paired_table() -> None:
    from ruwikibench.reporting.page import report_context

    both = _run("both", {"A": [0.5]})
    also = _run("also", {"A": [0.7]})
    ranking_only = RunData("rank-only", {}, RunDir(Path("/nonexistent/rank-only")), {})
    ranking_only.spec = {"options": {"stages": ["ranking"]}}
    context = report_context([both, also, ranking_only], ["outline"], "failures_excluded", {}, ["A"], PAGES)
    (block,) = context["stages"]
    note = (
        "Not run in the outline stage, so not in its table, chart, paired differences or deltas: "
        "rank-only (its stages: ranking)."
    )
    assert block["not_run"] == note and block["alt"].endswith(note)
    block |= {
        "chart": "data:image/png;base64,",
        "paired": {"note": "n", "rows": [["metric"]], "verdicts": [], "none": ""},
    }
    page = environment().get_template("report.html.j2").render(**context)
    section = page.split('<h2 id="stage-outline">')[1]
    assert section.count(f'not-run">{note}<') == 4  # above the table, paired block, under the chart, deltas
    assert context["index"]["header"] == [
        "outline Mean F1 ↑ (both)",
        "outline Mean F1 ↑ (also)",
    ]  # no empty column
    (deltas,) = context["deltas"]
    assert deltas["not_run"] == note and [p["other"] for p in deltas["pairs"]] == ["also"]


def test_run_table_names_the_dataset_not_only_its_hash() -> None:
    from ruwikibench.reporting.page import dataset_name, run_summary

    run = _run("base", {"A": [0.5]})
    run.spec = {"dataset": {"id": "a49c697eca4c8f5d", "path": "/data/ruwiki_sample/"}}
    summary = run_summary(run)
    assert (summary["dataset"], summary["dataset_id"]) == ("ruwiki_sample", "a49c697eca4c8f5d")
    assert dataset_name({"path": "hub:org/ruwikibench/ruwiki.json"}) == "ruwiki.json"
    assert dataset_name({"id": "abc"}) == ""  # no path recorded: the id alone
    page = environment().get_template("report.html.j2").render(**_empty_page(runs=[summary]))
    assert (
        '<td title="/data/ruwiki_sample/">ruwiki_sample <span class="note">a49c697eca4c8f5d</span></td>'
        in page
    )


def test_per_item_scores_are_written_as_csv_and_linked_from_the_stage(tmp_path: Path) -> None:
    import csv

    from ruwikibench.reporting.item_csv import write_item_csvs

    base = _run("base", {"A": [0.5, 0.25]})
    other = _run("other", {"A": [0.75]})
    other.results[("outline", "B")] = [
        ResultRow(stage="outline", article="B", item="article", excluded="reference outline has no sections"),
        ResultRow(stage="outline", article="B", item="article", excluded="reference outline has no sections"),
    ]
    assert write_item_csvs([base, other], ["outline", "sections"], tmp_path) == {
        "outline": "outline_items.csv"
    }
    with (tmp_path / "outline_items.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.reader(f))
    assert rows == [
        ["run", "article", "item", "excluded", "f1"],
        ["base", "A", "s0", "", "0.5"],
        ["base", "A", "s1", "", "0.25"],
        ["other", "A", "s0", "", "0.75"],
        ["other", "B", "article", "reference outline has no sections", ""],  # the item once
    ]
    assert not (tmp_path / "sections_items.csv").exists()
    block = {"name": "outline", "items_csv": "outline_items.csv"}
    stage = {
        k: block.get(k)
        for k in ("name", "paper", "label", "groups", "header", "chart", "paired", "floor_note", "items_csv")
    }
    stage |= {
        "rows": [["run"], ["base"]],
        "row_classes": [""],
        "paper_notes": [],
        "failures": {},
        "alt": "",
        "glossary": [],
        "glossary_note": "",
        "baselines": [],
        "not_run": "",
    }
    page = environment().get_template("report.html.j2").render(**_empty_page(stages=[stage]))
    assert '<a href="outline_items.csv" download>outline_items.csv</a>' in page


def test_every_column_header_carries_its_direction_mark() -> None:
    """Stage tables (HTML and report.md/console), the paired table, the article index and the deltas: each
    declared column is shown with ↑/↓/·, its meaning on hover."""
    from ruwikibench.reporting.page import grouped_header, index_table
    from ruwikibench.reporting.tables import marked_rows, stage_table

    header = grouped_header("outline", None, "failures_excluded")
    labels = [h["label"] for h in header]
    assert labels[1:4] == ["Mean F1 ↑", "floor ·", "rescaled ↑"] and "Headings ·" in labels
    assert header[1]["full"].startswith("Mean F1 ↑ (×100): ")
    md_header = marked_rows("outline", stage_table("outline", [("r", StageMetrics())]))[0]
    assert md_header[:4] == ["run", "Mean F1 ↑", "Mean F1 floor ·", "Mean F1 rescaled ↑"]
    runs = [_run("base", {"A": [0.5]}), _run("other", {"A": [0.6]})]
    assert index_table(runs, ["outline"], ["A"], PAGES)["header"] == [
        "outline Mean F1 ↑ (base)",
        "outline Mean F1 ↑ (other)",
    ]
    delta = delta_block(runs, "outline", ["A"], PAGES)
    assert delta is not None and delta["title"] == "Mean F1 ↑"
