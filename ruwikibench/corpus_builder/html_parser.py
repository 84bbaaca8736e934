"""Saved Ruwiki / Wikipedia article HTML -> :class:`~ruwikibench.dataset.Article` (one parse per page).

What is read (see docs/corpus.md for the reasons):

* the body is ``div.mw-parser-output`` (the one inside ``#mw-content-text`` when a page has several);
* headings ``h2``–``h6`` that are children of the body (also inside Wikipedia's newer ``div.mw-heading``
  wrappers and Parsoid ``<section>`` wrappers) build the outline tree; text before the first heading is the
  lead, i.e. the level-1 root section named after the article;
* paragraphs are ``<p>`` children of the body, plus ``<p>`` inside quotation blocks (``blockquote``,
  ``div.ts-Цитата``, ``center``); lists (``ul``/``ol``/``dl``) are ignored by default as in the authors'
  gold outlines, or kept as one paragraph per list with ``lists="keep"``; tables, infoboxes, galleries,
  navigation boxes and thumbnails are never read;
* footnote marks ``<sup class="reference"><a href="#cite_note-…">[5]</a></sup>`` become footnote ids; a mark
  whose label is not a plain number (``[прим. 1]``, ``[К 1]``, ``[комм. 2]``, ``[a]``) is an explanatory
  note and goes to ``Paragraph.notes``, not to ``citations``;
* the reference list is every ``li[id]`` of ``div.mw-references-wrap`` / ``ol.references``; URLs come from the
  links of ``span.reference-text``; Ruwiki ``external-gateway`` links (``href="#<prefix><base64>"``) are
  decoded;
* service sections (Примечания, Литература, Ссылки, См. также, Комментарии, Notes, References, See also, …)
  and everything nested under them are left out of the outline.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from dataclasses import dataclass, field
from typing import Literal

import lxml.html
from lxml import etree

from ruwikibench.dataset import Article, Paragraph, Reference, Section, safe_name

ListMode = Literal["ignore", "keep"]

SERVICE_SECTIONS = frozenset(
    s.casefold()
    for s in (
        "Примечания",
        "Комментарии",
        "Сноски",
        "Источники",
        "Литература",
        "Ссылки",
        "См. также",
        "Внешние ссылки",
        "Дополнительная литература",
        "Библиография",
        "Notes",
        "References",
        "See also",
        "External links",
        "Further reading",
        "Bibliography",
        "Sources",
        "Footnotes",
        "Citations",
        "Notes and references",
    )
)
_HEADING_TAGS = {"h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_LIST_TAGS = {"ul", "ol", "dl"}
_SKIP_INLINE = {"style", "script", "link", "meta", "img", "noscript"}
_QUOTE_CLASS = re.compile(r"Цитата|quote|cquote", re.IGNORECASE)
_WS = re.compile(r"\s+")
_PLAIN_NUMBER = re.compile(r"^\d+$")
_GATEWAY_PREFIX = re.compile(r'"gatewayHashPrefix"\s*:\s*"([^"]*)"')
_ARCHIVES = (
    "web.archive.org",
    "archive.org/",
    "webcitation.org",
    "archive.today",
    "archive.is",
    "archive.ph",
)


class NoArticleBody(ValueError):
    """The HTML has no ``div.mw-parser-output`` (not a saved article page)."""


def _classes(el: etree._Element) -> list[str]:
    return (el.get("class") or "").split()


def clean_ws(text: str) -> str:
    """Collapse whitespace (non-breaking spaces included) to single spaces and strip."""
    return _WS.sub(" ", text.replace("\xa0", " ")).strip()


# --------------------------------------------------------------------------- external-gateway links


def decode_gateway_href(href: str, prefix: str | None = None) -> str | None:
    """Decode Ruwiki's ``external-gateway`` link ``#<prefix><base64(urlencoded URL)>`` to the target URL.

    ``prefix`` is the page's ``gatewayHashPrefix`` (``HeGW`` on ru.ruwiki.ru); when unknown, prefixes of
    0–8 characters are tried and the first that decodes to an http(s) URL wins. Returns None if nothing
    decodes.
    """
    payload = href.removeprefix("#")
    candidates = [len(prefix)] if prefix and payload.startswith(prefix) else range(9)
    for cut in candidates:
        url = _decode_b64_url(payload[cut:])
        if url:
            return url
    return None


def _decode_b64_url(data: str) -> str | None:
    if not data:
        return None
    padded = data + "=" * (-len(data) % 4)
    for decoder in (base64.b64decode, base64.urlsafe_b64decode):
        try:
            raw = decoder(padded).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        url = urllib.parse.unquote(raw) if "%3A" in raw[:12].upper() else raw
        if url.startswith(("http://", "https://", "//")):
            return url
    return None


def is_archive_url(url: str) -> bool:
    return any(marker in url for marker in _ARCHIVES)


# --------------------------------------------------------------------------- inline text


@dataclass
class _Inline:
    """Accumulates a block's text and its footnote marks."""

    parts: list[str] = field(default_factory=list)
    citations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _footnote_target(sup: etree._Element) -> tuple[str, str] | None:
    """(footnote id, mark label) of a ``sup.reference``."""
    for a in sup.iter("a"):
        href = a.get("href") or ""
        if "#" in href:
            target = urllib.parse.unquote(href.split("#", 1)[1])
            label = clean_ws(a.text_content()).strip("[]").strip()
            return target, label
    return None


