"""Titles -> article pages -> references -> downloaded and extracted sources -> dataset (paper section 1).

For each title the page ``https://<site>/wiki/<Title_with_underscores>`` is fetched and parsed once
(:func:`~ruwikibench.corpus_builder.html_parser.parse_article_html`). Every footnote that is not an explanatory
note and has URLs is one candidate source: its URLs are tried in order (original links first, archive copies
after them) and the first that downloads and yields at least ``min_source_chars`` characters of main text
becomes the footnote's source; the other URLs are not requested. Pages download concurrently under the
fetcher's per-host limits; extraction runs in a worker thread so downloads keep flowing.

The result is written as (1) the published RuWikiBench JSON layout — the full page HTML plus
``{source_id, source_text, file}`` per kept source — and (2) the processed dataset, produced from exactly those
records by the same import the ``corpus import`` command uses (paper filters, snippets), so a build and an
import of its JSON give the same dataset. ``manifest.jsonl`` has one line per URL (pages and sources).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field

from ruwikibench.corpus_builder.html_parser import NoArticleBody, is_archive_url, parse_article_html
from ruwikibench.corpus_builder.ruwikibench_json import ImportParams, import_records
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.extract import DEFAULT_CHAIN, decode_html, extract_text
from ruwikibench.corpus_builder.web.fetch import Fetcher, normalize_url
from ruwikibench.corpus_builder.web.types import FetchResult, FetchSettings
from ruwikibench.dataset import Article, Dataset, Reference, safe_name

SITES = ("ru.ruwiki.ru", "ru.wikipedia.org", "en.wikipedia.org")
RECORDS_FILE = "ruwikibench_articles.json"
URL_MANIFEST = "manifest.jsonl"
SUMMARY_FILE = "build_summary.json"
_TITLE_SAFE = ":/(),!*'@$;~-._"


class BuildError(Exception):
    """Bad build input (titles file, site); the message names the file or option."""


class BuildSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    site: str = "ru.ruwiki.ru"
    base_url: str | None = Field(default=None, description="fetch pages from here instead of https://<site>")
    fetch: FetchSettings = Field(default_factory=FetchSettings)
    extractors: tuple[str, ...] = DEFAULT_CHAIN
    min_source_chars: int = 1500
    window: int = 600
    overlap: int = 0
    lists: Literal["ignore", "keep"] = "ignore"
    cache_dir: str | None = Field(default=None, description="page cache; default <out>/cache")


class UrlRecord(BaseModel):
    """One line of manifest.jsonl."""

    article: str
    kind: Literal["page", "source"]
    footnote: str | None = None
    url: str
    outcome: Literal["kept", "excluded", "skipped", "page", "failed"]
    reason: str | None = Field(default=None, description="why excluded, skipped or failed; None when kept")
    detail: str = ""
    status: int | None = None
    final_url: str | None = None
    redirects: int = 0
    content_type: str | None = None
    bytes: int = 0
    chars: int = 0
    extractor: str | None = None
    attempts: int = 0
    cached: bool = False
    elapsed: float = 0.0
    file: str | None = None


class BuildSummary(BaseModel):
    titles: int = 0
    articles_built: int = 0
    articles_failed: dict[str, int] = Field(default_factory=dict)
    references: int = 0
    references_with_urls: int = 0
    notes_skipped: int = 0
    urls: int = 0
    urls_requested: int = 0
    downloaded: int = 0
    kept: int = 0
    excluded: dict[str, int] = Field(default_factory=dict, description="URLs excluded, by reason")
    skipped: int = Field(
        default=0, description="URLs not requested: an earlier URL of the footnote gave text"
    )
    requests_sent: int = 0
    cache_hits: int = 0
    dataset_id: str | None = None
    sources: int = 0
    snippets: int = 0
    errors: list[str] = Field(default_factory=list)


class BuildResult(BaseModel):
    summary: BuildSummary
    dataset: Dataset
    records: list[dict[str, Any]]
    manifest: list[UrlRecord]


class Progress(Protocol):
    """Progress callbacks of a build (the CLI draws bars from them)."""

    def pages_total(self, n: int) -> None: ...

    def page_done(self) -> None: ...

    def sources_total(self, n: int) -> None: ...

    def source_done(self) -> None: ...


class NullProgress:
    def pages_total(self, n: int) -> None:
        pass

    def page_done(self) -> None:
        pass

    def sources_total(self, n: int) -> None:
        pass

    def source_done(self) -> None:
        pass


def page_url(site: str, title: str, base_url: str | None = None) -> str:
    """https://<site>/wiki/<title: spaces -> _, percent-encoded>; ``base_url`` replaces the scheme and host."""
    base = (base_url or f"https://{site}").rstrip("/")
    return f"{base}/wiki/{quote(title.strip().replace(' ', '_'), safe=_TITLE_SAFE)}"


