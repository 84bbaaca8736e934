"""The HTML report as a person sees it: two small runs against the fake endpoint, `ruwikibench report`, then
the report page and an article page opened in headless Chromium (DOM after the scripts ran, a screenshot),
every request Chromium makes sent to a local proxy that counts them. A second report puts a passed run beside
a partly failed one (one article's requests answered 500) and a failed one (every request answered 500):
charts readable at 1366 px, failures said where the numbers are missing, node traces, and accessibility
(axe-core, keyboard sorting, headings, captions, lang).

Skips when no Chromium is installed, unless RUWIKIBENCH_REQUIRE_BROWSER=1 (set by .ci/run, which installs it
and axe-core: ``npm install axe-core`` into ~/.cache/ruwikibench/npm, or RUWIKIBENCH_AXE naming axe.min.js).
"""

from __future__ import annotations

import json
import os
import re
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from bs4 import BeautifulSoup
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.reporting.browser import axe_violations, dump_dom, find_chromium, screenshot
from tests.cli.small_runs import fake_setup, run_all
from tests.fake_openai import fake_openai_server

runner = CliRunner()

if find_chromium() is None:
    if os.environ.get("RUWIKIBENCH_REQUIRE_BROWSER") == "1":
        raise RuntimeError(
            "RUWIKIBENCH_REQUIRE_BROWSER=1 but no Chromium is installed (apt-get install chromium)"
        )
    pytest.skip("no Chromium installed (apt-get install chromium)", allow_module_level=True)


@contextmanager
def counting_proxy() -> Iterator[tuple[str, list[str]]]:
    """An HTTP proxy on 127.0.0.1 that answers 403 to everything and records each request line."""
    seen: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            seen.append(self.requestline)
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = do_HEAD = do_CONNECT = do_OPTIONS = _refuse

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


# Chromium's own services, which call out whatever page is open, even with background networking disabled
# (network time, the on-demand component updater, account sign-in; Debian's Chromium 150 also opens
# www.google.com five times for about:blank): not requests of the page.
BROWSER_SERVICES = frozenset(
    {"clients2.google.com", "update.googleapis.com", "accounts.google.com", "www.google.com"}
)


def page_requests(seen: list[str]) -> list[str]:
    """The request lines the page caused: all but those to Chromium's own services."""

    def host(line: str) -> str:
        method, target = line.split()[:2]
        return target.rsplit(":", 1)[0] if method == "CONNECT" else (urlsplit(target).hostname or "")

    return [line for line in seen if host(line) not in BROWSER_SERVICES]


