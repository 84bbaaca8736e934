"""A saved Ruwiki article served from the local test server, its reference URLs rewritten to scenarios.

Every footnote URL of the page (plain links and Ruwiki ``external-gateway`` base64 links) is rewritten:
footnotes whose source text the sample holds point at a page wrapping that text in site boilerplate (a few of
them first at a 404, so the builder must fall back to the footnote's archive copy); the other footnotes point
at real saved web pages and at the failure cases: 404, slow answer, PDF, image, redirect loop, a page under
1500 characters, a server error, a redirect to a non-http scheme, private addresses and a redirect to one.
"""

from __future__ import annotations

import base64
import html as html_lib
import json
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruwikibench.corpus_builder.html_parser import decode_gateway_href, parse_article_html
from tests.corpus_builder.web._server import LocalServer, article_html

_HREF = re.compile(r'href="((?:https?:)?//[^"]*)"')
_GATEWAY = re.compile(r'href="#HeGW([A-Za-z0-9+/=_-]+)"')

# scenario -> the manifest reason expected for its URL (None: kept or too short, decided by extraction)
FAILURES: dict[str, str] = {
    "404": "http_404",
    "slow": "timeout",
    "pdf": "content_type",
    "image": "content_type",
    "loop": "redirect_loop",
    "short": "too_short",
    "error": "http_500",
    "redirect_ftp": "bad_scheme",
    "private10": "blocked_address",
    "metadata": "blocked_address",
    "redirect_private": "blocked_address",
}


@dataclass
class Site:
    title: str
    html: str
    expected: dict[str, str] = field(default_factory=dict)  # failure-case URL -> expected manifest reason
    texts: dict[str, str] = field(default_factory=dict)  # footnote id -> the sample's source text
    fallback_refs: list[str] = field(default_factory=list)  # footnotes whose first URL is a 404
    web: dict[str, dict[str, Any]] = field(default_factory=dict)  # URL -> expectations of a saved web page
    transient_paths: set[str] = field(default_factory=set)  # paths that fail transiently (never cached)


def text_page(title: str, text: str) -> str:
    paragraphs = "".join(f"<p>{html_lib.escape(line)}</p>" for line in text.splitlines() if line.strip())
    return (
        f"<!DOCTYPE html><html lang='ru'><head><meta charset='utf-8'><title>{html_lib.escape(title)}</"
        "title></head><body><nav><a href='/'>Главная</a> | <a href='/politics'>Политика</a> | <a "
        f"href='/sport'>Спорт</a></nav><main><article><h1>{html_lib.escape(title)}</h1>{paragraphs}</"
        "article></main><footer>© Информационное агентство. Все права защищены. "
        "Перепечатка запрещена.</footer></body></html>"
    )


def _scenario_route(server: LocalServer, scenario: str, i: int, site: Site) -> str:
    path = f"/case/{scenario}/{i}"
    if scenario == "404":
        return server.status(path, 404)
    if scenario == "slow":
        site.transient_paths.add(path)
        return server.route(path, [(200, {"Content-Type": "text/html"}, b"<html></html>")], delay=3.0)
    if scenario == "pdf":
        return server.page(path, b"%PDF-1.5\n" + b"0" * 4000, "application/pdf")
    if scenario == "image":
        return server.page(path, b"\x89PNG\r\n\x1a\n" + b"0" * 400, "image/png")
    if scenario == "loop":
        server.redirect(path + "/b", path)
        return server.redirect(path, path + "/b")
    if scenario == "short":
        return server.page(path, article_html("Короткая заметка", paragraphs=3))
    if scenario == "error":
        site.transient_paths.add(path)
        return server.status(path, 500)
    if (
        scenario == "redirect_ftp"
    ):  # the parser keeps only http(s) links; a redirect can still name another scheme
        return server.redirect(path, f"ftp://127.0.0.1:{server.port}/pub/file-{i}.txt")
    if scenario == "private10":
        return f"http://10.0.0.{i % 250 + 1}/internal/{i}"
    if scenario == "metadata":
        return "http://169.254.169.254/latest/meta-data/iam/security-credentials/"
    if scenario == "redirect_private":
        return server.redirect(path, "http://169.254.169.254/latest/meta-data/")
    raise ValueError(scenario)


def serve_article(
    server: LocalServer, record: dict[str, Any], web_dir: Path | None, fallbacks: int = 2
) -> Site:
    """Register the article page and every target of its rewritten footnote URLs on ``server``."""
    title = record["article_name"]
    original = record["html"]
    article = parse_article_html(original, title)
    texts = {s["source_id"]: s["source_text"] for s in record["sources"]}
    site = Site(title=title, html="")
    pages = _web_pages(web_dir)
    failures = list(FAILURES)
    mapping: dict[str, str] = {}
    other = 0
    for n, ref in enumerate(r for r in article.references if r.urls and not r.is_note):
        for k, url in enumerate(ref.urls):
            archive = "/web.archive.org" if "archive" in url else ""  # keeps is_archive_url() true
            if ref.id in texts:
                site.texts[ref.id] = texts[ref.id]
                if k == 0 and len(ref.urls) > 1 and len(site.fallback_refs) < fallbacks:
                    site.fallback_refs.append(ref.id)
                    local = server.status(f"/dead/{n}", 404)
                else:
                    local = server.page(f"{archive}/src/{n}/{k}", text_page(title, texts[ref.id]))
            elif other < len(failures) and k == 0:
                local = _scenario_route(server, failures[other], n, site)
                site.expected[local] = FAILURES[failures[other]]
                other += 1
            elif pages:
                name, item, body = pages[(n + k) % len(pages)]
                local = server.page(f"{archive}/web/{n}/{k}/{name}", body, "text/html")
                site.web[local] = item
            else:
                local = server.status(f"/none/{n}/{k}", 404)
            mapping[url] = local
    site.html = _rewrite(original, mapping)
    server.page("/wiki/" + title.replace(" ", "_"), site.html)
    _check_rewritten(site.html, title, server)
    return site


def _web_pages(web_dir: Path | None) -> list[tuple[str, dict[str, Any], bytes]]:
    if web_dir is None:
        return []
    expectations = json.loads((web_dir / "expectations.json").read_text(encoding="utf-8"))
    return [
        (item["file"], item, (web_dir / "pages" / item["file"]).read_bytes())
        for item in list(expectations.values())[:12]
    ]


def _rewrite(html: str, mapping: dict[str, str]) -> str:
    def plain(match: re.Match[str]) -> str:
        href = html_lib.unescape(match.group(1))
        key = "https:" + href if href.startswith("//") else href
        return f'href="{html_lib.escape(mapping[key], quote=True)}"' if key in mapping else match.group(0)

    def gateway(match: re.Match[str]) -> str:
        url = decode_gateway_href("#HeGW" + match.group(1), "HeGW")
        if url is None or url not in mapping:
            return match.group(0)
        encoded = base64.b64encode(urllib.parse.quote(mapping[url], safe="").encode()).decode()
        return f'href="#HeGW{encoded}"'

    return _GATEWAY.sub(gateway, _HREF.sub(plain, html))


def _check_rewritten(html: str, title: str, server: LocalServer) -> None:
    """Every footnote URL of the served page must point at the local server or a deliberate refusal case."""
    for ref in parse_article_html(html, title).references:
        for url in ref.urls:
            host = urllib.parse.urlsplit(url).hostname
            assert host in ("127.0.0.1", "169.254.169.254") or (host or "").startswith("10.0.0."), (
                ref.id,
                url,
            )
