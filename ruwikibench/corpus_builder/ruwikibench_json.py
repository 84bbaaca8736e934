"""Import and export of the published RuWikiBench JSON layout.

The file is a JSON list of ``{article_name, article_cleared_name, html, sources: [{source_id, source_text,
file}]}``. ``source_id`` is the id of the footnote ``<li>`` that cites the text; several texts may share one
footnote; an id that no footnote of the page carries (e.g. ``unmapped-source_3``) marks a source of the
article that no paragraph cites. Import parses each page once, applies the paper's filters in order and cuts
the kept sources into snippets.
"""

from __future__ import annotations

import html as html_lib
import json
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, Field

from ruwikibench.corpus_builder.filters import (
    MIN_SOURCE_CHARS,
    FilterReport,
    filter_article,
    source_is_long_enough,
)
from ruwikibench.corpus_builder.html_parser import ListMode, NoArticleBody, parse_article_html, primary_url
from ruwikibench.corpus_builder.snippets import DEFAULT_OVERLAP, DEFAULT_WINDOW, make_snippets
from ruwikibench.dataset import Article, Dataset, Section, Snippet, Source, safe_name


class CorpusError(Exception):
    """Bad corpus input; ``str()`` is one line naming the file (and the article when there is one)."""

    def __init__(self, file: str | Path, message: str, article: str | None = None) -> None:
        self.file = str(file)
        self.article = article
        self.message = message
        where = f"{self.file}: article {article!r}: " if article is not None else f"{self.file}: "
        super().__init__(where + message)


class DuplicateTitle(CorpusError):
    """Two entries of the file have the same ``article_name`` (imported only with ``rename_duplicates``)."""


class ImportParams(BaseModel):
    """Build parameters; stored in the manifest and in ``Dataset.params``."""

    min_source_chars: int = MIN_SOURCE_CHARS
    window: int = DEFAULT_WINDOW
    overlap: int = DEFAULT_OVERLAP
    lists: ListMode = "ignore"


class ArticleReport(BaseModel):
    """Per-article import counts (the filters' effect)."""

    article: str
    sources_in: int
    sources_kept: int
    sources_uncited: int = Field(description="kept sources that no kept paragraph cites")
    paragraphs_in: int
    paragraphs_kept: int
    headings_in: int
    headings_kept: int
    snippets: int


class ImportResult(BaseModel):
    dataset: Dataset
    reports: list[ArticleReport]
    errors: list[str] = Field(default_factory=list, description="one line per article that failed")


