"""Test helpers: a real HTTP server on 127.0.0.1 (threaded http.server) with scripted routes and request
accounting, a news-like page generator and the path of the shared sample data."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from tests.http_thread import http_thread


@dataclass
class Route:
    """What the server answers on one path. ``responses`` (status, headers, body) are served in turn, the last
    one repeating; ``delay`` seconds pass before the headers; ``length`` False sends no Content-Length."""

    responses: list[tuple[int, dict[str, str], bytes]]
    delay: float = 0.0
    length: bool = True


@dataclass
class LocalServer:
    routes: dict[str, Route | Callable[[str], Route]] = field(default_factory=dict)
    counts: Counter[str] = field(default_factory=Counter)
    arrivals: list[tuple[float, str]] = field(default_factory=list)
    user_agents: list[str] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def page(
        self, path: str, body: str | bytes, content_type: str = "text/html; charset=utf-8", **kw: object
    ) -> str:
        data = body.encode("utf-8") if isinstance(body, str) else body
        self.routes[path] = Route([(200, {"Content-Type": content_type}, data)], **kw)  # type: ignore[arg-type]
        return self.url(path)

    def status(self, path: str, code: int, headers: dict[str, str] | None = None) -> str:
        self.routes[path] = Route([(code, headers or {}, b"")])
        return self.url(path)

    def route(
        self,
        path: str,
        responses: list[tuple[int, dict[str, str], bytes]],
        delay: float = 0.0,
        length: bool = True,
    ) -> str:
        self.routes[path] = Route(responses, delay, length)
        return self.url(path)

    def redirect(self, path: str, location: str, code: int = 302) -> str:
        return self.status(path, code, {"Location": location})

    @property
    def total(self) -> int:
        return sum(self.counts.values())


def _handler(server: LocalServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            path = unquote(urlsplit(self.path).path)
            with server.lock:
                n = server.counts[path]
                server.counts[path] += 1
                server.arrivals.append((time.monotonic(), path))
                server.user_agents.append(self.headers.get("User-Agent", ""))
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
            try:
                self._answer(path, n)
            except (BrokenPipeError, ConnectionResetError):
                pass
            finally:
                with server.lock:
                    server.in_flight -= 1

        def _answer(self, path: str, n: int) -> None:
            route = server.routes.get(path)
            if callable(route):
                route = route(path)
            if route is None:
                route = Route([(404, {"Content-Type": "text/html"}, b"<html><body>not found</body></html>")])
            status, headers, body = route.responses[min(n, len(route.responses) - 1)]
            time.sleep(route.delay)
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            if route.length:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


@contextmanager
def running_server() -> Iterator[LocalServer]:
    state = LocalServer()
    with http_thread(_handler(state)) as port:
        state.port = port
        yield state


def article_html(title: str, paragraphs: int = 12, extra: str = "") -> str:
    """A news-like page: navigation and footer boilerplate around an article of ``paragraphs`` paragraphs."""
    body = "\n".join(
        f"<p>Абзац {i} статьи «{title}»: исследователи подробно описали, как устроен предмет статьи, "
        f"почему он важен и какие выводы из этого следуют для читателей и специалистов.</p>"
        for i in range(paragraphs)
    )
    return (
        f"<!DOCTYPE html><html lang='ru'><head><meta charset='utf-8'><title>{title}</title></head><body>"
        "<nav><ul><li><a href='/'>Главная</a></li><li><a href='/news'>Новости</a></li></ul></nav>"
        f"<article><h1>{title}</h1>{body}{extra}</article>"
        "<footer><p>© Редакция сайта. Все права защищены.</p></footer></body></html>"
    )
