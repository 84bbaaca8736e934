"""Polite, bounded, SSRF-safe page downloader (async httpx).

Per request: only http(s); redirects followed by hand (at most ``max_redirects`` hops, loops detected) so that
every hop's URL is checked and every connection goes through the address guard of :mod:`.safety`; a total
timeout per hop; the body read as a stream and abandoned past ``max_bytes`` (gzip/deflate inflated under that
cap, never whole); the content type checked before
the body is read. Per host: at most ``per_host`` requests in flight and ``host_delay`` seconds between request
starts. Transient failures (timeouts, connection errors, 429, 5xx) are retried with exponential backoff,
honouring ``Retry-After``. Final outcomes are cached on disk by URL (:class:`.cache.PageCache`).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from email.utils import parsedate_to_datetime
from typing import Self
from urllib.parse import urldefrag, urljoin, urlsplit

import httpcore
import httpx

from ruwikibench.corpus_builder.web.cache import PageCache
from ruwikibench.corpus_builder.web.decode import ENCODINGS, CappedDecoder, UnsupportedEncoding
from ruwikibench.corpus_builder.web.safety import AddressPolicy, GuardedBackend, UnsafeURL, check_url
from ruwikibench.corpus_builder.web.types import FetchResult, FetchSettings

REDIRECT_CODES = frozenset({301, 302, 303, 307, 308})
_HTML_SNIFF = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)", re.IGNORECASE | re.DOTALL)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """httpx transport whose connection pool connects only through :class:`GuardedBackend`."""

    def __init__(self, policy: AddressPolicy, settings: FetchSettings) -> None:
        super().__init__(trust_env=False)
        limits = httpx.Limits(
            max_connections=settings.concurrency, max_keepalive_connections=settings.concurrency
        )
        # httpx builds its pool without a way to pass a network backend; replace the pool (same arguments).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=GuardedBackend(policy),
        )


class HostLimiter:
    """At most ``per_host`` requests in flight per host and ``delay`` seconds between their starts."""

    def __init__(self, per_host: int, delay: float) -> None:
        self.per_host = per_host
        self.delay = delay
        self._sems: dict[str, asyncio.Semaphore] = defaultdict(lambda: asyncio.Semaphore(self.per_host))
        self._locks: dict[str, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._next: dict[str, float] = defaultdict(float)

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        async with self._sems[host]:
            async with self._locks[host]:  # held while waiting: actual starts, not planned ones, are spaced
                wait = self._next[host] - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                self._next[host] = time.monotonic() + self.delay
            yield


def host_key(url: str) -> str:
    parts = urlsplit(url)
    return f"{(parts.hostname or '').lower()}:{parts.port or ''}"


def normalize_url(url: str) -> str:
    """The URL as fetched and cached: surrounding blanks and the #fragment removed."""
    return urldefrag(url.strip())[0]


def _media_type(content_type: str | None) -> tuple[str | None, str | None]:
    """('text/html', 'utf-8') from a Content-Type header."""
    if not content_type:
        return None, None
    media, _, params = content_type.partition(";")
    match = re.search(r"charset\s*=\s*\"?([\w.:-]+)", params, re.IGNORECASE)
    return media.strip().lower(), match.group(1).lower() if match else None


def _retry_after(response_headers: httpx.Headers, cap: float) -> float | None:
    value = response_headers.get("retry-after")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), cap)


