"""What the builder may fetch: http(s) only, and never an internal address unless explicitly allowed.

Two layers. :func:`check_url` refuses bad schemes and missing hosts before a request (every redirect hop
is checked again). :class:`GuardedBackend` is the httpcore network backend of the fetcher's client: it
resolves the host itself, refuses the connection if ANY resolved address is private, loopback, link-local,
reserved, multicast or unspecified, and connects to the address it checked — so a DNS answer that changes
between check and connect (DNS rebinding) cannot slip an internal address through.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

import httpcore
from httpcore._backends.anyio import AnyIOBackend

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOWED_SCHEMES = ("http", "https")
STRICT = "strict"


class UnsafeURL(Exception):
    """A URL the builder refuses to fetch. ``reason`` is a short manifest code."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class BlockedAddress(UnsafeURL):
    """The host resolves to an address in a refused range."""

    def __init__(self, host: str, address: str, category: str) -> None:
        super().__init__("blocked_address", f"{host} -> {address} ({category})")
        self.host = host
        self.address = address
        self.category = category


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address hidden in an IPv4-mapped, 6to4 or Teredo IPv6 address, if any."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
    return None


def address_category(ip: IPAddress) -> str | None:
    """Why an address is internal ('loopback', 'private', ...), or None for a public address."""
    inner = _embedded_ipv4(ip)
    if inner is not None:
        return address_category(inner)
    checks = (
        ("unspecified", ip.is_unspecified),
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("multicast", ip.is_multicast),
        ("reserved", ip.is_reserved),
        ("private", ip.is_private),
        ("site-local", isinstance(ip, ipaddress.IPv6Address) and ip.is_site_local),
        ("not global", not ip.is_global),
    )
    for name, hit in checks:
        if hit:
            return name
    return None


class AddressPolicy:
    """Refuses internal addresses unless ``allow_private`` or the address lies in an allowed network."""

    def __init__(self, allow_private: bool = False, allow_networks: Iterable[str] = ()) -> None:
        self.allow_private = allow_private
        self.allow_networks: list[IPNetwork] = [ipaddress.ip_network(n, strict=False) for n in allow_networks]

    def refusal(self, ip: IPAddress) -> str | None:
        """The refused category of ``ip`` under this policy, or None when it may be fetched."""
        category = address_category(ip)
        if category is None or self.allow_private:
            return None
        if any(ip.version == net.version and ip in net for net in self.allow_networks):
            return None
        return category

    def check_ip(self, host: str, address: str) -> None:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
        category = self.refusal(ip)
        if category is not None:
            raise BlockedAddress(host, address, category)

    @property
    def key(self) -> str:
        """'strict', 'allow-private' or 'allow:<networks>' — recorded with every cached fetch result."""
        if self.allow_private:
            return "allow-private"
        if self.allow_networks:
            return "allow:" + ",".join(sorted(map(str, self.allow_networks)))
        return STRICT

    def describe(self) -> str:
        if self.allow_private:
            return "all addresses allowed (--allow-private)"
        if self.allow_networks:
            return "internal addresses refused except " + ", ".join(map(str, self.allow_networks))
        return "internal addresses refused"


def check_url(url: str) -> None:
    """Refuse anything but an absolute http(s) URL with a host. Addresses are checked at connect time."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise UnsafeURL("bad_url", f"{url!r}: {exc}") from exc
    if parts.scheme.lower() not in ALLOWED_SCHEMES:
        raise UnsafeURL(
            "bad_scheme", f"{parts.scheme or 'no'} scheme in {url!r}; only http and https are fetched"
        )
    if not parts.hostname:
        raise UnsafeURL("bad_url", f"no host in {url!r}")
    if port == 0:
        raise UnsafeURL("bad_url", f"port 0 in {url!r}")


async def resolve(host: str, port: int) -> list[str]:
    """All addresses of ``host`` (an IP literal resolves to itself), in resolver order, deduplicated."""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise httpcore.ConnectError(f"DNS lookup failed for {host}: {exc}") from exc
    seen: dict[str, None] = {}
    for info in infos:
        seen.setdefault(str(info[4][0]), None)
    return list(seen)


class GuardedBackend(httpcore.AsyncNetworkBackend):
    """httpcore network backend that checks every resolved address and connects only to checked ones."""

    def __init__(self, policy: AddressPolicy) -> None:
        self.policy = policy
        self._backend = AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await resolve(host, port)
        for address in addresses:  # refuse if ANY answer is internal: no mixing public and private records
            self.policy.check_ip(host, address)
        error: Exception | None = None
        for address in addresses:
            try:
                return await self._backend.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error or httpcore.ConnectError(f"no address for {host}")

    async def connect_unix_socket(self, *args: Any, **kwargs: Any) -> httpcore.AsyncNetworkStream:
        raise UnsafeURL("bad_url", "unix sockets are never used by the corpus builder")

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)
