"""Titles -> article pages -> references -> downloaded and extracted sources -> dataset (paper section 1).

For each title the page ``https://<site>/wiki/<Title_with_underscores>`` is fetched and parsed once
(:func:`~ruwikibench.corpus_builder.html_parser.parse_article_html`). Every footnote that is not an
explanatory note and has URLs is one candidate source: its URLs are tried in order (original links first,
archive copies after them) and the first that downloads and yields at least ``min_source_chars`` characters of
main text becomes the footnote's source; the other URLs are not requested
(:mod:`~ruwikibench.corpus_builder.web.crawl`).

The result is written as (1) the published RuWikiBench JSON layout — the full page HTML plus
``{source_id, source_text, file}`` per kept source — and (2) the processed dataset, produced from exactly
those records by the same import the ``corpus import`` command uses (paper filters, snippets), so a build and
an import of its JSON give the same dataset. ``manifest.jsonl`` has one line per URL (pages and sources;
:mod:`~ruwikibench.corpus_builder.web.manifest`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from ruwikibench.corpus_builder.ruwikibench_json import ImportParams, import_records
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.crawl import CorpusBuilder, Progress
from ruwikibench.corpus_builder.web.manifest import ArticleOutcome, BuildSummary, UrlRecord, summarize
from ruwikibench.corpus_builder.web.types import BuildError, BuildSettings
from ruwikibench.dataset import Dataset

RECORDS_FILE = "ruwikibench_articles.json"
URL_MANIFEST = "manifest.jsonl"
SUMMARY_FILE = "build_summary.json"


class BuildResult(BaseModel):
    summary: BuildSummary
    dataset: Dataset
    records: list[dict[str, Any]]
    manifest: list[UrlRecord]


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


def assemble(outcomes: list[ArticleOutcome], settings: BuildSettings, out: Path) -> tuple[Dataset, list[str]]:
    """Records -> processed dataset through the shared import (filters, snippets); source URLs filled in."""
    built = [o for o in outcomes if o.record is not None]
    params = ImportParams(
        min_source_chars=settings.min_source_chars,
        window=settings.window,
        overlap=settings.overlap,
        lists=settings.lists,
    )
    imported = import_records([o.record for o in built], out / RECORDS_FILE, params, rename_duplicates=True)
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
