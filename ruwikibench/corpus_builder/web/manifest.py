"""What a corpus build records: one manifest entry (:class:`UrlRecord`) per URL it met, each article's
outcome, and the build summary counted from them (``manifest.jsonl`` and ``build_summary.json``)."""

from __future__ import annotations

from collections import Counter
from typing import Any, Literal

from pydantic import BaseModel, Field

from ruwikibench.corpus_builder.web.types import FetchResult
from ruwikibench.dataset import Dataset, Reference


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


class ArticleOutcome(BaseModel):
    title: str
    record: dict[str, Any] | None = None
    source_urls: dict[str, str] = Field(default_factory=dict, description="file -> URL that gave the text")
    failure: str | None = None
    entries: list[UrlRecord] = Field(default_factory=list)
    references: int = 0
    with_urls: int = 0
    notes: int = 0


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


def url_record(article: str, kind: str, url: str, result: FetchResult | None, **extra: Any) -> UrlRecord:
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


def source_record(
    article: str, reference: Reference, url: str, result: FetchResult | None, **extra: Any
) -> UrlRecord:
    """The manifest entry of one URL of a footnote (``result`` None: the URL was not requested)."""
    return url_record(article, "source", url, result, footnote=reference.id, **extra)


def refused_links(article: str, references: list[Reference]) -> list[UrlRecord]:
    """A 'failed' manifest entry (reason ``bad_scheme``) per reference link that is not http(s): never
    fetched, never silently dropped."""
    return [
        source_record(
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


def summarize(
    outcomes: list[ArticleOutcome], dataset: Dataset, errors: list[str], requests_sent: int
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
