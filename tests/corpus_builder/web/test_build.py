"""End-to-end builds against the local server: a real saved Ruwiki page, real web pages, every failure
case."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ruwikibench.corpus_builder.html_parser import decode_gateway_href
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.corpus_builder.store import load_dataset
from ruwikibench.corpus_builder.web.build import build_corpus, build_corpus_async, read_titles
from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.crawl import ordered_urls, page_url
from ruwikibench.corpus_builder.web.types import BuildError, BuildSettings, FetchSettings
from ruwikibench.dataset import Reference
from tests.corpus_builder.web._site import Site, serve_article
from tests.sample import shared_data

RUWIKI = shared_data("ruwiki")
WEB = shared_data("web")
ARTICLE = "Присоединение Крыма к Российской Федерации"
MISSING = "Несуществующая статья"

needs_sample = pytest.mark.skipif(
    RUWIKI is None, reason="../shared/data/ruwiki (real Ruwiki sample) not found"
)


def local_settings(server, **fetch: Any) -> BuildSettings:  # type: ignore[no-untyped-def]
    options = {
        "allow_networks": ["127.0.0.0/8"],
        "timeout": 0.5,
        "connect_timeout": 0.5,
        "retries": 1,
        "backoff": 0.05,
        "host_delay": 0.0,
        "per_host": 8,
        **fetch,
    }
    return BuildSettings(site="ru.ruwiki.ru", base_url=server.base, fetch=FetchSettings(**options))


@pytest.fixture(scope="module")
def record() -> dict[str, Any]:
    assert RUWIKI is not None
    records = json.loads((RUWIKI / "ruwikibench_articles.json").read_text(encoding="utf-8"))
    return next(r for r in records if r["article_name"] == ARTICLE)


@pytest.fixture
def site(server, record) -> Site:  # type: ignore[no-untyped-def]
    return serve_article(server, record, WEB)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


# --------------------------------------------------------------------------- small pieces


def test_page_url_encoding() -> None:
    assert page_url("ru.ruwiki.ru", "Tomb Raider (игра, 2013)") == (
        "https://ru.ruwiki.ru/wiki/Tomb_Raider_(%D0%B8%D0%B3%D1%80%D0%B0,_2013)"
    )
    assert page_url("en.wikipedia.org", "C++ #1 & ?") == "https://en.wikipedia.org/wiki/C%2B%2B_%231_%26_%3F"
    assert page_url("ru.wikipedia.org", "Python", "http://127.0.0.1:8/") == "http://127.0.0.1:8/wiki/Python"


def test_read_titles(tmp_path: Path) -> None:
    path = tmp_path / "titles.txt"
    path.write_text("\ufeffPython\n\n# comment\n  COVID-19 \nPython\n", encoding="utf-8")
    assert read_titles(path) == ["Python", "COVID-19"]
    with pytest.raises(BuildError, match="not found"):
        read_titles(tmp_path / "none.txt")
    (tmp_path / "empty.txt").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(BuildError, match="no titles"):
        read_titles(tmp_path / "empty.txt")


def test_ordered_urls_originals_before_archives() -> None:
    ref = Reference(
        id="c1",
        urls=[
            "https://web.archive.org/web/2020/http://a.example/x",
            "http://a.example/x#top",
            "http://a.example/x",
        ],
    )
    assert ordered_urls(ref) == ["http://a.example/x", "https://web.archive.org/web/2020/http://a.example/x"]


def test_unknown_site_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BuildError, match="--site"):
        build_corpus(["Python"], tmp_path, BuildSettings(site="example.org"))


# --------------------------------------------------------------------------- the local-server build


@needs_sample
def test_build_from_local_server(server, site: Site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    result = build_corpus([ARTICLE, MISSING], out, local_settings(server))
    summary = result.summary
    print("\nbuild summary:", summary.model_dump_json(indent=1, exclude={"errors"}))
    manifest = [
        json.loads(line) for line in (out / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    by_url = {m["url"]: m for m in manifest}

    # articles: the real one is built, the missing title is reported (404), nothing dropped silently
    assert summary.titles == 2 and summary.articles_built == 1 and summary.articles_failed == {"http_404": 1}
    pages = [m for m in manifest if m["kind"] == "page"]
    assert [(m["article"], m["outcome"], m["reason"]) for m in pages] == [
        (ARTICLE, "page", None),
        (MISSING, "failed", "http_404"),
    ]

    # Ruwiki external-gateway links (base64) were decoded and their targets reached the manifest
    # (gateway links outside the reference list were left as they are: they are not sources)
    gateway = [decode_gateway_href(h, "HeGW") or "" for h in re.findall(r'href="(#HeGW[^"]+)"', site.html)]
    local = [url for url in gateway if url.startswith(server.base)]
    assert len(local) >= 5 and all(url in by_url for url in local)

    # every failure case got its reason, the refused addresses without a single request
    for url, reason in site.expected.items():
        assert by_url[url]["outcome"] == "excluded" and by_url[url]["reason"] == reason, url
    assert by_url[next(u for u, r in site.expected.items() if "redirect_private" in u)]["redirects"] == 1
    assert not any(path.startswith("/dead/") and n > 1 for path, n in server.counts.items())
    excluded = Counter(m["reason"] for m in manifest if m["outcome"] == "excluded")
    assert excluded["blocked_address"] >= 3 and summary.excluded == dict(excluded.most_common())
    assert (
        server.counts[next(p for p in site.transient_paths if "slow" in p)] == 2
    )  # one retry after the timeout

    # sample source texts: long ones kept (also through the archive fallback after a 404), short ones excluded
    kept = {m["footnote"]: m for m in manifest if m["outcome"] == "kept"}
    for ref_id, text in site.texts.items():
        if len(text.strip()) >= 1700:
            assert ref_id in kept, ref_id
        elif len(text.strip()) < 1300:
            assert ref_id not in kept, ref_id
    for ref_id in site.fallback_refs:
        entries = [m for m in manifest if m["footnote"] == ref_id]
        assert entries[0]["reason"] == "http_404"
        if len(site.texts[ref_id]) >= 1700:
            assert entries[1]["outcome"] == "kept"

    # real web pages: their expected strings reach the dataset
    found = want = 0
    for url, item in site.web.items():
        entry = by_url[url]
        assert entry["reason"] in (None, "too_short", "earlier_url_kept"), entry
        if entry["outcome"] == "kept":
            text = norm(
                next(s["source_text"] for s in result.records[0]["sources"] if s["file"] == entry["file"])
            )
            found += sum(norm(w) in text for w in item["with"])
            want += len(item["with"])
    assert want and found / want >= 0.8

    # outputs: published layout + processed dataset equal to `corpus import` of that JSON
    assert summary.kept == len(result.records[0]["sources"]) == len(kept)
    records = json.loads((out / "ruwikibench_articles.json").read_text(encoding="utf-8"))
    assert records[0]["article_name"] == ARTICLE and "mw-parser-output" in records[0]["html"]
    assert {s["source_id"] for s in records[0]["sources"]} == set(kept)
    loaded = load_dataset(out)
    assert loaded.dataset_id == summary.dataset_id == result.dataset.dataset_id
    reimported = import_ruwikibench_json(out / "ruwikibench_articles.json").dataset
    assert reimported.articles == loaded.articles and reimported.snippets == loaded.snippets
    assert [s.url for s in loaded.sources] == [kept[s.footnote_id]["url"] for s in loaded.sources]
    assert all(len(s.text) >= 1500 for s in loaded.sources)
    assert server.user_agents and all("ruwikibench" in ua for ua in server.user_agents)
    # every request the server saw was counted; a timed-out one the busy server never read counts only
    # client-side
    assert server.total <= summary.requests_sent <= server.total + 2


@needs_sample
async def test_interrupted_build_resumes_without_refetching(server, site: Site, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    settings = local_settings(server, per_host=4)
    task = asyncio.create_task(build_corpus_async([ARTICLE], out, settings))
    while server.total < 12 and not task.done():
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    cache = PageCache(out / "cache")
    cached_paths = {_path(f.read_text()) for f in cache.dir.glob("*/*.json")}
    assert 0 < len(cached_paths) < len(server.counts) + 10
    before = Counter(server.counts)

    first = await build_corpus_async([ARTICLE], out, settings)
    second_counts = Counter(server.counts) - before
    assert not (set(second_counts) & cached_paths), "a page cached by the interrupted build was fetched again"

    before = Counter(server.counts)
    again = await build_corpus_async([ARTICLE], out, settings)
    third_counts = Counter(server.counts) - before
    assert set(third_counts) <= site.transient_paths  # only transient failures are tried again
    assert again.summary.dataset_id == first.summary.dataset_id
    assert again.summary.cache_hits > 0 and again.summary.kept == first.summary.kept


def _path(meta_json: str) -> str:
    from urllib.parse import unquote, urlsplit

    return unquote(urlsplit(json.loads(meta_json)["url"]).path)


# --------------------------------------------------------------------------- without the allow flag


def test_without_allow_flag_nothing_internal_is_fetched(server, make_article, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server.page("/wiki/Статья", make_article("Статья"))
    result = build_corpus(
        ["Статья"], tmp_path / "out", BuildSettings(base_url=server.base, fetch=FetchSettings(retries=0))
    )
    assert result.summary.articles_failed == {"blocked_address": 1}
    assert result.manifest[0].reason == "blocked_address" and "loopback" in result.manifest[0].detail
    assert server.total == 0


def test_small_synthetic_build(server, make_article, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A hand-made wiki page: two footnotes, one long source, one short; filters remove the uncited
    paragraph."""
    long_url = server.page("/long", make_article("Длинный источник", paragraphs=14))
    short_url = server.page("/short", make_article("Короткий", paragraphs=2))
    wiki = (
        "<html><body><h1 id='firstHeading'>Тест</h1><div id='mw-content-text'><div class='mw-parser-output'>"
        "<p>Вводный абзац.<sup class='reference'><a href='#cite_note-1'>[1]</a></sup></p>"
        "<h2><span class='mw-headline'>История</span></h2>"
        "<p>Абзац со ссылкой на короткий источник.<sup class='reference'><a "
        "href='#cite_note-2'>[2]</a></sup></p><h2><span class='mw-headline'>Примечания</span></h2><div "
        "class='mw-references-wrap'><ol class='references'><li id='cite_note-1'><span "
        f"class='reference-text'><a class='external text' href='{long_url}'>A</a></span></li>"
        "<li id='cite_note-2'><span class='reference-text'><a class='external text' "
        f"href='{short_url}'>B</a></span></li>"
        "</ol></div></div></div></body></html>"
    )
    server.page("/wiki/Тест", wiki)
    result = build_corpus(["Тест"], tmp_path / "out", local_settings(server))
    ds = result.dataset
    assert [s.footnote_id for s in ds.sources] == ["cite_note-1"] and ds.sources[0].url == long_url
    assert ds.sources[0].file == "source_1.txt" and ds.sources[0].id == "Тест/source_1"
    article = ds.articles[0]
    assert [p.text for p in article.root.paragraphs] == ["Вводный абзац."]
    assert article.root.children == []  # "История" lost its only paragraph (cites a dropped source)
    assert [(m.url, m.outcome, m.reason) for m in result.manifest if m.kind == "source"] == [
        (long_url, "kept", None),
        (short_url, "excluded", "too_short"),
    ]
    assert result.manifest[1].extractor == "trafilatura" and result.manifest[1].chars >= 1500
    assert ds.snippets and all(s.source_id == "Тест/source_1" for s in ds.snippets)


