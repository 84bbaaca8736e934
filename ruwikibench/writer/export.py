"""Exports of a written article: Markdown, one self-contained HTML page, JSON (with the node trace)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

from ruwikibench.nodes.citations import MARKER, Citation, marker_numbers
from ruwikibench.writer.models import WrittenArticle

REFERENCES_HEADING = "Источники"


def reference_line(citation: Citation) -> str:
    """'label — url (фрагмент k)'; whatever is known of the source."""
    fragment = citation.snippet_id.rsplit("#", 1)[-1] if "#" in citation.snippet_id else ""
    parts = [citation.label.strip() or citation.source_id]
    if citation.url:
        parts.append(citation.url)
    line = " — ".join(parts)
    if fragment.isdigit():
        line += f" (фрагмент {int(fragment) + 1})"
    return line


def to_markdown(article: WrittenArticle) -> str:
    parts = [f"# {article.title}"]
    if article.lead:
        parts.append(article.lead)
    body = article.body()
    if body:
        parts.append(body)
    if article.references:
        parts.append(f"## {REFERENCES_HEADING}")
        parts.append("\n".join(f"{c.n}. {reference_line(c)}" for c in article.references))
    return "\n\n".join(parts) + "\n"


def _linked(text: str, known: set[int]) -> str:
    """HTML-escape ``text``, turn [n] markers into links to the reference list, paragraphs into <p>."""

    def link(match: re.Match[str]) -> str:
        numbers = marker_numbers(match.group(1))
        return "".join(
            f"<a class='cite' href='#ref-{n}'>[{n}]</a>" if n in known else f"[{n}]" for n in numbers
        )

    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    out = []
    for paragraph in paragraphs:
        pieces, last = [], 0
        for match in MARKER.finditer(paragraph):
            pieces.append(html.escape(paragraph[last : match.start()]))
            pieces.append(link(match))
            last = match.end()
        pieces.append(html.escape(paragraph[last:]))
        out.append("<p>" + "".join(pieces).replace("\n", "<br>") + "</p>")
    return "\n".join(out)


_STYLE = """
body{font-family:Georgia,serif;max-width:860px;margin:2em auto;padding:0 1em;line-height:1.55;color:#202122}
h1{font-weight:normal;border-bottom:1px solid #a2a9b1}h2{font-weight:normal;border-bottom:1px solid #c8ccd1}
a.cite{font-size:.75em;vertical-align:super;text-decoration:none}
details.sources{font-family:sans-serif;font-size:.85em;background:#f8f9fa;border:1px solid #eaecf0;
margin:.4em 0 1em;padding:.3em .6em}
details.sources li{margin:.3em 0}.uncited{color:#72777d}
.snippet{white-space:pre-wrap;font-size:.9em;background:#fff;border-left:3px solid #c8ccd1;padding:.3em .6em}
ol.refs li{margin:.4em 0}.meta{font-family:sans-serif;font-size:.8em;color:#54595d}
"""


def _source_details(snippet_ids: list[str], by_snippet: dict[str, Citation], texts: dict[str, str]) -> str:
    """The sources shown to one section's writer, expandable; cited ones carry their number."""
    if not snippet_ids:
        return ""
    items = []
    for sid in snippet_ids:
        citation = by_snippet.get(sid)
        text = html.escape(citation.text if citation else texts.get(sid, ""))
        if citation:
            head = f"<a href='#ref-{citation.n}'>[{citation.n}]</a> {html.escape(reference_line(citation))}"
            items.append(f"<li><details><summary>{head}</summary><div class='snippet'>{text}</div></details></li>")
        else:
            head = f"<span class='uncited'>{html.escape(sid)} (не процитирован)</span>"
            items.append(f"<li><details><summary>{head}</summary><div class='snippet'>{text}</div></details></li>")
    return (f"<details class='sources'><summary>Источники раздела ({len(snippet_ids)})</summary>"
            f"<ul>{''.join(items)}</ul></details>")


def to_html(article: WrittenArticle, snippet_texts: dict[str, str] | None = None) -> str:
    """One self-contained page: the article, under each section the sources its writer saw, the references."""
    texts = snippet_texts or {}
    by_snippet = {c.snippet_id: c for c in article.references}
    known = {c.n for c in article.references}
    body = [f"<h1>{html.escape(article.title)}</h1>"]
    if article.lead:
        body.append(_linked(article.lead, known))
    for section in article.sections:
        level = min(section.level, 6)
        body.append(f"<h{level} id='{html.escape(section.id)}'>{html.escape(section.title)}</h{level}>")
        if section.text:
            body.append(_linked(section.text, known))
        body.append(_source_details(section.shown_snippets, by_snippet, texts))
    if article.references:
        body.append(f"<h2>{REFERENCES_HEADING}</h2><ol class='refs'>")
        for c in article.references:
            link = f" <a href='{html.escape(c.url)}'>{html.escape(c.url)}</a>" if c.url else ""
            label = html.escape(c.label.strip() or c.source_id)
            body.append(
                f"<li id='ref-{c.n}' value='{c.n}'>{label}{link}<details><summary class='meta'>текст фрагмента "
                f"{html.escape(c.snippet_id)}</summary><div class='snippet'>{html.escape(c.text)}</div></details></li>"
            )
        body.append("</ol>")
    stats = ", ".join(f"{k}: {v:g}" for k, v in sorted(article.stats.items()))
    body.append(f"<p class='meta'>{html.escape(stats)}</p>")
    return (
        "<!doctype html><html lang='ru'><head><meta charset='utf-8'>"
        f"<title>{html.escape(article.title)}</title><style>{_STYLE}</style></head><body>"
        + "\n".join(part for part in body if part)
        + "</body></html>\n"
    )


def to_json(article: WrittenArticle, trace: list[dict[str, Any]] | None = None,
            extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Outline, sections, citations, stats and the trace of node outputs, JSON-able."""
    data = article.model_dump(mode="json")
    data["markdown"] = to_markdown(article)
    data["trace"] = trace or []
    data.update(extra or {})
    return data


def write_exports(article: WrittenArticle, out_dir: str | Path, *, trace: list[dict[str, Any]] | None = None,
                  snippet_texts: dict[str, str] | None = None, extra: dict[str, Any] | None = None,
                  stem: str = "article") -> dict[str, Path]:
    """Write ``article.md``, ``article.html`` and ``article.json`` into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / f"{stem}.md", "html": out / f"{stem}.html", "json": out / f"{stem}.json"}
    paths["md"].write_text(to_markdown(article), encoding="utf-8")
    paths["html"].write_text(to_html(article, snippet_texts), encoding="utf-8")
    payload = to_json(article, trace, extra)
    paths["json"].write_text(json.dumps(payload, ensure_ascii=False, indent=1, default=_default), encoding="utf-8")
    return paths


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(obj)