class Fetcher:
    """Downloads URLs under :class:`FetchSettings`. Use as ``async with Fetcher(settings, cache) as f``."""

    def __init__(self, settings: FetchSettings | None = None, cache: PageCache | None = None) -> None:
        self.settings = settings or FetchSettings()
        self.cache = cache
        self.policy = AddressPolicy(self.settings.allow_private, self.settings.allow_networks)
        self.hosts = HostLimiter(self.settings.per_host, self.settings.host_delay)
        self._global = asyncio.Semaphore(self.settings.concurrency)
        self._inflight: dict[str, asyncio.Future[FetchResult]] = {}
        self._client: httpx.AsyncClient | None = None
        self.requests_sent = 0

    async def __aenter__(self) -> Self:
        s = self.settings
        self._client = httpx.AsyncClient(
            transport=GuardedTransport(self.policy, s),
            timeout=httpx.Timeout(s.timeout, connect=s.connect_timeout),
            follow_redirects=False,
            trust_env=False,
            headers={
                "User-Agent": s.user_agent,
                "Accept": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.1",
                "Accept-Language": "ru,en;q=0.8,*;q=0.5",
                "Accept-Encoding": ENCODINGS,
            },
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def fetch(self, url: str) -> FetchResult:
        """Fetch ``url`` (cache first; concurrent calls for one URL share a single download)."""
        url = normalize_url(url)
        if self.cache is not None:
            hit = self.cache.get(url, self.policy.key)
            if hit is not None:
                return hit
        if url in self._inflight:
            return await asyncio.shield(self._inflight[url])
        future: asyncio.Future[FetchResult] = asyncio.get_running_loop().create_future()
        self._inflight[url] = future
        try:
            result = await self._fetch_with_retries(url)
            if self.cache is not None and not result.transient:
                self.cache.put(result)
            future.set_result(result)
            return result
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: no "never retrieved" warning when nobody else waits
            raise
        finally:
            del self._inflight[url]

    async def _fetch_with_retries(self, url: str) -> FetchResult:
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            async with self._global:
                result, retry_after = await self._fetch_once(url)
            result.attempts = attempt
            if not result.transient or attempt > self.settings.retries:
                result.elapsed = round(time.monotonic() - started, 3)
                return result
            delay = self.settings.backoff * 2 ** (attempt - 1)
            await asyncio.sleep(max(delay, retry_after or 0.0))

    async def _fetch_once(self, url: str) -> tuple[FetchResult, float | None]:
        """One attempt: follow redirects by hand, checking every hop."""
        result = FetchResult(url=url, policy=self.policy.key)
        current, seen = url, {url}
        for _hop in range(self.settings.max_redirects + 1):
            try:
                check_url(current)
                outcome = await self._request(current, result)
            except UnsafeURL as exc:
                return self._fail(result, current, exc.reason, exc.detail), None
            except (TimeoutError, httpx.TimeoutException):
                return self._fail(
                    result, current, "timeout", f"no complete answer in {self.settings.timeout} s"
                ), None
            except httpx.ConnectError as exc:
                reason = "dns_error" if "DNS lookup failed" in str(exc) else "connect_error"
                return self._fail(result, current, reason, str(exc)), None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                return self._fail(result, current, "protocol_error", str(exc) or type(exc).__name__), None
            except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
                return self._fail(result, current, "bad_url", str(exc)), None
            if isinstance(outcome, str):  # a redirect target
                if outcome in seen:
                    return self._fail(
                        result, outcome, "redirect_loop", f"{current} -> {outcome} seen before"
                    ), None
                seen.add(outcome)
                result.redirects.append(outcome)
                current = outcome
                continue
            return outcome
        return self._fail(
            result, current, "too_many_redirects", f"more than {self.settings.max_redirects}"
        ), None

    @staticmethod
    def _fail(result: FetchResult, url: str, reason: str, detail: str) -> FetchResult:
        result.ok, result.reason, result.detail, result.final_url = False, reason, detail, url
        return result

    async def _request(self, url: str, result: FetchResult) -> str | tuple[FetchResult, float | None]:
        """GET one hop. Returns the next URL for a redirect, else the finished result and any Retry-After."""
        assert self._client is not None, "use Fetcher as an async context manager"
        async with self.hosts.slot(host_key(url)):
            async with asyncio.timeout(self.settings.timeout):
                try:
                    response = await self._client.send(self._client.build_request("GET", url), stream=True)
                except (UnsafeURL, httpx.ConnectError):
                    raise  # refused or unreachable: nothing was sent
                except BaseException:
                    self.requests_sent += 1  # sent, but no complete answer (timeout, reset)
                    raise
                self.requests_sent += 1
                try:
                    return await self._handle(url, response, result)
                finally:
                    await response.aclose()

    async def _handle(
        self, url: str, response: httpx.Response, result: FetchResult
    ) -> str | tuple[FetchResult, float | None]:
        result.status, result.final_url = response.status_code, url
        if response.status_code in REDIRECT_CODES:
            location = response.headers.get("location")
            if not location:
                return self._fail(result, url, "bad_redirect", "redirect without Location"), None
            return normalize_url(urljoin(url, location))
        if not 200 <= response.status_code < 300:
            retry_after = _retry_after(response.headers, self.settings.max_retry_after)
            return self._fail(
                result, url, f"http_{response.status_code}", response.reason_phrase
            ), retry_after
        media, charset = _media_type(response.headers.get("content-type"))
        result.content_type, result.charset = media, charset
        length = response.headers.get("content-length", "").strip()
        declared = int(length) if length.isdigit() else None
        if media is not None and media not in self.settings.content_types:
            result.bytes = declared or 0
            return self._fail(result, url, "content_type", f"{media} is not a web page"), None
        if declared is not None and declared > self.settings.max_bytes:
            result.bytes = declared
            return self._fail(
                result, url, "too_large", f"Content-Length {declared} > {self.settings.max_bytes}"
            ), None
        try:
            body = await self._read_capped(response)
        except UnsupportedEncoding as exc:
            return self._fail(result, url, "content_encoding", str(exc)), None
        result.bytes = len(body)
        if len(body) > self.settings.max_bytes:
            return self._fail(result, url, "too_large", f"body over {self.settings.max_bytes} bytes"), None
        if media is None and not _HTML_SNIFF.match(body[:1024]):
            return self._fail(result, url, "content_type", "no Content-Type and the body is not HTML"), None
        result.ok, result.reason, result.body = True, "ok", body
        return result, None

    async def _read_capped(self, response: httpx.Response) -> bytes:
        """The decoded body, at most ``max_bytes`` + 1 bytes (the caller then refuses it): compressed bodies
        are inflated under the cap (:class:`.decode.CappedDecoder`), never whole before it is checked."""
        decoder = CappedDecoder(response.headers.get("content-encoding"), self.settings.max_bytes + 1)
        chunks: list[bytes] = []
        async for raw in response.aiter_raw():
            chunks.append(decoder.feed(raw))
            if decoder.full:
                break
        return b"".join(chunks)