def read_titles(path: str | Path) -> list[str]:
    """One title per line (UTF-8); blank lines and lines starting with '#' are skipped; duplicates dropped."""
    path = Path(path)
    if not path.is_file():
        raise BuildError(f"{path}: titles file not found")
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except UnicodeDecodeError as exc:
        raise BuildError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    titles = list(dict.fromkeys(t.strip() for t in lines if t.strip() and not t.lstrip().startswith("#")))
    if not titles:
        raise BuildError(f"{path}: no titles (one article title per line)")
    return titles


def ordered_urls(reference: Reference) -> list[str]:
    """The reference's URLs, fragments removed, originals first and archive copies after them."""
    urls = list(dict.fromkeys(normalize_url(u) for u in reference.urls))
    return [u for u in urls if not is_archive_url(u)] + [u for u in urls if is_archive_url(u)]


def refused_links(article: str, references: list[Reference]) -> list[UrlRecord]:
    """A 'failed' manifest entry (reason ``bad_scheme``) per reference link that is not http(s): never fetched,
    never silently dropped."""
    return [
        _source_record(
            article,
            ref,
            link,
            None,
            outcome="failed",
            reason="bad_scheme",
            detail=f"{link.split(':', 1)[0]} scheme; only http and https are fetched",
        )
        for ref in references
        if not ref.is_note
        for link in ref.other_links
    ]


def _record(article: str, kind: str, url: str, result: FetchResult | None, **extra: Any) -> UrlRecord:
    fields: dict[str, Any] = {"article": article, "kind": kind, "url": url, **extra}
    if result is not None:
        fields.update(
            status=result.status,
            final_url=result.final_url,
            redirects=len(result.redirects),
            content_type=result.content_type,
            bytes=result.bytes,
            attempts=result.attempts,
            cached=result.cached,
            elapsed=result.elapsed,
        )
        fields.setdefault("detail", result.detail)
    return UrlRecord(**fields)


def _source_record(
    article: str, reference: Reference, url: str, result: FetchResult | None, **extra: Any
) -> UrlRecord:
    """The manifest entry of one URL of a footnote (``result`` None: the URL was not requested)."""
    return _record(article, "source", url, result, footnote=reference.id, **extra)


class _ArticleOutcome(BaseModel):
    title: str
    record: dict[str, Any] | None = None
    source_urls: dict[str, str] = Field(default_factory=dict, description="file -> URL that gave the text")
    failure: str | None = None
    entries: list[UrlRecord] = Field(default_factory=list)
    references: int = 0
    with_urls: int = 0
    notes: int = 0