REMOTE = re.compile(
    r"""(?:src|href|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
    re.IGNORECASE,
)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


def _failing_run(tmp: Path, config: Path, model, name: str, fail_if) -> str:
    """`ruwikibench run all` against a second fake endpoint answering 500 to the requests ``fail_if`` picks,
    with a cache of its own (the first run's answers would hide the failures); the run directory it
    printed."""
    with fake_openai_server(model, fail_if=fail_if) as url:
        settings = yaml.safe_load(config.read_text(encoding="utf-8"))
        settings.update(name=name, cache_dir=str(tmp / f"cache-{name}"))
        settings["models"]["writer"]["endpoints"] = [url]
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(settings, allow_unicode=True), encoding="utf-8")
        done = runner.invoke(
            app,
            ["run", "all", "--dataset", str(tmp / "data"), "--config", str(path), "--out", str(tmp / "runs")],
        )
    assert done.exit_code != 0 and "units failed" in done.output, done.output  # a run with failures says so
    return done.output.split("run directory: ")[1].split()[0]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Iterator[tuple[Path, Path]]:
    """Two reports: a passed run beside another passed run ('cmp'), and a passed run beside a partly failed
    and a failed one ('shapes')."""
    tmp = tmp_path_factory.mktemp("browser")
    monkeypatch = pytest.MonkeyPatch()
    try:
        with fake_setup(tmp, monkeypatch) as (_, (base, direct), model):
            runs = [run_all(tmp, base), run_all(tmp, direct)]
            made = runner.invoke(
                app,
                ["report", *runs, "--out", str(tmp / "cmp"), "--screenshot", str(tmp / "cmp" / "report.png")],
            )
            assert made.exit_code == 0, made.output + repr(made.exception)
            partly = _failing_run(tmp, direct, model, "partly", lambda m: "Python" in m[-1]["content"])
            failed = _failing_run(tmp, direct, model, "failed", lambda m: True)
            made = runner.invoke(app, ["report", runs[0], partly, failed, "--out", str(tmp / "shapes")])
            assert made.exit_code == 0, made.output + repr(made.exception)
    finally:
        monkeypatch.undo()
    yield tmp / "cmp", tmp / "shapes"


@pytest.fixture(scope="module")
def report(reports: tuple[Path, Path]) -> Path:
    return reports[0]


@pytest.fixture(scope="module")
def shapes(reports: tuple[Path, Path]) -> Path:
    return reports[1]


def test_the_proxy_sees_a_page_that_loads_from_the_network(tmp_path: Path) -> None:
    """The check below can fail: a page with one remote image makes the proxy count a request."""
    page = tmp_path / "remote.html"
    page.write_text('<!doctype html><img src="http://example.invalid/pixel.png">', encoding="utf-8")
    with counting_proxy() as (proxy, seen):
        dom = dump_dom(page, proxy=proxy)
    assert any("example.invalid" in line for line in page_requests(seen)), seen
    assert REMOTE.search(dom)


def test_report_page_tables_deltas_and_no_request(report: Path) -> None:
    with counting_proxy() as (proxy, seen):
        html = dump_dom(report / "report.html", proxy=proxy)
    assert page_requests(seen) == []  # nothing left the page: styles, script and charts are inside it
    assert not REMOTE.search(html)
    dom = BeautifulSoup(html, "html.parser")
    stage_tables = dom.select("table.stage-table")
    assert len(stage_tables) == 3
    for table, baselines in zip(stage_tables, (2, 3, 2), strict=True):  # ranking, outline, sections
        assert table.select_one("thead tr:last-child th").get_text() == "run"
        labels = [row.select_one("td").get_text() for row in table.select("tbody tr")]
        assert len([x for x in labels if not x.startswith("↳ baseline: ")]) == 2  # the two runs
        assert (
            len([x for x in labels if x.startswith("↳ baseline: ")]) == 2 * baselines
        )  # each run's baselines
    assert len(dom.select("ul.baselines")) == 3  # the verdict lines against the best baseline, per stage
    ranking = {th.get_text(): i for i, th in enumerate(stage_tables[0].select("thead tr:last-child th"))}
    assert {"BM25 NDCG ↑", "Rerank NDCG ↑", "scored", "excluded", "failed"} <= set(ranking)
    cells = stage_tables[0].select("tbody tr")[0].select("td")
    assert cells[ranking["Rerank NDCG ↑"]].get_text().count("[") == 1  # mean [CI]
    assert len(dom.select("img.chart[src^='data:image/png;base64,']")) == 3
    settings = {
        row.select_one("th").get_text(): [td.get_text() for td in row.select("td")]
        for row in dom.select("#settings ~ div table.settings tbody tr")
    }
    assert settings["outline.mode"] == ["description", "direct"]  # one row per setting, one column per run
    assert dom.select_one("#deltas") is not None and len(dom.select("table.deltas")) == 3
    paired = dom.select("table.sortable.paired-table")  # after each stage's table: one row per metric
    assert len(paired) == 3 and all(t.select_one("th").get_text() == "metric" for t in paired)
    problems = dom.select(
        "table.problems tbody tr"
    )  # the fixture's sections without a source snippet: one row a run
    assert len(problems) == 2 and [row.select("td")[3].get_text() for row in problems] == ["3", "3"]
    assert all(row.select("td")[5].get_text() == "no source snippet" for row in problems)
    assert [a["href"] for a in dom.select("table.article-index a")] == [
        f"articles/a{i:04d}.html" for i in (1, 2, 3)
    ]
    shot = report / "report.png"  # `ruwikibench report --screenshot`
    assert _png_size(shot) == (1280, 1600) and shot.stat().st_size > 20_000


def test_article_page_trace_and_no_request(report: Path) -> None:
    page = report / "articles" / "a0002.html"  # Москва, the article the fake judge knows
    with counting_proxy() as (proxy, seen):
        html = dump_dom(page, proxy=proxy)
        shot = screenshot(page, report / "article.png", width=1000, height=1200, proxy=proxy)
    assert page_requests(seen) == [] and not REMOTE.search(html)
    assert _png_size(shot) == (1000, 1200)
    dom = BeautifulSoup(html, "html.parser")
    assert dom.select_one("h1").get_text() == "Москва"
    assert len(dom.select("section.run-block")) == 6  # three stages × two runs
    relevant = dom.select("table.candidates tr.rel-yes")
    assert relevant and all("relevant" in row.get_text() for row in relevant)
    nodes = [
        row.select("td")[1].get_text(" ", strip=True) for row in dom.select("table.trace-table tbody tr")
    ]
    assert {"expand_query", "retrieve", "rerank", "rank"} <= {n.split()[0] for n in nodes}
    prompts = {code.get_text() for code in dom.select("table.trace-table code")}
    assert "ru/relevance.txt" in prompts
    bars = dom.select("div.timeline div.bar")
    assert bars and any(float(b["style"].split("top:")[1].split("px")[0]) > 2 for b in bars)  # parallel lanes
    pair = dom.select_one(".pair")
    assert pair is not None and "ЗОЛОТО" in pair.get_text()  # the reference beside the generated outline


def test_sorting_runs_in_the_browser(report: Path) -> None:
    """Two clicks on the index's first header sort it by article name, descending (the page's own script)."""
    page = report / "sorted.html"
    clicks = (
        "<script>var b = document.querySelector('table.article-index thead th button'); b.click(); b.click();"
        "</script></body>"
    )
    page.write_text(
        (report / "report.html").read_text(encoding="utf-8").replace("</body>", clicks), encoding="utf-8"
    )
    dom = BeautifulSoup(dump_dom(page), "html.parser")
    names = [a.get_text() for a in dom.select("table.article-index tbody a")]
    assert names == ["Сколково", "Москва", "Python"]
    assert dom.select_one("table.article-index thead th")["aria-sort"] == "descending"


AXE_CANDIDATES = (Path.home() / ".cache/ruwikibench/npm/node_modules/axe-core/axe.min.js",)


def _axe() -> Path:
    """axe-core's axe.min.js (RUWIKIBENCH_AXE, else ~/.cache/ruwikibench/npm); skips without it unless the
    browser is required (CI installs it)."""
    named = os.environ.get("RUWIKIBENCH_AXE")
    found = next((p for p in ([Path(named)] if named else []) + list(AXE_CANDIDATES) if p.is_file()), None)
    if found is None:
        if os.environ.get("RUWIKIBENCH_REQUIRE_BROWSER") == "1":
            raise RuntimeError(
                "axe-core not installed: npm install --prefix ~/.cache/ruwikibench/npm axe-core"
            )
        pytest.skip("axe-core not installed (npm install --prefix ~/.cache/ruwikibench/npm axe-core)")
    return found


def _with_script(page: Path, script: str, name: str) -> Path:
    """A copy of ``page`` beside it with ``script`` run at the end of its body."""
    copy = page.with_name(name)
    copy.write_text(
        page.read_text(encoding="utf-8").replace("</body>", f"<script>{script}</script></body>"),
        encoding="utf-8",
    )
    return copy


def _measured(page: Path, expression: str, name: str) -> object:
    """The JSON value of a JavaScript ``expression`` evaluated in ``page`` at 1366 px (written into the
    DOM)."""
    script = (
        "var out = document.createElement('pre'); out.id = 'measured'; "
        f"out.textContent = JSON.stringify({expression}); document.body.appendChild(out);"
    )
    probe = _with_script(page, script, name)
    dom = BeautifulSoup(dump_dom(probe, width=1366), "html.parser")
    return json.loads(dom.select_one("#measured").get_text())


def test_charts_are_small_multiples_read_at_1366_px(shapes: Path) -> None:
    """Each chart's PNG fits the page at 1366 px and is shown at (nearly) its own size: labels stay
    readable."""
    for stage in ("ranking", "outline", "sections"):
        width, height = _png_size(shapes / f"{stage}.png")
        assert 1000 <= width <= 1320 and height < 1400, (stage, width, height)
    scales = _measured(
        shapes / "report.html",
        "Array.prototype.map.call(document.querySelectorAll('img.chart'), "
        "function (i) { return i.clientWidth / i.naturalWidth; })",
        "measure-charts.html",
    )
    assert len(scales) == 3 and all(scale >= 0.9 for scale in scales), scales
    shot = screenshot(shapes / "report.html", shapes / "report-1366.png", width=1366, height=900)
    assert _png_size(shot) == (1366, 900)


def test_failed_runs_are_said_in_tables_charts_and_deltas(shapes: Path) -> None:
    dom = BeautifulSoup((shapes / "report.html").read_text(encoding="utf-8"), "html.parser")
    failed_name = next(
        td.get_text()
        for td in dom.select("table.runs tbody td:first-child")
        if td.get_text().startswith("failed-")
    )
    partly_name = next(
        td.get_text()
        for td in dom.select("table.runs tbody td:first-child")
        if td.get_text().startswith("partly-")
    )
    charts = dom.select("img.chart")
    assert len(charts) == 3
    for img, stage in zip(charts, ("ranking", "outline", "sections"), strict=True):
        alt = img["alt"]
        assert alt.startswith(f"Bar chart of the {stage} stage") and "base-" in alt and partly_name in alt
        assert f"{failed_name} (failed: LLMRequestError" in alt and "HTTP 500" in alt
    stage_notes = [p.get_text() for p in dom.select("h2 ~ p.failed") if p.get_text().startswith(failed_name)]
    assert len(stage_notes) == 3 and all("failed: LLMRequestError" in n for n in stage_notes)
    skipped = [p.get_text() for p in dom.select("p.skipped")]
    for stage in ("ranking", "outline", "sections"):
        assert dom.select_one(f"#deltas-{stage}") is not None
    assert (
        sum(
            t.startswith(f"all 3 articles skipped: run {failed_name} failed: LLMRequestError")
            for t in skipped
        )
        == 3
    )
    assert (
        sum(t.startswith(f"1 article skipped: run {partly_name} failed: LLMRequestError") for t in skipped)
        == 3
    )
    assert all(p["title"] == "Python" for p in dom.select("p.skipped") if partly_name in p.get_text())


def test_wide_tables_have_column_groups_and_a_sticky_first_column(shapes: Path) -> None:
    dom = BeautifulSoup((shapes / "report.html").read_text(encoding="utf-8"), "html.parser")
    for table in dom.select("table.stage-table"):
        columns = len(table.select("thead tr")[-1].select("th"))
        assert sum(int(g["span"]) for g in table.select("colgroup")) == columns
        assert sum(int(c.get("colspan", 1)) for c in table.select("tr.groups > *")) == columns
    outline = dom.select("table.stage-table")[1]
    groups = [th.get_text() for th in outline.select("tr.groups th")]
    assert "Mean F1: raw, floor, rescaled" in groups and "items" in groups
    assert [th.get_text() for th in outline.select("thead tr:last-child th")][1:4] == [
        "Mean F1 ↑",
        "floor ·",
        "rescaled ↑",
    ]
    sticky = _measured(
        shapes / "report.html",
        "[getComputedStyle(document.querySelectorAll('table.stage-table')[1]"
        ".tBodies[0].rows[0].cells[0]).position]",
        "measure-sticky.html",
    )
    assert sticky == ["sticky"]


def test_article_page_of_failed_runs_traces_and_errors_once(shapes: Path) -> None:
    page = shapes / "articles" / "a0001.html"  # Python: failed in the partly failed run and in the failed run
    dom = BeautifulSoup(dump_dom(page), "html.parser")
    blocks = dom.select("section.run-block")
    failed_blocks = [b for b in blocks if not b["data-run"].startswith("base-")]
    no_output = dom.select("p.no-output")
    assert no_output and all(p.get_text().startswith("no output (unit article): ") for p in no_output)
    for block in failed_blocks:  # no empty 'Generated texts' heading where nothing was generated
        assert "Generated texts" not in [h.get_text() for h in block.select("h4")]
    text = dom.select_one("main").get_text()
    for error in {p["title"] for p in dom.select("[title^='LLMRequestError']")}:
        shown = error.split(": ", 1)[1][:60]
        assert text.count(shown) == 1, shown  # each long error once on the page, referred to elsewhere
    assert dom.select("table.trace-table a.failed[href^='#error-']")
    headers = [th.get_text() for th in dom.select("table.trace-table")[0].select("thead th")]
    assert headers[2:5] == ["duration, s", "Σ queued, s", "Σ service, s"]
    base_rows = blocks[0].select("table.trace-table tbody tr")
    assert base_rows and all(row.select("td")[3].get_text() != "—" for row in base_rows)
    for bar in dom.select("div.timeline div.bar"):
        left = float(bar["style"].split("left:")[1].split("%")[0])
        width = float(bar["style"].split("width:")[1].split("%")[0])
        assert left + width <= 100.001, bar["style"]
    assert any(
        "waiting for a concurrency slot" in bar["title"] for bar in dom.select("div.timeline div.bar.llm")
    )


def test_axe_finds_planted_violations(tmp_path: Path) -> None:
    """The check can fail: an image without alt text and a button without a name are serious violations."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!doctype html><html lang="en"><head><title>bad</title></head><body><main><h1>Bad</h1>'
        '<img src="x.png"><button></button></main></body></html>',
        encoding="utf-8",
    )
    found = {v["id"] for v in axe_violations(page, _axe()) if v["impact"] in ("serious", "critical")}
    assert {"image-alt", "button-name"} <= found