# --------------------------------------------------------------------------- reading


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """Load the JSON list; missing file / invalid JSON / wrong shape raise :class:`CorpusError`."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(path, "file not found" if not path.exists() else "not a file")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CorpusError(path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from exc
    except UnicodeDecodeError as exc:
        raise CorpusError(path, f"not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
    if not isinstance(data, list):
        raise CorpusError(path, f"expected a JSON list of articles, got {type(data).__name__}")
    return data


def _record_title(record: Any, position: int) -> str:
    if (
        isinstance(record, dict)
        and isinstance(record.get("article_name"), str)
        and record["article_name"].strip()
    ):
        return record["article_name"].strip()
    return f"#{position}"


def _sources_of(record: dict[str, Any], name: str, path: Path, title: str) -> list[Source]:
    raw = record.get("sources", [])
    if not isinstance(raw, list):
        raise CorpusError(path, "'sources' is not a list", title)
    sources: list[Source] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("source_text"), str):
            raise CorpusError(path, f"sources[{i}] has no 'source_text' string", title)
        file: str = item["file"] if isinstance(item.get("file"), str) else f"source_{i + 1}.txt"
        footnote: str = item["source_id"] if isinstance(item.get("source_id"), str) else f"unmapped-{file}"
        stem = PurePosixPath(file).stem
        sources.append(
            Source(
                id=f"{name}/{stem}", article=name, footnote_id=footnote, text=item["source_text"], file=file
            )
        )
    ids = [s.id for s in sources]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise CorpusError(path, f"two sources share the file name of {dup!r}", title)
    return sources


def _unique_name(record: dict[str, Any], title: str, taken: set[str]) -> str:
    cleared = record.get("article_cleared_name")
    base = safe_name(cleared if isinstance(cleared, str) and cleared.strip() else title)
    name, n = base, 2
    while name in taken:
        name, n = f"{base} ({n})", n + 1
    return name


# --------------------------------------------------------------------------- import


def build_article(
    record: dict[str, Any], name: str, path: Path, params: ImportParams, title: str
) -> tuple[Article, list[Source], list[Snippet], ArticleReport]:
    """One record -> filtered article, its kept sources and their snippets."""
    html = record.get("html")
    if not isinstance(html, str) or not html.strip():
        raise CorpusError(path, "no 'html'" if html is None else "empty or non-string 'html'", title)
    sources = _sources_of(record, name, path, title)
    try:
        parsed = parse_article_html(html, title, name=name, lists=params.lists)
    except NoArticleBody as exc:
        raise CorpusError(path, str(exc), title) from exc
    urls = {r.id: primary_url(r) for r in parsed.references}
    kept = [
        s.model_copy(update={"url": urls.get(s.footnote_id)})
        for s in sources
        if source_is_long_enough(s, params.min_source_chars)
    ]
    article, report = filter_article(parsed, kept)
    snippets = [snip for s in kept for snip in make_snippets(s, params.window, params.overlap)]
    return article, kept, snippets, _report(article, sources, kept, snippets, report)


def _report(
    article: Article, sources: list[Source], kept: list[Source], snippets: list[Snippet], report: FilterReport
) -> ArticleReport:
    cited = {c for s in article.sections() for p in s.paragraphs for c in p.citations}
    return ArticleReport(
        article=article.name,
        sources_in=len(sources),
        sources_kept=len(kept),
        sources_uncited=sum(1 for s in kept if s.footnote_id not in cited),
        paragraphs_in=report.paragraphs_in,
        paragraphs_kept=report.paragraphs_in - report.paragraphs_dropped,
        headings_in=report.headings_in,
        headings_kept=report.headings_in - report.headings_dropped,
        snippets=len(snippets),
    )


def import_records(
    records: list[Any],
    path: str | Path,
    params: ImportParams | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    rename_duplicates: bool = False,
) -> ImportResult:
    """Import parsed JSON records; a bad article is reported in ``errors`` and the others still import. Two
    entries with the same title are a :class:`DuplicateTitle` (nothing imported), unless
    ``rename_duplicates``: then the later one is named ``Title (2)`` (as is any entry whose file-safe name
    another already has)."""
    if not rename_duplicates:
        check_duplicate_titles(records, path)
    params = params or ImportParams()
    path = Path(path)
    articles: list[Article] = []
    sources: list[Source] = []
    snippets: list[Snippet] = []
    reports: list[ArticleReport] = []
    errors: list[str] = []
    taken: set[str] = set()
    items: Iterable[Any] = enumerate(records)
    for position, record in progress(items) if progress else items:
        title = _record_title(record, position)
        try:
            if not isinstance(record, dict):
                raise CorpusError(path, f"entry is a {type(record).__name__}, not an object", title)
            if title.startswith("#"):
                raise CorpusError(path, "no 'article_name'", title)
            name = _unique_name(record, title, taken)
            article, kept, snips, report = build_article(record, name, path, params, title)
        except CorpusError as exc:
            errors.append(str(exc))
            continue
        taken.add(name)
        articles.append(article)
        sources += kept
        snippets += snips
        reports.append(report)
    dataset = Dataset(articles=articles, sources=sources, snippets=snippets, params=params.model_dump())
    return ImportResult(dataset=dataset, reports=reports, errors=errors)


def check_duplicate_titles(records: list[Any], path: str | Path) -> None:
    """Raise :class:`DuplicateTitle` (one line) for the first title two entries share."""
    first: dict[str, int] = {}
    for position, record in enumerate(records):
        title = _record_title(record, position)
        if title.startswith("#"):
            continue
        if title in first:
            raise DuplicateTitle(
                path,
                f"entries #{first[title]} and #{position} have this title; remove one, or import with "
                f"--rename-duplicates (the later one becomes {title + ' (2)'!r})",
                title,
            )
        first[title] = position


def import_ruwikibench_json(
    path: str | Path,
    params: ImportParams | None = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] | None = None,
    rename_duplicates: bool = False,
) -> ImportResult:
    """Read the published JSON file and import it (file-level problems raise :class:`CorpusError`)."""
    return import_records(read_records(path), path, params, progress, rename_duplicates)


# --------------------------------------------------------------------------- export


def render_article_html(article: Article) -> str:
    """A minimal MediaWiki-shaped page for an Article that :func:`parse_article_html` reads back unchanged.

    Footnote marks are numbered per footnote id; explanatory notes get ``[прим. N]`` labels.
    """
    numbers: dict[str, str] = {}

    def mark(footnote: str, note: bool) -> str:
        if footnote not in numbers:
            count = sum(1 for v in numbers.values() if v.startswith("прим.") == note) + 1
            numbers[footnote] = f"прим. {count}" if note else str(count)
        href = html_lib.escape(footnote, quote=True)
        return f'<sup class="reference"><a href="#{href}">[{numbers[footnote]}]</a></sup>'

    def paragraph_html(text: str, citations: list[str], notes: list[str]) -> str:
        marks = "".join(mark(c, False) for c in citations) + "".join(mark(n, True) for n in notes)
        if "\n" in text:  # a list kept as one paragraph (lists="keep")
            items = "".join(f"<li>{html_lib.escape(line)}</li>" for line in text.split("\n"))
            return f"<ul>{items}<li>{marks}</li></ul>" if marks else f"<ul>{items}</ul>"
        return f"<p>{html_lib.escape(text)}{marks}</p>"

    def section_html(section: Section) -> list[str]:
        out = []
        if section.level > 1:
            level = min(section.level, 6)
            sid = html_lib.escape(section.id, quote=True)
            out.append(
                f'<h{level} data-section-id="{sid}"><span class="mw-headline">'
                f"{html_lib.escape(section.title)}</span></h{level}>"
            )
        out += [paragraph_html(p.text, p.citations, p.notes) for p in section.paragraphs]
        for child in section.children:
            out += section_html(child)
        return out

    body = section_html(article.root)
    items = []
    for ref in article.references:
        links = "".join(
            f'<a class="external text" href="{html_lib.escape(u, quote=True)}"></a>' for u in ref.urls
        )
        backlink = f'<span class="mw-cite-backlink">{mark(ref.id, True)}</span>' if ref.is_note else ""
        items.append(
            f'<li id="{html_lib.escape(ref.id, quote=True)}">{backlink}<span class="reference-text">'
            f"{html_lib.escape(ref.label)}{links}</span></li>"
        )
    refs = (
        f'<div class="mw-references-wrap"><ol class="references">{"".join(items)}</ol></div>' if items else ""
    )
    title = html_lib.escape(article.title)
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}</title></head><body>'
        f'<h1 id="firstHeading">{title}</h1><div id="mw-content-text"><div class="mw-parser-output">'
        + "\n".join(body)
        + '\n<h2><span class="mw-headline">Примечания</span></h2>'
        + refs
        + "</div></div></body></html>"
    )


def export_records(dataset: Dataset) -> list[dict[str, Any]]:
    """The dataset in the published layout (HTML rendered from the filtered outline; kept sources only)."""
    records = []
    for article in dataset.articles:
        records.append(
            {
                "article_name": article.title,
                "article_cleared_name": article.name,
                "html": render_article_html(article),
                "sources": [
                    {
                        "source_id": s.footnote_id,
                        "source_text": s.text,
                        "file": s.file or f"{s.id.rsplit('/', 1)[-1]}.txt",
                    }
                    for s in dataset.sources_of(article.name)
                ],
            }
        )
    return records


def export_ruwikibench_json(dataset: Dataset, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(export_records(dataset), ensure_ascii=False, indent=1), encoding="utf-8")
    return path
