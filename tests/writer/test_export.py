"""Exports: Markdown, self-contained HTML (sources under sections, marker links), JSON with the trace."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from ruwikibench.nodes.citations import Citation, MarkerStats
from ruwikibench.writer.export import to_html, to_markdown, write_exports
from ruwikibench.writer.models import OutlineItem, WrittenArticle, WrittenSection


def article() -> WrittenArticle:
    refs = [
        Citation(
            n=1,
            snippet_id="A/1#0",
            source_id="A/1",
            url="https://e.x/1",
            label="Книга",
            text="первый <текст>",
        ),
        Citation(n=2, snippet_id="A/2#3", source_id="A/2", url=None, label="", text="второй текст"),
    ]
    sections = [
        WrittenSection(
            id="s1",
            level=2,
            title="История",
            text="Основан в 1147 году [1].\n\nПозже [2].",
            cited=[1, 2],
            shown_snippets=["A/1#0", "A/2#3", "A/3#0"],
            markers=MarkerStats(kept=2),
        ),
        WrittenSection(id="s2", level=3, title="Основание", text=""),
    ]
    return WrittenArticle(
        title="Москва",
        lead="Москва — столица [1].",
        lead_cited=[1],
        outline=[
            OutlineItem(id="s1", level=2, title="История"),
            OutlineItem(id="s2", level=3, title="Основание", parents=["История"]),
        ],
        sections=sections,
        references=refs,
        stats={"markers_removed": 1.0},
    )


def test_markdown_layout() -> None:
    md = to_markdown(article())
    assert md.startswith("# Москва\n\nМосква — столица [1].\n\n## История\n\nОснован в 1147 году [1].")
    assert "\n### Основание\n" in md
    assert md.rstrip().endswith("1. Книга — https://e.x/1 (фрагмент 1)\n2. A/2 (фрагмент 4)")


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.tags: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append(tag)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href", "").startswith("#"):
            self.hrefs.append(attrs["href"][1:])
        if tag in ("script", "link", "img") or (tag == "a" and attrs.get("href", "").startswith("http")):
            self.external.append(attrs.get("href") or attrs.get("src") or tag)


def test_html_is_self_contained_with_sources_per_section() -> None:
    page = to_html(article(), {"A/3#0": "не процитированный фрагмент"})
    parser = _Collector()
    parser.feed(page)
    assert set(parser.hrefs) <= parser.ids  # every in-page link resolves
    assert {"ref-1", "ref-2", "s1", "s2"} <= parser.ids
    assert parser.external == ["https://e.x/1"]  # only the source link; no script, stylesheet or image
    assert "&lt;текст&gt;" in page  # snippet text escaped
    assert "Источники раздела (3)" in page and "не процитированный фрагмент" in page
    assert page.count("<details class='sources'>") == 1  # s2 was shown nothing


def test_write_exports_json_has_outline_sections_citations_trace(tmp_path) -> None:
    trace = [{"node": "assign", "namespace": "", "output": {"x": 1}}]
    paths = write_exports(article(), tmp_path, trace=trace, extra={"usage": {"writer": {"calls": 3}}})
    data = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert [o["title"] for o in data["outline"]] == ["История", "Основание"]
    assert data["sections"][0]["cited"] == [1, 2]
    assert [r["n"] for r in data["references"]] == [1, 2]
    assert data["trace"] == trace and data["usage"]["writer"]["calls"] == 3
    assert data["markdown"] == paths["md"].read_text(encoding="utf-8")
    assert re.search(r"<title>Москва</title>", paths["html"].read_text(encoding="utf-8"))