def _heading_jumps(dom: BeautifulSoup) -> list[str]:
    levels = [(int(h.name[1]), h.get_text(" ", strip=True)) for h in dom.select("h1, h2, h3, h4, h5, h6")]
    return [
        f"{text} (h{level} after h{before})"
        for (before, _), (level, text) in pairwise(levels)
        if level > before + 1
    ]


@pytest.mark.parametrize("which", ["report", "shapes"])
def test_accessibility_axe_headings_captions_and_lang(reports: tuple[Path, Path], which: str) -> None:
    """axe-core finds no serious or critical violation on the report and its article pages; headings do not
    jump levels, every table has a caption, header cells a scope, the page is English with Russian texts
    marked."""
    axe = _axe()
    out = reports[0] if which == "report" else reports[1]
    pages = [out / "report.html", *sorted((out / "articles").glob("a*.html"))]
    for page in pages:
        found = [v for v in axe_violations(page, axe) if v["impact"] in ("serious", "critical")]
        assert found == [], (page.name, found)
        dom = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        assert dom.select_one("html")["lang"] == "en"
        assert _heading_jumps(dom) == [], page.name
        assert all(t.select_one("caption") for t in dom.select("table")), page.name
        assert all(th.get("scope") in ("col", "colgroup") for th in dom.select("thead th")), page.name
        for th in dom.select("table.sortable thead tr:last-child th"):
            assert th.select_one("button.sort") is not None, (page.name, th.get_text())
    article = BeautifulSoup(pages[2].read_text(encoding="utf-8"), "html.parser")
    assert article.select_one("h1")["lang"] == "ru" and article.select(
        '[lang="ru"] ul.headings, ul.headings[lang="ru"]'
    )


