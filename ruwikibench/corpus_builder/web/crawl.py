"""Per-article fetching of a corpus build: each title's page is fetched and parsed once; every footnote that
is not an explanatory note and has URLs tries them in order (originals first, archive copies after them) until
one downloads and yields at least ``min_source_chars`` characters of main text. Pages download concurrently
under the fetcher's per-host limits; extraction runs in a worker thread so downloads keep flowing."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol
from urllib.parse import quote

from ruwikibench.corpus_builder.html_parser import NoArticleBody, is_archive_url, parse_article_html
from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.extract import decode_html, extract_text
from ruwikibench.corpus_builder.web.fetch import Fetcher, normalize_url
from ruwikibench.corpus_builder.web.manifest import (
    ArticleOutcome,
    UrlRecord,
    refused_links,
    source_record,
    url_record,
)
from ruwikibench.corpus_builder.web.types import SITES, BuildError, BuildSettings, FetchResult
from ruwikibench.dataset import Article, Reference, safe_name

_TITLE_SAFE = ":/(),!*'@$;~-._"


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
    """https://<site>/wiki/<title: spaces -> _, percent-encoded>; ``base_url`` replaces the scheme and
    host."""
    base = (base_url or f"https://{site}").rstrip("/")
    return f"{base}/wiki/{quote(title.strip().replace(' ', '_'), safe=_TITLE_SAFE)}"


def ordered_urls(reference: Reference) -> list[str]:
    """The reference's URLs, fragments removed, originals first and archive copies after them."""
    urls = list(dict.fromkeys(normalize_url(u) for u in reference.urls))
    return [u for u in urls if not is_archive_url(u)] + [u for u in urls if is_archive_url(u)]


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

    async def run(self, titles: list[str]) -> list[ArticleOutcome]:
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
            return url_record(title, "page", url, result, outcome="failed", reason=result.reason), "", None
        html = decode_html(result.body, result.charset)
        try:
            article = parse_article_html(html, title)
        except NoArticleBody as exc:
            entry = url_record(
                title, "page", url, result, outcome="failed", reason="no_article_body", detail=str(exc)
            )
            return entry, html, None
        return url_record(title, "page", url, result, outcome="page"), html, article

    async def _article(self, title: str) -> ArticleOutcome:
        page, html, article = await self._page(title)
        self.progress.page_done()
        if article is None:
            return ArticleOutcome(title=title, failure=page.reason, entries=[page])
        refs = [r for r in article.references if r.urls and not r.is_note]
        self.progress.sources_total(len(refs))
        found = await asyncio.gather(*(self._reference(title, r) for r in refs))
        outcome = ArticleOutcome(
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
                    source_record(article, reference, url, None, outcome="skipped", reason="earlier_url_kept")
                )
                continue
            result = await self._fetcher.fetch(url)
            if not result.ok:
                entries.append(
                    source_record(article, reference, url, result, outcome="excluded", reason=result.reason)
                )
                continue
            extraction = await asyncio.get_running_loop().run_in_executor(
                self._executor, self._extract, result
            )
            long_enough = extraction.chars >= self.settings.min_source_chars
            entries.append(
                source_record(
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

    def _extract(self, result: FetchResult):
        html = decode_html(result.body, result.charset)
        return extract_text(
            html, result.final_url or result.url, self.settings.extractors, self.settings.min_source_chars
        )