class CorpusBuilder:
    """Runs one build; ``await builder.run(titles)``."""

    def __init__(
        self, settings: BuildSettings, cache: PageCache | None, progress: Progress | None = None
    ) -> None:
        if settings.site not in SITES:
            raise BuildError(f"--site must be one of {', '.join(SITES)}, got {settings.site!r}")
        self.settings = settings
        self.cache = cache
        self.progress: Progress = progress or NullProgress()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="extract")
        self._fetcher: Fetcher | None = None

    async def run(self, titles: list[str]) -> list[_ArticleOutcome]:
        self.progress.pages_total(len(titles))
        try:
            async with Fetcher(self.settings.fetch, self.cache) as fetcher:
                self._fetcher = fetcher
                outcomes = await asyncio.gather(*(self._article(t) for t in titles))
        finally:
            self._executor.shutdown(wait=False, cancel_futures=True)
        return list(outcomes)

    @property
    def requests_sent(self) -> int:
        return self._fetcher.requests_sent if self._fetcher else 0

    async def _page(self, title: str) -> tuple[UrlRecord, str, Article | None]:
        """Fetch and parse the article page: (manifest entry, decoded HTML, parsed article or None)."""
        assert self._fetcher is not None
        url = page_url(self.settings.site, title, self.settings.base_url)
        result = await self._fetcher.fetch(url)
        if not result.ok:
            return _record(title, "page", url, result, outcome="failed", reason=result.reason), "", None
        html = decode_html(result.body, result.charset)
        try:
            article = parse_article_html(html, title)
        except NoArticleBody as exc:
            entry = _record(
                title, "page", url, result, outcome="failed", reason="no_article_body", detail=str(exc)
            )
            return entry, html, None
        return _record(title, "page", url, result, outcome="page"), html, article

    async def _article(self, title: str) -> _ArticleOutcome:
        page, html, article = await self._page(title)
        self.progress.page_done()
        if article is None:
            return _ArticleOutcome(title=title, failure=page.reason, entries=[page])
        refs = [r for r in article.references if r.urls and not r.is_note]
        self.progress.sources_total(len(refs))
        found = await asyncio.gather(*(self._reference(title, r) for r in refs))
        outcome = _ArticleOutcome(
            title=title,
            entries=[page],
            references=len(article.references),
            with_urls=len(refs),
            notes=sum(1 for r in article.references if r.is_note),
        )
        outcome.entries += refused_links(title, article.references)
        sources: list[dict[str, str]] = []
        for ref, (kept, ref_entries) in zip(refs, found, strict=True):
            outcome.entries += ref_entries
            if kept is None:
                continue
            file = f"source_{len(sources) + 1}.txt"  # numbered in reference order: stable across builds
            sources.append({"source_id": ref.id, "source_text": kept[1], "file": file})
            outcome.source_urls[file] = kept[0]
            for entry in ref_entries:
                if entry.outcome == "kept":
                    entry.file = file
        outcome.record = {
            "article_name": title,
            "article_cleared_name": safe_name(title),
            "html": html,
            "sources": sources,
        }
        return outcome

    async def _reference(
        self, article: str, reference: Reference
    ) -> tuple[tuple[str, str] | None, list[UrlRecord]]:
        """The first (url, text) of the footnote whose text is long enough, and a manifest entry per URL."""
        assert self._fetcher is not None
        found: tuple[str, str] | None = None
        entries: list[UrlRecord] = []
        for url in ordered_urls(reference):
            if found is not None:
                entries.append(
                    _source_record(
                        article, reference, url, None, outcome="skipped", reason="earlier_url_kept"
                    )
                )
                continue
            result = await self._fetcher.fetch(url)
            if not result.ok:
                entries.append(
                    _source_record(article, reference, url, result, outcome="excluded", reason=result.reason)
                )
                continue
            extraction = await asyncio.get_running_loop().run_in_executor(
                self._executor, self._extract, result
            )
            long_enough = extraction.chars >= self.settings.min_source_chars
            entries.append(
                _source_record(
                    article,
                    reference,
                    url,
                    result,
                    chars=extraction.chars,
                    extractor=extraction.extractor or None,
                    outcome="kept" if long_enough else "excluded",
                    reason=None if long_enough else ("no_text" if not extraction.chars else "too_short"),
                    detail="; ".join(extraction.errors),
                )
            )
            if long_enough:
                found = (url, extraction.text)
        self.progress.source_done()
        return found, entries

    def _extract(self, result: FetchResult):  # type: ignore[no-untyped-def]
        html = decode_html(result.body, result.charset)
        return extract_text(
            html, result.final_url or result.url, self.settings.extractors, self.settings.min_source_chars
        )