def test_keyboard_sorting_sets_aria_sort_and_keeps_dashes_last(shapes: Path) -> None:
    """The sort buttons are focusable; activating one sorts by its column (aria-sort on the header cell), and
    cells without a value ("—", "failed") stay last ascending and descending."""
    script = """
    var result = {};
    var table = document.querySelector('table.article-index');
    var buttons = table.tHead.rows[0].querySelectorAll('button.sort');
    var button = buttons[buttons.length - 1];  // the failed run's column: every cell says failed
    var ranking = buttons[1];  // the first run's ranking score: numbers
    button.focus();
    result.focused = document.activeElement === button;
    function column(i) { return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
      return r.cells[i].textContent.trim(); }); }
    var deltas = document.querySelector('table.deltas');
    var dbuttons = deltas.tHead.rows[0].querySelectorAll('button.sort');
    var dcol = 3;  // article, base, partly, Δ partly (Python: —), failed, Δ failed
    dbuttons[dcol].click();
    result.asc = Array.prototype.map.call(deltas.tBodies[0].rows, function (r) { return \
r.cells[dcol].textContent.trim(); });
    result.asc_sort = dbuttons[dcol].parentNode.getAttribute('aria-sort');
    dbuttons[dcol].click();
    result.desc = Array.prototype.map.call(deltas.tBodies[0].rows, function (r) { return \
r.cells[dcol].textContent.trim(); });
    result.desc_sort = dbuttons[dcol].parentNode.getAttribute('aria-sort');
    ranking.click();
    result.index_sort = ranking.parentNode.getAttribute('aria-sort');
    result.tabindex = button.tabIndex;
    result;
    """
    found = _measured(
        shapes / "report.html",
        "(function () {" + script.replace("result;", "return result;") + "})()",
        "measure-sort.html",
    )
    assert found["focused"] and found["tabindex"] == 0
    assert found["asc_sort"] == "ascending" and found["desc_sort"] == "descending"
    assert found["index_sort"] == "ascending"
    for order in (found["asc"], found["desc"]):
        values = [v for v in order if v != "—"]
        assert values and order[: len(values)] == values and set(order[len(values) :]) <= {"—"}, order
        assert "—" in order


