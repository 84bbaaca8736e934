from __future__ import annotations

import asyncio
import itertools
import time

from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.fetch import Fetcher, HostLimiter, normalize_url
from ruwikibench.corpus_builder.web.types import USER_AGENT, FetchSettings

LOCAL = {
    "allow_networks": ["127.0.0.0/8"],
    "timeout": 0.5,
    "connect_timeout": 0.5,
    "backoff": 0.05,
    "host_delay": 0.0,
    "retries": 1,
}


def settings(**kw: object) -> FetchSettings:
    return FetchSettings(**{**LOCAL, **kw})  # type: ignore[arg-type]


async def fetch(url: str, cache: PageCache | None = None, **kw: object):  # type: ignore[no-untyped-def]
    async with Fetcher(settings(**kw), cache) as fetcher:
        return await fetcher.fetch(url)


async def test_page_is_fetched_with_tool_user_agent(server) -> None:  # type: ignore[no-untyped-def]
    url = server.page("/ok", "<html><body>Привет</body></html>", "text/html; charset=utf-8")
    result = await fetch(url + "#fragment")
    assert result.ok and result.status == 200 and result.reason == "ok"
    assert result.body.decode() == "<html><body>Привет</body></html>"
    assert (result.content_type, result.charset, result.bytes) == ("text/html", "utf-8", len(result.body))
    assert result.url == url  # the fragment is never sent nor cached
    assert server.user_agents == [USER_AGENT] and "ruwikibench" in USER_AGENT


async def test_404_is_final_not_retried(server) -> None:  # type: ignore[no-untyped-def]
    result = await fetch(server.url("/missing"), retries=3)
    assert (result.ok, result.reason, result.status, result.attempts) == (False, "http_404", 404, 1)
    assert server.counts["/missing"] == 1


async def test_slow_response_times_out_and_is_retried(server) -> None:  # type: ignore[no-untyped-def]
    server.route("/slow", [(200, {"Content-Type": "text/html"}, b"<html></html>")], delay=2.0)
    started = time.monotonic()
    result = await fetch(server.url("/slow"), timeout=0.3, retries=1)
    assert (result.ok, result.reason, result.attempts) == (False, "timeout", 2)
    assert result.transient
    assert time.monotonic() - started < 1.5
    assert server.counts["/slow"] == 2


async def test_transient_5xx_then_success_with_backoff(server) -> None:  # type: ignore[no-untyped-def]
    ok = (200, {"Content-Type": "text/html"}, b"<html><body>finally</body></html>")
    server.route("/flaky", [(503, {}, b""), (502, {}, b""), ok])
    started = time.monotonic()
    result = await fetch(server.url("/flaky"), retries=2, backoff=0.1)
    assert result.ok and result.attempts == 3 and server.counts["/flaky"] == 3
    assert time.monotonic() - started >= 0.1 + 0.2 - 0.02  # backoff doubles: 0.1 s, then 0.2 s


async def test_retry_after_is_honoured(server) -> None:  # type: ignore[no-untyped-def]
    ok = (200, {"Content-Type": "text/html"}, b"<html></html>")
    server.route("/busy", [(429, {"Retry-After": "0.4"}, b""), ok])
    started = time.monotonic()
    result = await fetch(server.url("/busy"), retries=1, backoff=0.01)
    assert result.ok and time.monotonic() - started >= 0.38


async def test_pdf_and_image_are_refused_by_content_type(server) -> None:  # type: ignore[no-untyped-def]
    pdf = server.page("/doc.pdf", b"%PDF-1.4 " + b"x" * 5000, "application/pdf")
    png = server.page("/pic.png", b"\x89PNG\r\n" + b"x" * 100, "image/png")
    for url, media in ((pdf, "application/pdf"), (png, "image/png")):
        result = await fetch(url)
        assert (result.ok, result.reason, result.content_type) == (False, "content_type", media)
        assert result.body == b""


