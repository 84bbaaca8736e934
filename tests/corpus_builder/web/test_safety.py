from __future__ import annotations

import ipaddress

import pytest

from ruwikibench.corpus_builder.web import safety
from ruwikibench.corpus_builder.web.fetch import Fetcher
from ruwikibench.corpus_builder.web.safety import (
    AddressPolicy,
    BlockedAddress,
    UnsafeURL,
    address_category,
    check_url,
)
from ruwikibench.corpus_builder.web.types import FetchSettings


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.5.4", "private"),
        ("192.168.0.1", "private"),
        ("169.254.169.254", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("240.0.0.1", "reserved"),
        ("100.64.0.1", "not global"),
        ("::1", "loopback"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("::ffff:10.0.0.1", "private"),  # IPv4-mapped IPv6 hides an internal IPv4 address
        ("2002:a00:1::", "private"),  # 6to4 of 10.0.0.1
        ("8.8.8.8", None),
        ("93.184.216.34", None),
        ("2001:4860:4860::8888", None),
    ],
)
def test_address_categories(address: str, category: str | None) -> None:
    assert address_category(ipaddress.ip_address(address)) == category


def test_policy_allow_flag_and_networks() -> None:
    loopback, private = ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("10.0.0.1")
    assert AddressPolicy().refusal(loopback) == "loopback"
    assert AddressPolicy(allow_private=True).refusal(private) is None
    narrow = AddressPolicy(allow_networks=["127.0.0.0/8"])
    assert narrow.refusal(loopback) is None
    assert narrow.refusal(private) == "private"
    assert narrow.refusal(ipaddress.ip_address("::1")) == "loopback"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.org/file", "bad_scheme"),
        ("file:///etc/passwd", "bad_scheme"),
        ("javascript:alert(1)", "bad_scheme"),
        ("gopher://127.0.0.1:6379/_INFO", "bad_scheme"),
        ("http:///nohost", "bad_url"),
        ("http://example.org:99999/", "bad_url"),
    ],
)
def test_check_url_refuses(url: str, reason: str) -> None:
    with pytest.raises(UnsafeURL) as info:
        check_url(url)
    assert info.value.reason == reason


async def test_default_policy_refuses_loopback_without_sending(server) -> None:  # type: ignore[no-untyped-def]
    url = server.page("/p", "<html><body>secret</body></html>")
    async with Fetcher(FetchSettings(retries=0)) as fetcher:
        result = await fetcher.fetch(url)
        by_name = await fetcher.fetch(f"http://localhost:{server.port}/p")  # refused after DNS resolution
    assert (result.ok, result.reason) == (False, "blocked_address")
    assert "loopback" in result.detail
    assert by_name.reason == "blocked_address" and "localhost" in by_name.detail
    assert server.total == 0


async def test_allow_private_flag_allows_localhost(server) -> None:  # type: ignore[no-untyped-def]
    server.page("/p", "<html><body>ok</body></html>")
    async with Fetcher(FetchSettings(allow_private=True, retries=0)) as fetcher:
        result = await fetcher.fetch(f"http://localhost:{server.port}/p")
    assert result.ok and result.body == b"<html><body>ok</body></html>"


@pytest.mark.parametrize(
    "target",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/admin",
        "http://[::1]:1/",
        "file:///etc/passwd",
    ],
)
async def test_redirect_to_internal_target_is_refused(server, target: str) -> None:  # type: ignore[no-untyped-def]
    url = server.redirect("/go", target)
    async with Fetcher(FetchSettings(allow_networks=["127.0.0.0/8"], retries=0)) as fetcher:
        result = await fetcher.fetch(url)
    assert not result.ok
    assert result.reason in {"blocked_address", "bad_scheme"}
    assert result.redirects == [target] and result.final_url == target
    assert server.counts["/go"] == 1


async def test_mixed_dns_answer_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """A name with one public and one internal record is refused before any connection (no rebinding)."""
    connects: list[str] = []

    async def fake_resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34", "10.0.0.7"]

    async def fake_connect(*args: object, **kwargs: object) -> None:
        connects.append(str(args))

    monkeypatch.setattr(safety, "resolve", fake_resolve)
    backend = safety.GuardedBackend(AddressPolicy())
    monkeypatch.setattr(backend._backend, "connect_tcp", fake_connect)
    with pytest.raises(BlockedAddress) as info:
        await backend.connect_tcp("rebind.example", 80)
    assert info.value.address == "10.0.7" or info.value.address == "10.0.0.7"
    assert connects == []


async def test_backend_connects_to_the_checked_address(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    async def fake_resolve(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    async def fake_connect(host: str, port: int, **kwargs: object) -> str:
        seen.append(host)
        return "stream"

    monkeypatch.setattr(safety, "resolve", fake_resolve)
    backend = safety.GuardedBackend(AddressPolicy())
    monkeypatch.setattr(backend._backend, "connect_tcp", fake_connect)
    assert await backend.connect_tcp("example.org", 80) == "stream"
    assert seen == ["93.184.216.34"]
