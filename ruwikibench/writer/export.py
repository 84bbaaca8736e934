"""Exports of a written article: Markdown, one self-contained HTML page, JSON (with the node trace)."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ruwikibench.nodes.citations import MARKER, Citation, marker_numbers
from ruwikibench.storage.durable import write_atomic
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


def _inline(fragment: str, known: set[int]) -> str:
    """HTML-escape a piece of text and turn its [n] markers into links to the reference list."""
    pieces, last = [], 0
    for match in MARKER.finditer(fragment):
        pieces.append(html.escape(fragment[last : match.start()]))
        numbers = marker_numbers(match.group(1))
        pieces.append(
            "".join(f"<a class='cite' href='#ref-{n}'>[{n}]</a>" if n in known else f"[{n}]" for n in numbers)
        )
        last = match.end()
    pieces.append(html.escape(fragment[last:]))
    return "".join(pieces)


def _paragraphs(text: str) -> list[tuple[int, int]]:
    """(start, end) of each paragraph (blocks separated by blank lines), surrounding whitespace left out."""
    spans, start = [], 0
    for sep in [*re.finditer(r"\n\s*\n", text), None]:
        end = sep.start() if sep else len(text)
        block = text[start:end]
        if block.strip():
            lead = len(block) - len(block.lstrip())
            spans.append((start + lead, start + len(block.rstrip())))
        start = sep.end() if sep else len(text)
    return spans


_STATUS_NOTE = {
    "supported": "подтверждено процитированными источниками",
    "unsupported": "не подтверждено процитированными источниками",
    "unjudged": "не оценено: ответ судьи не разобран или запрос не удался",
    "uncited": "без ссылки",
}


def _why(sentence: Any, score: Any) -> str:
    """The note shown on hover/focus: the verdict, P(supported), and the best passage of each cited
    snippet."""
    note = _STATUS_NOTE[sentence.status]
    if sentence.status == "uncited" and sentence.checkable:
        note += " — утверждение, которое стоит подтвердить источником"
    probability = score.probabilities.get(sentence.index)
    if probability is not None:
        note += f" (P = {probability:.2f})"
    parts = [f"<b>{html.escape(note)}</b>"]
    for number in sentence.numbers:
        passage = score.passages.get(sentence.index, {}).get(number)
        body = html.escape(passage.strip()) if passage else "нет такого источника"
        parts.append(f"<span class='passage'><b>[{number}]</b> {body}</span>")
    return "".join(parts)


def _linked(text: str, known: set[int], score: Any = None) -> str:
    """HTML-escape ``text``, turn [n] markers into links to the reference list, paragraphs into <p>; with a
    citation ``score`` (a TextScore of ``judge citations``) each sentence is marked supported / unsupported /
    uncited / unjudged, its note and cited passages shown on hover or focus."""
    sentences = list(zip(score.spans, score.sentences)) if score is not None else []
    out = []
    for start, end in _paragraphs(text):
        pieces, cursor = [], start
        for (s_start, s_end), sentence in sentences:
            if s_start < start or s_start >= end:
                continue
            pieces.append(_inline(text[cursor:s_start], known))
            css = sentence.status + (" claim" if sentence.status == "uncited" and sentence.checkable else "")
            pieces.append(
                f"<span class='sent {css}' tabindex='0'>{_inline(text[s_start:s_end], known)}"
                f"<span class='why'>{_why(sentence, score)}</span></span>"
            )
            cursor = s_end
        pieces.append(_inline(text[cursor:end], known))
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
.sent{position:relative;border-radius:2px}.sent.supported{background:#e6f4ea}.sent.unsupported{background:#fce8e6}
.sent.uncited.claim{background:#fef7e0}.sent.unjudged{background:#eaecf0}
.sent .why{display:none;position:absolute;left:0;top:1.5em;z-index:5;width:36em;max-width:85vw;background:\
#fff;
border:1px solid #a2a9b1;padding:.4em .6em;font-family:sans-serif;font-size:.8em;line-height:1.4;
white-space:pre-wrap;box-shadow:0 2px 6px rgba(0,0,0,.2)}
.sent:hover .why,.sent:focus .why{display:block}.why .passage{display:block;margin-top:.3em}
.legend span{padding:0 .3em;margin-right:.4em}
"""

