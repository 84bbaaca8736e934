"""A real OpenAI-compatible HTTP stub on 127.0.0.1: scripted failures, recorded requests, logprobs."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@dataclass
class Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to sleep before answering (timeouts)


def answer_of(body: dict) -> str:
    """Default answer: echoes the last user message, so different prompts get different answers."""
    return "ответ: " + body["messages"][-1]["content"]


@dataclass
class StubServer:
    """Counts every chat request it receives (failed ones too) and answers per ``failures`` then ``answer``."""

    failures: list[Failure] = field(default_factory=list)
    answer: Callable[[dict], str] = answer_of
    delay: float = 0.0
    requests: list[dict] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    times: list[float] = field(default_factory=list)
    port: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def respond(self, body: dict) -> tuple[int, dict[str, str], dict, float]:
        with self.lock:
            self.requests.append(body)
            self.times.append(time.monotonic())
            failure = self.failures.pop(0) if self.failures else None
        if failure is not None:
            error = {"error": {"message": f"scripted {failure.status}", "type": "server_error"}}
            return failure.status, failure.headers, error, failure.delay
        text = self.answer(body)
        choice: dict = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop",
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": _logprobs(text, int(body.get("top_logprobs") or 0))}
        usage = {
            "prompt_tokens": 7,
            "completion_tokens": len(text.split()),
            "total_tokens": 7 + len(text.split()),
        }
        payload = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [choice],
            "usage": usage,
        }
        return 200, {}, payload, self.delay


def _logprobs(text: str, top: int) -> list[dict]:
    tokens = text.split() or [""]
    out = []
    for token in tokens:
        alternatives = [{"token": token, "logprob": math.log(0.8), "bytes": None}]
        alternatives += [
            {"token": f"alt{i}", "logprob": math.log(0.2 / top), "bytes": None} for i in range(top - 1)
        ]
        out.append(
            {"token": token, "logprob": math.log(0.8), "bytes": None, "top_logprobs": alternatives[:top]}
        )
    return out


def _handler(stub: StubServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            with stub.lock:
                stub.headers.append(dict(self.headers))
            status, headers, payload, delay = stub.respond(body)
            if delay:
                time.sleep(delay)
            data = json.dumps(payload, ensure_ascii=False).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

    return Handler


@pytest.fixture
def stub_server() -> Iterator[StubServer]:
    stub = StubServer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(stub))
    server.daemon_threads = True
    stub.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        server.shutdown()
        server.server_close()
