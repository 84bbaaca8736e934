"""The HTML report as a person sees it: two small runs against the fake endpoint, `ruwikibench report`, then the
report page and an article page opened in headless Chromium (DOM after the scripts ran, a screenshot), every
request Chromium makes sent to a local proxy that counts them.

Skips when no Chromium is installed, unless RUWIKIBENCH_REQUIRE_BROWSER=1 (set by .ci/run, which installs it).
"""

from __future__ import annotations

import os
import re
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.reporting.browser import dump_dom, find_chromium, screenshot
from tests.cli.small_runs import fake_setup, run_all

runner = CliRunner()

if find_chromium() is None:
    if os.environ.get("RUWIKIBENCH_REQUIRE_BROWSER") == "1":
        raise RuntimeError("RUWIKIBENCH_REQUIRE_BROWSER=1 but no Chromium is installed (apt-get install chromium)")
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
# (network time, the on-demand component updater, account sign-in): not requests of the page.
BROWSER_SERVICES = frozenset({"clients2.google.com", "update.googleapis.com", "accounts.google.com"})


def page_requests(seen: list[str]) -> list[str]:
    """The request lines the page caused: all but those to Chromium's own services."""
    def host(line: str) -> str:
        method, target = line.split()[:2]
        return target.rsplit(":", 1)[0] if method == "CONNECT" else (urlsplit(target).hostname or "")

    return [line for line in seen if host(line) not in BROWSER_SERVICES]


REMOTE = re.compile(r"""(?:src|href|srcset|poster|data)\s*=\s*["']?\s*(?:https?:)?//|url\(\s*["']?\s*(?:https?:)?//|@import""",
                    re.IGNORECASE)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Iterator[Path]:
    tmp = tmp_path_factory.mktemp("browser")
    monkeypatch = pytest.MonkeyPatch()
    try:
        with fake_setup(tmp, monkeypatch) as (_, (base, direct), _model):
            runs = [run_all(tmp, base), run_all(tmp, direct)]
            made = runner.invoke(app, ["report", *runs, "--out", str(tmp / "cmp"),
                                       "--screenshot", str(tmp / "cmp" / "report.png")])
            assert made.exit_code == 0, made.output + repr(made.exception)
    finally:
        monkeypatch.undo()
    yield tmp / "cmp"


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
        assert table.select_one("th").get_text() == "run"
        labels = [row.select_one("td").get_text() for row in table.select("tbody tr")]
        assert len([x for x in labels if not x.startswith("↳ baseline: ")]) == 2  # the two runs
        assert len([x for x in labels if x.startswith("↳ baseline: ")]) == 2 * baselines  # each run's baselines
    assert len(dom.select("ul.baselines")) == 3  # the verdict lines against the best baseline, per stage
    ranking = {th.get_text(): i for i, th in enumerate(stage_tables[0].select("thead th"))}
    assert {"BM25 NDCG", "Rerank NDCG", "scored", "excluded", "failed"} <= set(ranking)
    cells = stage_tables[0].select("tbody tr")[0].select("td")
    assert cells[ranking["Rerank NDCG"]].get_text().count("[") == 1  # mean [CI]
    assert len(dom.select("img.chart[src^='data:image/png;base64,']")) == 3
    settings = {row.select_one("th").get_text(): [td.get_text() for td in row.select("td")]
                for row in dom.select("#settings + div table tbody tr")}
    assert settings["outline.mode"] == ["description", "direct"]  # one row per setting, one column per run
    assert dom.select_one("#deltas") is not None and len(dom.select("table.deltas")) == 3
    paired = dom.select("table.sortable.paired-table")  # after each stage's table: one row per metric
    assert len(paired) == 3 and all(t.select_one("th").get_text() == "metric" for t in paired)
    assert len(dom.select("table.problems tbody tr")) == 6  # the fixture's sections without a source snippet
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
    nodes = [row.select("td")[1].get_text(" ", strip=True) for row in dom.select("table.trace-table tbody tr")]
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
    clicks = ("<script>var th = document.querySelector('table.article-index thead th'); th.click(); th.click();"
              "</script></body>")
    page.write_text((report / "report.html").read_text(encoding="utf-8").replace("</body>", clicks), encoding="utf-8")
    dom = BeautifulSoup(dump_dom(page), "html.parser")
    names = [a.get_text() for a in dom.select("table.article-index tbody a")]
    assert names == ["Сколково", "Москва", "Python"]
    assert dom.select_one("table.article-index thead th")["aria-sort"] == "descending"