_LEGEND = (
    "<p class='meta legend'>Проверка ссылок (наведите на предложение): "
    "<span class='sent supported'>подтверждено</span><span class='sent unsupported'>не подтверждено</span>"
    "<span class='sent uncited claim'>факт без ссылки</span><span class='sent unjudged'>не оценено</span>"
    "</p>"
)


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
            items.append(
                f"<li><details><summary>{head}</summary><div class='snippet'>{text}</div></details></li>"
            )
        else:
            head = f"<span class='uncited'>{html.escape(sid)} (не процитирован)</span>"
            items.append(
                f"<li><details><summary>{head}</summary><div class='snippet'>{text}</div></details></li>"
            )
    return (
        f"<details class='sources'><summary>Источники раздела ({len(snippet_ids)})</summary>"
        f"<ul>{''.join(items)}</ul></details>"
    )


def to_html(
    article: WrittenArticle,
    snippet_texts: dict[str, str] | None = None,
    marks: Mapping[str, Any] | None = None,
) -> str:
    """One self-contained page: the article, under each section the sources its writer saw, the references.
    ``marks`` (text item -> TextScore of ``judge citations``; ``lead`` for the lead) marks each sentence."""
    texts = snippet_texts or {}
    marks = marks or {}
    by_snippet = {c.snippet_id: c for c in article.references}
    known = {c.n for c in article.references}
    body = [f"<h1>{html.escape(article.title)}</h1>", _LEGEND if marks else ""]
    if article.lead:
        body.append(_linked(article.lead, known, marks.get("lead")))
    for section in article.sections:
        level = min(section.level, 6)
        body.append(f"<h{level} id='{html.escape(section.id)}'>{html.escape(section.title)}</h{level}>")
        if section.text:
            body.append(_linked(section.text, known, marks.get(section.id)))
        body.append(_source_details(section.shown_snippets, by_snippet, texts))
    if article.references:
        body.append(f"<h2>{REFERENCES_HEADING}</h2><ol class='refs'>")
        for c in article.references:
            link = f" <a href='{html.escape(c.url)}'>{html.escape(c.url)}</a>" if c.url else ""
            label = html.escape(c.label.strip() or c.source_id)
            body.append(
                f"<li id='ref-{c.n}' value='{c.n}'>{label}{link}<details><summary class='meta'>текст "
                f"фрагмента {html.escape(c.snippet_id)}</summary><div "
                f"class='snippet'>{html.escape(c.text)}</div></details></li>"
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


def to_json(
    article: WrittenArticle, trace: list[dict[str, Any]] | None = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Outline, sections, citations, stats and the trace of node outputs, JSON-able."""
    data = article.model_dump(mode="json")
    data["markdown"] = to_markdown(article)
    data["trace"] = trace or []
    data.update(extra or {})
    return data


def write_exports(
    article: WrittenArticle,
    out_dir: str | Path,
    *,
    trace: list[dict[str, Any]] | None = None,
    snippet_texts: dict[str, str] | None = None,
    extra: dict[str, Any] | None = None,
    stem: str = "article",
) -> dict[str, Path]:
    """Write ``article.md``, ``article.html`` and ``article.json`` into ``out_dir``; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"md": out / f"{stem}.md", "html": out / f"{stem}.html", "json": out / f"{stem}.json"}
    write_atomic(paths["md"], to_markdown(article))  # atomic, secrets redacted
    write_atomic(paths["html"], to_html(article, snippet_texts))
    payload = to_json(article, trace, extra)
    write_atomic(paths["json"], json.dumps(payload, ensure_ascii=False, indent=1, default=_default))
    return paths


def _default(obj: Any) -> Any:
    dump = getattr(obj, "model_dump", None)
    return dump(mode="json") if callable(dump) else str(obj)
