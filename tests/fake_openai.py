"""The one fake OpenAI-compatible chat server of the tests: a real ThreadingHTTPServer on 127.0.0.1.

:class:`StubServer` answers every ``POST …/chat/completions`` with ``answer(body)`` — a text, or a
:class:`~ruwikibench.models.types.Completion` whose logprobs are returned when the client asks for logprobs —
after serving its scripted ``failures`` (status, headers, delay) first, and with a 500 every request that
``fail_if(body)`` picks (partial runs: one article's or one text's requests fail); it records every request
body, its headers and arrival time. With ``synthetic_logprobs`` a text answer gets made-up logprobs (its words
at p = 0.8) when logprobs are asked for. :func:`fake_openai_server` is the short form for CLI tests: a
responder of the messages, the base URL yielded.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler

from ruwikibench.models.types import Completion
from tests.http_thread import http_thread

Answer = str | Completion


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
    """Counts every chat request it receives (failed ones too) and answers per ``failures`` then
    ``answer``."""

    failures: list[Failure] = field(default_factory=list)
    answer: Callable[[dict], Answer] = answer_of
    fail_if: Callable[[dict], bool] | None = None
    delay: float = 0.0
    synthetic_logprobs: bool = True
    requests: list[dict] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
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
        if failure is None and self.fail_if is not None and self.fail_if(body):
            failure = Failure(500)
        if failure is not None:
            error = {"error": {"message": f"scripted {failure.status}", "type": "server_error"}}
            return failure.status, failure.headers, error, failure.delay
        answer = self.answer(body)
        completion = answer if isinstance(answer, Completion) else Completion(text=answer)
        choice: dict = {
            "index": 0,
            "message": {"role": "assistant", "content": completion.text},
            "finish_reason": "stop",
        }
        if body.get("logprobs"):
            if completion.logprobs:
                choice["logprobs"] = {"content": _from_completion(completion)}
            elif self.synthetic_logprobs:
                choice["logprobs"] = {
                    "content": _synthetic(completion.text, int(body.get("top_logprobs") or 0))
                }
        words = len(completion.text.split())
        payload = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "stub"),
            "choices": [choice],
            "usage": {"prompt_tokens": 7, "completion_tokens": words, "total_tokens": 7 + words},
        }
        return 200, {}, payload, self.delay


def _from_completion(completion: Completion) -> list[dict]:
    return [
        {
            "token": t.token,
            "logprob": t.logprob,
            "bytes": None,
            "top_logprobs": [{"token": a.token, "logprob": a.logprob, "bytes": None} for a in t.top],
        }
        for t in completion.logprobs or []
    ]


def _synthetic(text: str, top: int) -> list[dict]:
    out = []
    for token in text.split() or [""]:
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
                stub.paths.append(self.path)
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


@contextmanager
def serving(stub: StubServer) -> Iterator[StubServer]:
    """Serve ``stub`` until the block ends (its ``port`` set)."""
    with http_thread(_handler(stub)) as port:
        stub.port = port
        yield stub


@contextmanager
def fake_openai_server(
    responder: Callable[[list[dict[str, str]]], Answer],
    fail_if: Callable[[list[dict[str, str]]], bool] | None = None,
) -> Iterator[str]:
    """Serve answers of ``responder(messages)`` until the block ends (a 500 for the requests whose messages
    ``fail_if`` picks); yields the base URL (…/v1)."""
    picked = None if fail_if is None else (lambda body: fail_if(body["messages"]))
    stub = StubServer(
        answer=lambda body: responder(body["messages"]), fail_if=picked, synthetic_logprobs=False
    )
    with serving(stub):
        yield stub.base_url