def _math_text(el: etree._Element) -> str:
    for math in el.iter("math"):
        alt = math.get("alttext") or ""
        alt = re.sub(r"^\{\\displaystyle\s*(.*)\}$", r"\1", alt.strip(), flags=re.DOTALL)
        return alt.strip()
    return ""


def _collect(el: etree._Element, acc: _Inline) -> None:
    """Depth-first text of ``el``'s children (plus tails), recording footnote marks instead of their text."""
    if el.text:
        acc.parts.append(el.text)
    for child in el:
        if isinstance(child, etree._Comment | etree._ProcessingInstruction):
            pass
        elif child.tag == "sup" and "reference" in _classes(child):
            _record_mark(child, acc)
        elif child.tag in _SKIP_INLINE or "noprint" in _classes(child) or "mw-editsection" in _classes(child):
            pass
        elif child.tag == "sup" and clean_ws(child.text_content()).startswith("["):
            pass  # editorial marks: [источник не указан], [см. «…»]
        elif "mwe-math-element" in _classes(child):
            acc.parts.append(_math_text(child))
        elif child.tag == "br":
            acc.parts.append("\n")
        else:
            _collect(child, acc)
        if child.tail:
            acc.parts.append(child.tail)


def _record_mark(sup: etree._Element, acc: _Inline) -> None:
    found = _footnote_target(sup)
    if found is None:
        return
    target, label = found
    bucket = acc.citations if _PLAIN_NUMBER.match(label) else acc.notes
    if target not in bucket:
        bucket.append(target)


def _paragraph(el: etree._Element) -> Paragraph | None:
    acc = _Inline()
    _collect(el, acc)
    text = clean_ws("".join(acc.parts))
    if not text:
        return None
    return Paragraph(text=text, citations=acc.citations, notes=acc.notes)


def _list_paragraph(el: etree._Element) -> Paragraph | None:
    """A whole list as one paragraph: one line per item, marks of all items."""
    lines: list[str] = []
    citations: list[str] = []
    notes: list[str] = []
    for item in el.iter("li", "dd", "dt"):
        if item.getparent() is not el:
            continue
        acc = _Inline()
        _collect(item, acc)
        line = clean_ws("".join(acc.parts))
        if line:
            lines.append(line)
        citations += [c for c in acc.citations if c not in citations]
        notes += [n for n in acc.notes if n not in notes]
    if not lines:
        return None
    return Paragraph(text="\n".join(lines), citations=citations, notes=notes)


# --------------------------------------------------------------------------- outline


def heading_title(h: etree._Element) -> str:
    """Heading text without the ``[править | править код]`` edit links."""
    headline = h.find('.//span[@class="mw-headline"]')
    if headline is not None:
        return clean_ws(headline.text_content())
    acc = _Inline()
    _collect(h, acc)
    return clean_ws("".join(acc.parts))


@dataclass
class _OutlineBuilder:
    root: Section
    lists: ListMode
    stack: list[Section] = field(default_factory=list)
    skip_level: int | None = None  # inside a service section of this level
    counter: int = 0
    ids: set[str] = field(default_factory=lambda: {"s0"})

    def heading(self, level: int, title: str, section_id: str | None = None) -> None:
        if self.skip_level is not None and level > self.skip_level:
            return
        self.skip_level = None
        if title.casefold() in SERVICE_SECTIONS:
            self.skip_level = level
            return
        while self.stack and self.stack[-1].level >= level:
            self.stack.pop()
        parent = self.stack[-1] if self.stack else self.root
        self.counter += 1
        if not section_id or section_id in self.ids:
            section_id = f"s{self.counter}"
            while section_id in self.ids:
                section_id += "_"
        self.ids.add(section_id)
        section = Section(id=section_id, level=level, title=title)
        parent.children.append(section)
        self.stack.append(section)

    def paragraph(self, paragraph: Paragraph | None) -> None:
        if paragraph is None or self.skip_level is not None:
            return
        (self.stack[-1] if self.stack else self.root).paragraphs.append(paragraph)

    def walk(self, container: etree._Element) -> None:
        """Read the children of a body-level container in document order."""
        for child in container:
            tag = child.tag if isinstance(child.tag, str) else ""
            classes = _classes(child)
            if tag in _HEADING_TAGS:
                self.heading(_HEADING_TAGS[tag], heading_title(child), child.get("data-section-id"))
            elif tag == "div" and "mw-heading" in classes:
                self.walk(
                    child
                )  # Wikipedia 2024+: <div class="mw-heading"><h2>…</h2><span editsection/></div>
            elif tag == "p":
                self.paragraph(_paragraph(child))
            elif tag in _LIST_TAGS:
                if self.lists == "keep":
                    self.paragraph(_list_paragraph(child))
            elif tag in ("section", "blockquote", "center") or (
                tag == "div" and _QUOTE_CLASS.search(child.get("class") or "")
            ):
                self.walk(child)