def test_non_http_reference_links_are_recorded_as_refused(server, make_article, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    long_url = server.page("/long", make_article("Длинный источник", paragraphs=14))
    wiki = (
        "<html><body><h1 id='firstHeading'>Тест</h1><div id='mw-content-text'><div class='mw-parser-output'>"
        "<p>Вводный абзац.<sup class='reference'><a href='#cite_note-1'>[1]</a></sup>"
        "<sup class='reference'><a href='#cite_note-2'>[2]</a></sup></p>"
        "<h2><span class='mw-headline'>Примечания</span></h2><div class='mw-references-wrap'><ol "
        "class='references'><li id='cite_note-1'><span class='reference-text'><a class='external text' "
        f"href='file:///etc/passwd'>F</a> <a class='external text' href='{long_url}'>A</a></span></li>"
        "<li id='cite_note-2'><span class='reference-text'><a class='external text' href='gopher://example.org/1'>"
        "G</a> <a href='/wiki/Другая'>внутренняя</a> <a href='#cite_ref-2'>↑</a></span></li>"
        "</ol></div></div></div></body></html>"
    )
    server.page("/wiki/Тест", wiki)
    result = build_corpus(["Тест"], tmp_path / "out", local_settings(server))
    sources = [(m.footnote, m.url, m.outcome, m.reason) for m in result.manifest if m.kind == "source"]
    assert sorted(sources) == [
        ("cite_note-1", "file:///etc/passwd", "failed", "bad_scheme"),
        ("cite_note-1", long_url, "kept", None),
        ("cite_note-2", "gopher://example.org/1", "failed", "bad_scheme"),
    ]
    assert [r.urls for r in result.dataset.articles[0].references] == [[long_url], []]  # not saved as sources
    lines = (tmp_path / "out" / "manifest.jsonl").read_text(encoding="utf-8")
    assert "gopher://example.org/1" in lines and "file:///etc/passwd" in lines
