"""The local server manager: start, wait for /v1/models, stop; failures quote the log; sharing per model.

The llama.cpp process is replaced by a tiny Python HTTP server here (the real one is in
test_local_model_integration.py), so the lifecycle is tested in well under a second.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from ruwikibench.models import local_server
from ruwikibench.models.local_server import (
    LocalServer,
    LocalServerError,
    acquire_server,
    free_port,
    release_server,
)

STAND_IN = r"""
import json, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
time.sleep(float(sys.argv[2]))  # "loading the model"
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_GET(self):
        data = json.dumps({"object": "list", "data": [{"id": "stand-in"}]}).encode()
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
print("stand-in listening", flush=True)
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


class StandIn(LocalServer):
    """Runs the stand-in script instead of llama_cpp.server."""

    load_seconds = 0.3
    script = STAND_IN

    def command(self, model_file: Path) -> list[str]:
        return [sys.executable, "-c", self.script, str(self.port), str(self.load_seconds)]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(local_server, "llama_cpp_available", lambda: True)


def _gguf(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_real_command_line(tmp_path: Path) -> None:
    server = LocalServer("qwen2.5-0.5b", port=12345, n_threads=2)
    command = server.command(tmp_path / "m.gguf")
    assert command[1:3] == ["-m", "llama_cpp.server"]
    joined = " ".join(command)
    for part in (
        "--host 127.0.0.1",
        "--port 12345",
        "--n_ctx 4096",
        "--logits_all true",
        "--n_threads 2",
        "--n_threads_batch 2",
    ):
        assert part in joined
    assert f"--model {tmp_path / 'm.gguf'}" in joined


def test_free_port_never_the_reserved_one() -> None:
    ports = {free_port() for _ in range(5)}
    assert 8081 not in ports and all(1024 < p < 65536 for p in ports)


def test_start_waits_until_answering_and_stops(tmp_path: Path) -> None:
    with StandIn("qwen2.5-0.5b", model_file=_gguf(tmp_path), startup_timeout=20) as server:
        assert server.running and server.port != 8081
        assert httpx.get(f"{server.base_url}/models").json()["data"][0]["id"] == "stand-in"
        process = server.process
        assert server.log_path is not None and server.log_path.parent == tmp_path / "logs"
    assert process is not None and process.poll() is not None and not server.running


async def test_async_context_manager(tmp_path: Path) -> None:
    async with StandIn("qwen2.5-0.5b", model_file=_gguf(tmp_path), startup_timeout=20) as server:
        async with httpx.AsyncClient() as client:
            assert (await client.get(f"{server.base_url}/models")).status_code == 200
        process = server.process
    assert process is not None and process.poll() is not None


def test_a_crashing_server_is_reported_with_its_log(tmp_path: Path) -> None:
    class Crashing(StandIn):
        script = "import sys; print('error: model file is not GGUF', flush=True); sys.exit(3)"

    with pytest.raises(LocalServerError, match=r"exited with code 3(.|\n)*model file is not GGUF"):
        Crashing("qwen2.5-0.5b", model_file=_gguf(tmp_path), startup_timeout=20).start()


def test_a_silent_server_times_out_and_is_killed(tmp_path: Path) -> None:
    class Silent(StandIn):
        script = "import time; print('loading…', flush=True); time.sleep(60)"

    server = Silent("qwen2.5-0.5b", model_file=_gguf(tmp_path), startup_timeout=1.0)
    with pytest.raises(LocalServerError, match="did not answer"):
        server.start()
    assert not server.running


def test_missing_llama_cpp_explains_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(local_server, "llama_cpp_available", lambda: False)
    with pytest.raises(LocalServerError, match=r"ruwikibench\[local\]"):
        LocalServer("qwen2.5-0.5b", model_file=_gguf(tmp_path)).start()


def test_one_shared_server_per_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_server, "LocalServer", StandIn)
    monkeypatch.setattr(local_server, "_SHARED", {})
    first = acquire_server("qwen2.5-0.5b", model_file=_gguf(tmp_path), startup_timeout=20)
    second = acquire_server("qwen2.5-0.5b")
    assert first is second and first.running
    release_server(second)
    assert first.running  # one user left
    release_server(first)
    assert not first.running


def test_unknown_model_rejected() -> None:
    with pytest.raises(Exception, match="unknown local model"):
        LocalServer("llama-70b")