async def test_missing_content_type_is_sniffed(server) -> None:  # type: ignore[no-untyped-def]
    server.route("/html", [(200, {}, b"<!DOCTYPE html><html><body>x</body></html>")])
    server.route("/bin", [(200, {}, b"\x00\x01binary")])
    assert (await fetch(server.url("/html"))).ok
    assert (await fetch(server.url("/bin"))).reason == "content_type"


async def test_too_large_by_header_and_by_stream(server) -> None:  # type: ignore[no-untyped-def]
    big = b"<html>" + b"a" * 5000 + b"</html>"
    server.route("/declared", [(200, {"Content-Type": "text/html"}, big)])
    server.route("/streamed", [(200, {"Content-Type": "text/html"}, big)], length=False)
    declared = await fetch(server.url("/declared"), max_bytes=1000)
    streamed = await fetch(server.url("/streamed"), max_bytes=1000)
    assert (declared.reason, declared.bytes) == ("too_large", len(big))
    assert streamed.reason == "too_large" and streamed.bytes > 1000 and streamed.body == b""


async def test_redirects_followed_with_relative_location(server) -> None:  # type: ignore[no-untyped-def]
    final = server.page("/final", "<html><body>here</body></html>")
    server.redirect("/r1", "/r2", 301)
    server.redirect("/r2", final, 307)
    result = await fetch(server.url("/r1"))
    assert result.ok and result.final_url == final
    assert result.redirects == [server.url("/r2"), final]


async def test_redirect_loop_and_cap(server) -> None:  # type: ignore[no-untyped-def]
    server.redirect("/loop-a", "/loop-b")
    server.redirect("/loop-b", "/loop-a")
    loop = await fetch(server.url("/loop-a"))
    assert loop.reason == "redirect_loop" and server.counts["/loop-a"] == 1 and server.counts["/loop-b"] == 1
    for i in range(6):
        server.redirect(f"/hop{i}", f"/hop{i + 1}")
    capped = await fetch(server.url("/hop0"), max_redirects=3)
    assert capped.reason == "too_many_redirects"
    assert len(capped.redirects) == 4  # three followed, the fourth recorded but not requested
    assert server.counts["/hop3"] == 1 and server.counts["/hop4"] == 0


async def test_per_host_concurrency_and_delay(server) -> None:  # type: ignore[no-untyped-def]
    for i in range(6):
        server.route(f"/p{i}", [(200, {"Content-Type": "text/html"}, b"<html></html>")], delay=0.15)
    async with Fetcher(settings(per_host=2, host_delay=0.05)) as fetcher:
        results = await asyncio.gather(*(fetcher.fetch(server.url(f"/p{i}")) for i in range(6)))
    assert all(r.ok for r in results)
    assert server.max_in_flight == 2
    starts = sorted(t for t, _ in server.arrivals)
    assert starts[-1] - starts[0] >= 5 * 0.05 - 0.02  # arrival jitter aside, starts are spaced by the delay


async def test_host_limiter_spaces_starts_per_host() -> None:
    limiter = HostLimiter(per_host=3, delay=0.05)
    starts: dict[str, list[float]] = {"a": [], "b": []}

    async def hit(host: str) -> None:
        async with limiter.slot(host):
            starts[host].append(time.monotonic())

    await asyncio.gather(*(hit(h) for h in ("a", "b") * 4))
    for times in starts.values():
        times.sort()
        assert min(b - a for a, b in itertools.pairwise(times)) >= 0.049
    assert abs(starts["a"][0] - starts["b"][0]) < 0.03  # another host does not wait for the first one


async def test_concurrent_calls_share_one_download(server) -> None:  # type: ignore[no-untyped-def]
    server.route("/once", [(200, {"Content-Type": "text/html"}, b"<html></html>")], delay=0.1)
    async with Fetcher(settings()) as fetcher:
        a, b = await asyncio.gather(fetcher.fetch(server.url("/once")), fetcher.fetch(server.url("/once")))
    assert a.ok and b.ok and server.counts["/once"] == 1