# --------------------------------------------------------------------------- references


def _references(body: etree._Element, note_ids: set[str], gateway_prefix: str | None) -> list[Reference]:
    refs: list[Reference] = []
    seen: set[str] = set()
    lists = body.xpath(
        './/div[contains(concat(" ", normalize-space(@class), " "), " mw-references-wrap ")]//li[@id]'
        ' | .//ol[contains(concat(" ", normalize-space(@class), " "), " references ")]/li[@id]'
    )
    for li in lists:
        ref_id = urllib.parse.unquote(li.get("id"))
        if ref_id in seen:
            continue
        seen.add(ref_id)
        text_el = li.find('.//span[@class="reference-text"]')
        scope = text_el if text_el is not None else li
        urls: list[str] = []
        other: list[str] = []
        for a in scope.iter("a"):
            url = _link_url(a, gateway_prefix)
            if url and url not in urls:
                urls.append(url)
            elif url is None and _OTHER_SCHEME.match(a.get("href") or "") and a.get("href") not in other:
                other.append(a.get("href") or "")
        refs.append(
            Reference(
                id=ref_id,
                urls=urls,
                label=clean_ws(scope.text_content()),
                is_note=ref_id in note_ids,
                other_links=other,
            )
        )
    return refs


_OTHER_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")  # file:, ftp://, gopher://, mailto: …


def _link_url(a: etree._Element, gateway_prefix: str | None) -> str | None:
    href = a.get("href") or ""
    if "external-gateway" in _classes(a) or (
        href.startswith("#") and gateway_prefix and href[1:].startswith(gateway_prefix)
    ):
        return decode_gateway_href(href, gateway_prefix)
    if href.startswith(("http://", "https://")):
        return href
    if href.startswith("//"):
        return "https:" + href
    return None


def primary_url(reference: Reference) -> str | None:
    """The first non-archive URL of a reference (or its first URL)."""
    for url in reference.urls:
        if not is_archive_url(url):
            return url
    return reference.urls[0] if reference.urls else None


# --------------------------------------------------------------------------- entry point


def find_body(doc: etree._Element) -> etree._Element:
    bodies = doc.xpath('//div[contains(concat(" ", normalize-space(@class), " "), " mw-parser-output ")]')
    if not bodies:
        raise NoArticleBody("no article body (div.mw-parser-output) in the HTML")
    for body in bodies:
        if body.xpath('ancestor::*[@id="mw-content-text"]'):
            return body
    return max(bodies, key=lambda b: len(b))


def parse_article_html(
    html: str, title: str | None = None, *, name: str | None = None, lists: ListMode = "ignore"
) -> Article:
    """Parse a saved article page once into an Article (outline tree, paragraphs with footnote ids,
    references).

    ``title`` defaults to the page's ``h1#firstHeading``; ``name`` (file-safe) defaults to
    ``safe_name(title)``. Raises :class:`NoArticleBody` when the page has no ``div.mw-parser-output``.
    """
    if not html or not html.strip():
        raise NoArticleBody("empty HTML")
    try:
        doc = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        raise NoArticleBody(f"unparsable HTML: {exc}") from exc
    body = find_body(doc)
    if title is None:
        h1 = doc.find('.//h1[@id="firstHeading"]')
        title = clean_ws(h1.text_content()) if h1 is not None else "untitled"
    root = Section(id="s0", level=1, title=title)
    builder = _OutlineBuilder(root=root, lists=lists)
    builder.walk(body)
    note_ids = {n for s in root.walk() for p in s.paragraphs for n in p.notes}
    note_ids |= _note_targets(body)
    prefix_match = _GATEWAY_PREFIX.search(html[:200_000])
    refs = _references(body, note_ids, prefix_match.group(1) if prefix_match else None)
    return Article(title=title, name=name or safe_name(title), root=root, references=refs)


def _note_targets(body: etree._Element) -> set[str]:
    """Footnote ids marked with a non-numeric label anywhere in the body (tables and lists included)."""
    notes: set[str] = set()
    for sup in body.xpath('.//sup[contains(concat(" ", normalize-space(@class), " "), " reference ")]'):
        found = _footnote_target(sup)
        if found and not _PLAIN_NUMBER.match(found[1]):
            notes.add(found[0])
    return notes
