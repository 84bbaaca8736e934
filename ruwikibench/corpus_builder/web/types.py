"""Settings and results of the web path of the corpus builder: the downloader's settings and one URL's fetch
result, the build's settings (and the sites it knows) and its input error."""

from __future__ import annotations

import builtins
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ruwikibench.corpus_builder.web.extract import DEFAULT_CHAIN
from ruwikibench.version import __version__

USER_AGENT = f"ruwikibench-corpus-builder/{__version__} (RuWikiBench corpus builder; python-httpx)"

# Outcomes worth retrying now and not worth caching (a later build tries again).
TRANSIENT_REASONS = frozenset({"timeout", "connect_error", "dns_error", "protocol_error", "http_429"})
SITES = ("ru.ruwiki.ru", "ru.wikipedia.org", "en.wikipedia.org")


class FetchSettings(BaseModel):
    """Politeness, limits and safety of the downloader."""

    model_config = ConfigDict(extra="forbid")

    user_agent: str = USER_AGENT
    timeout: float = Field(default=20.0, description="seconds per request, connect + headers + body")
    connect_timeout: float = Field(default=10.0, description="seconds to open a connection")
    max_bytes: int = Field(default=5_000_000, description="largest (decoded) page accepted")
    max_redirects: int = Field(default=5, description="redirect hops followed, each one checked")
    retries: int = Field(default=2, description="extra attempts after a transient failure")
    backoff: float = Field(default=1.0, description="first retry delay in seconds; doubles each attempt")
    max_retry_after: float = Field(default=30.0, description="cap on a server's Retry-After")
    concurrency: int = Field(default=16, description="requests in flight overall")
    per_host: int = Field(default=2, description="requests in flight per host")
    host_delay: float = Field(default=0.5, description="seconds between request starts to one host")
    content_types: tuple[str, ...] = ("text/html", "application/xhtml+xml")
    allow_private: bool = Field(
        default=False, description="allow private/loopback/link-local/reserved addresses"
    )
    allow_networks: list[str] = Field(default_factory=list, description="networks allowed although internal")


class FetchResult(BaseModel):
    """The outcome of fetching one URL (after redirects and retries)."""

    url: str
    ok: bool = False
    reason: str = Field(default="ok", description="'ok' or a short failure code (http_404, timeout, …)")
    detail: str = ""
    status: int | None = None
    final_url: str | None = None
    redirects: list[str] = Field(default_factory=list, description="every hop after the first, in order")
    content_type: str | None = None
    charset: str | None = None
    bytes: int = 0
    attempts: int = 0
    elapsed: float = 0.0
    cached: bool = False
    policy: str = Field(
        default="strict", description="address policy in force when fetched (AddressPolicy.key)"
    )
    body: builtins.bytes = Field(default=b"", exclude=True, repr=False)

    @property
    def transient(self) -> bool:
        """A failure that may go away: retried now, not cached, tried again by the next build."""
        if self.ok:
            return False
        return self.reason in TRANSIENT_REASONS or (self.status is not None and self.status >= 500)


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