async def test_cache_serves_final_outcomes_without_requests(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    ok = server.page("/c", "<html><body>cached</body></html>")
    missing = server.url("/gone")
    server.route("/slow", [(200, {"Content-Type": "text/html"}, b"<html></html>")], delay=1.0)
    cache = PageCache(tmp_path / "cache")
    first = [await fetch(u, cache, timeout=0.2, retries=0) for u in (ok, missing, server.url("/slow"))]
    assert [r.reason for r in first] == ["ok", "http_404", "timeout"]
    assert len(cache) == 2  # the timeout is transient: not cached, tried again next time
    before = dict(server.counts)
    again = [await fetch(u, PageCache(tmp_path / "cache"), timeout=0.2, retries=0) for u in (ok, missing)]
    assert [r.cached for r in again] == [True, True]
    assert again[0].body == first[0].body and again[1].reason == "http_404"
    assert dict(server.counts) == before


def test_normalize_url() -> None:
    assert normalize_url("  http://a.example/x?y=1#frag ") == "http://a.example/x?y=1"


async def test_cache_respects_the_address_policy(server, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A refusal cached under the strict policy does not bind a looser one, and a page fetched from an
    internal address under a looser policy is not served from the cache under the strict one."""
    url = server.page("/internal", "<html><body>internal</body></html>")
    cache = PageCache(tmp_path / "cache")
    strict = {"allow_networks": [], "retries": 0}
    assert (await fetch(url, cache, **strict)).reason == "blocked_address"
    assert (await fetch(url, cache, **strict)).cached  # the refusal itself is cached under the same policy
    allowed = await fetch(url, cache)  # allow 127.0.0.0/8
    assert allowed.ok and not allowed.cached and server.counts["/internal"] == 1
    assert (await fetch(url, cache)).cached
    again = await fetch(url, cache, **strict)
    assert again.reason == "blocked_address" and not again.cached and server.counts["/internal"] == 1
    assert (
        cache.get(url, "allow:127.0.0.0/8") is None
    )  # the strict refusal now cached does not bind the looser one


async def test_gzip_bomb_is_capped_while_decompressing(server) -> None:  # type: ignore[no-untyped-def]
    import gzip

    page = b"<html><body>" + b"a" * 50_000_000 + b"</body></html>"
    bomb = gzip.compress(page, compresslevel=9)
    assert len(bomb) < 100_000
    server.route("/bomb", [(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, bomb)])
    server.route(
        "/small",
        [
            (
                200,
                {"Content-Type": "text/html", "Content-Encoding": "gzip"},
                gzip.compress(b"<html><body>hello</body></html>"),
            )
        ],
    )
    refused = await fetch(server.url("/bomb"), max_bytes=1_000_000)
    assert refused.reason == "too_large" and refused.bytes == 1_000_001  # never inflated past the cap
    small = await fetch(server.url("/small"), max_bytes=1_000_000)
    assert small.ok and small.body == b"<html><body>hello</body></html>"


def test_capped_decoder_deflate_variants_and_refusals() -> None:
    import zlib

    import pytest

    from ruwikibench.corpus_builder.web.decode import CappedDecoder, UnsupportedEncoding

    data = b"<html>" + b"x" * 10_000 + b"</html>"
    wrapped = zlib.compress(data)
    raw = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    raw_deflate = raw.compress(data) + raw.flush()
    for body in (wrapped, raw_deflate):
        decoder = CappedDecoder("deflate", 100_000)
        assert b"".join(decoder.feed(body[i : i + 7]) for i in range(0, len(body), 7)) == data
    capped = CappedDecoder("deflate", 100)
    assert len(capped.feed(wrapped)) == 100 and capped.full and capped.feed(b"more") == b""
    with pytest.raises(UnsupportedEncoding, match="'br'"):
        CappedDecoder("br", 10)
    with pytest.raises(UnsupportedEncoding, match="corrupt gzip"):
        CappedDecoder("gzip", 10).feed(b"not gzip at all")
