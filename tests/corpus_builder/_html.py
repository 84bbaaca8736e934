"""Synthetic saved-page HTML for parser tests."""

from __future__ import annotations


def page(body: str, title: str = "Статья", head: str = "") -> str:
    """A saved-page-shaped HTML document around ``body`` (the inside of div.mw-parser-output)."""
    return (
        f'<html><head>{head}</head><body><h1 id="firstHeading">{title}</h1>'
        f'<div id="mw-content-text"><div class="mw-parser-output">{body}</div></div></body></html>'
    )


def mark(note_id: str, label: str) -> str:
    return f'<sup id="cite_ref-{note_id}" class="reference"><a href="#{note_id}">&#91;{label}&#93;</a></sup>'


def h(level: int, title: str) -> str:
    edit = (
        '<span class="mw-editsection"><span class="mw-editsection-bracket">[</span>'
        '<a href="/w/index.php?action=edit">править</a><span class="mw-editsection-bracket">]</span></span>'
    )
    return f'<h{level}><span class="mw-headline" id="{title}">{title}</span>{edit}</h{level}>'


def reflist(*items: tuple[str, str]) -> str:
    lis = "".join(
        f'<li id="{i}"><span class="mw-cite-backlink">↑</span> <span class="reference-text">{t}</span></li>'
        for i, t in items
    )
    return f'<div class="mw-references-wrap"><ol class="references">{lis}</ol></div>'
