"""A failed request says plainly why: connection refused (a real closed port on 127.0.0.1), an HTTP status (a
real local server answering 500), a timeout (one that never answers) — never an unrelated error the transport
happened to handle nearby ("RuntimeError: no running event loop")."""

from __future__ import annotations

import socket
import threading
import time
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from ruwikibench.conf.config import ModelConfig
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.models.llm import LLM
from ruwikibench.models.openai_backend import OpenAIBackend
from ruwikibench.models.retry import LLMRequestError
from tests.cli.test_input_errors import cli, refused_url, write_config
from tests.graphs.writer_fixture import make_dataset
from tests.http_thread import http_thread


def _handler(status: int, hang: threading.Event | None = None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            if hang is not None:
                hang.wait(10)
                return
            body = b'{"error": {"message": "the model crashed", "type": "server_error"}}'
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


async def _failure(url: str, timeout: float = 10) -> str:
    model = ModelConfig(name="m", endpoints=[url], max_retries=0, timeout=timeout)
    with pytest.raises(LLMRequestError) as caught:
        await LLM({"writer": OpenAIBackend(model)}).complete("writer", "вопрос")
    return str(caught.value)


async def test_a_closed_port_is_connection_refused() -> None:
    message = await _failure(refused_url())
    assert "(cause: connection refused: " in message and "event loop" not in message


async def test_an_http_500_names_the_status_and_the_servers_message() -> None:
    with http_thread(_handler(500)) as port:
        message = await _failure(f"http://127.0.0.1:{port}/v1")
    assert "(HTTP 500)" in message and "the model crashed" in message and "cause: RuntimeError" not in message


async def test_a_server_that_never_answers_is_a_timeout() -> None:
    hang = threading.Event()
    with http_thread(_handler(200, hang)) as port:
        started = time.monotonic()
        message = await _failure(f"http://127.0.0.1:{port}/v1", timeout=1)
        hang.set()
    assert time.monotonic() - started < 8
    assert "(cause: timeout, no answer in time: " in message


def test_a_transports_unrelated_context_is_never_the_cause() -> None:
    refused = ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")
    try:
        try:
            raise RuntimeError("no running event loop")
        except RuntimeError:
            raise refused  # raised while another was handled: that one is its context, not its cause
    except ConnectionRefusedError as exc:
        assert isinstance(exc.__context__, RuntimeError)
        try:
            raise TimeoutError("Request timed out.") from exc
        except TimeoutError as outer:
            message = str(LLMRequestError("m", "http://127.0.0.1:9/v1", 1, outer))
    assert message.endswith("(cause: connection refused: [Errno 111] Connect call failed ('127.0.0.1', 9))")


def test_the_cli_names_a_refused_connection(tmp_path: Path) -> None:
    save_dataset(make_dataset(), tmp_path / "data")
    config = write_config(tmp_path, refused_url())
    result = cli(tmp_path, "run", "ranking", "--dataset", "data", "--config", str(config))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "(cause: connection refused: " in result.stderr and "no running event loop" not in result.stderr


def test_a_port_nobody_listens_on_is_really_closed() -> None:
    url = refused_url()
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    with socket.socket() as sock, pytest.raises(ConnectionRefusedError):
        sock.connect(("127.0.0.1", port))