def test_article_index_filter_box_hides_the_rows_not_matching(tmp_path: Path) -> None:
    """The filter box's script in Chromium: typing 'дом соб' keeps only the articles whose name holds both
    words (any order, any case) and says how many are shown; an empty box shows every row."""
    from ruwikibench.reporting.html import environment

    names = ["Собака дом", "Кошка", "Дом собачий", "Python"]
    rows = [{"article": n, "page": f"articles/a{i}.html", "cells": []} for i, n in enumerate(names)]
    context = {
        "title": "t",
        "created": "now",
        "view": "failures excluded",
        "runs": [],
        "settings": {"runs": [], "differing": [], "same": [], "same_count": 0},
        "stages": [],
        "judges": [],
        "problems": [],
        "problem_count": 0,
        "index": {"header": [], "rows": rows},
        "deltas": [],
    }
    page = environment().get_template("report.html.j2").render(**context)
    typing = (
        '<script>var box = document.getElementById("article-filter"); box.value = "ДОМ  соб";'
        'box.dispatchEvent(new Event("input"));</script></body>'
    )
    (tmp_path / "typed.html").write_text(page.replace("</body>", typing), encoding="utf-8")
    (tmp_path / "empty.html").write_text(page, encoding="utf-8")
    typed = BeautifulSoup(dump_dom(tmp_path / "typed.html"), "html.parser")
    shown = [r.td.get_text() for r in typed.select("#article-index tbody tr") if not r.has_attr("hidden")]
    assert shown == ["Собака дом", "Дом собачий"]
    assert typed.select_one("#article-filter-count").get_text() == "2 of 4 shown"
    empty = BeautifulSoup(dump_dom(tmp_path / "empty.html"), "html.parser")
    assert not any(r.has_attr("hidden") for r in empty.select("#article-index tbody tr"))
    assert empty.select_one("label[for=article-filter]") is not None