def summarize(
    outcomes: list[_ArticleOutcome], dataset: Dataset, errors: list[str], requests_sent: int
) -> BuildSummary:
    manifest = [e for o in outcomes for e in o.entries]
    sources = [m for m in manifest if m.kind == "source"]
    requested = [m for m in sources if m.outcome != "skipped"]
    return BuildSummary(
        titles=len(outcomes),
        articles_built=len(dataset.articles),
        articles_failed=dict(Counter(o.failure for o in outcomes if o.failure)),
        references=sum(o.references for o in outcomes),
        references_with_urls=sum(o.with_urls for o in outcomes),
        notes_skipped=sum(o.notes for o in outcomes),
        urls=len(sources),
        urls_requested=len(requested),
        downloaded=sum(1 for m in requested if m.reason in (None, "too_short", "no_text")),
        kept=sum(1 for m in sources if m.outcome == "kept"),
        excluded=dict(
            Counter(m.reason for m in sources if m.outcome == "excluded" and m.reason).most_common()
        ),
        skipped=sum(1 for m in sources if m.outcome == "skipped"),
        requests_sent=requests_sent,
        cache_hits=sum(1 for m in manifest if m.cached),
        dataset_id=dataset.dataset_id,
        sources=len(dataset.sources),
        snippets=len(dataset.snippets),
        errors=errors,
    )


def assemble(
    outcomes: list[_ArticleOutcome], settings: BuildSettings, out: Path
) -> tuple[Dataset, list[str]]:
    """Records -> processed dataset through the shared import (filters, snippets); source URLs filled in."""
    built = [o for o in outcomes if o.record is not None]
    params = ImportParams(
        min_source_chars=settings.min_source_chars,
        window=settings.window,
        overlap=settings.overlap,
        lists=settings.lists,
    )
    imported = import_records([o.record for o in built], out / RECORDS_FILE, params)
    urls = {o.title: o.source_urls for o in built}
    titles = {a.name: a.title for a in imported.dataset.articles}
    sources = [
        s.model_copy(update={"url": urls.get(titles.get(s.article, ""), {}).get(s.file or "", s.url)})
        for s in imported.dataset.sources
    ]
    dataset = Dataset(
        articles=imported.dataset.articles,
        sources=sources,
        snippets=imported.dataset.snippets,
        params={**imported.dataset.params, "site": settings.site, "extractors": list(settings.extractors)},
    )
    return dataset, imported.errors


def build_corpus(
    titles: list[str],
    out: str | Path,
    settings: BuildSettings | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Run a whole build and write ``out`` (see the module docstring); resumable through the page cache."""
    return asyncio.run(build_corpus_async(titles, out, settings, progress))


async def build_corpus_async(
    titles: list[str],
    out: str | Path,
    settings: BuildSettings | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    settings = settings or BuildSettings()
    titles = list(dict.fromkeys(titles))
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cache = PageCache(settings.cache_dir or out / "cache")
    builder = CorpusBuilder(settings, cache, progress)
    outcomes = await builder.run(titles)
    dataset, errors = assemble(outcomes, settings, out)
    summary = summarize(outcomes, dataset, errors, builder.requests_sent)
    records = [o.record for o in outcomes if o.record is not None]
    manifest = [e for o in outcomes for e in o.entries]
    write_outputs(out, records, manifest, summary, dataset, settings)
    return BuildResult(summary=summary, dataset=dataset, records=records, manifest=manifest)


def write_outputs(
    out: Path,
    records: list[dict[str, Any]],
    manifest: list[UrlRecord],
    summary: BuildSummary,
    dataset: Dataset,
    settings: BuildSettings,
) -> None:
    (out / RECORDS_FILE).write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")
    with (out / URL_MANIFEST).open("w", encoding="utf-8") as fh:
        for entry in manifest:
            fh.write(entry.model_dump_json() + "\n")
    (out / SUMMARY_FILE).write_text(summary.model_dump_json(indent=2), encoding="utf-8")
    save_dataset(
        dataset,
        out,
        errors=summary.errors,
        extra={
            "build": {
                "settings": settings.model_dump(mode="json"),
                "summary": summary.model_dump(mode="json"),
            },
        },
    )
