"""The local server manager: start, wait for /v1/models, stop; failures quote the log; sharing per model.

The llama.cpp process is replaced by a tiny Python HTTP server here (the real one is in
test_local_model_integration.py), so the lifecycle is tested in well under a second.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ruwikibench.models import local_server
from ruwikibench.models.local_server import (
    LocalServer,
    LocalServerDied,
    LocalServerError,
    acquire_server,
    free_port,
    release_server,
)

STAND_IN = r"""
import json, os, signal, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
mode, load = sys.argv[1], float(sys.argv[2])  # then llama_cpp.server's own arguments
port = int(sys.argv[sys.argv.index("--port") + 1])
time.sleep(load)  # "loading the model"
if mode == "slow-exit":  # as uvicorn, which on SIGTERM first finishes the request it is computing
    signal.signal(signal.SIGTERM, lambda *_: (time.sleep(60), sys.exit(0)))
served = []
class H(BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def _send(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def do_GET(self):
        models = {"object": "list", "data": [{"id": "stand-in"}]}
        self._send(200 if self.path == "/v1/models" else 404, models)
    def do_POST(self):
        self.rfile.read(int(self.headers["content-length"]))
        served.append(self.path)
        if mode == "crash" or (mode == "crash-later" and len(served) > 1):
            print("GGML_ASSERT: fault in the matrix kernel", flush=True)
            os.kill(os.getpid(), signal.SIGSEGV)
        if mode == "stall":
            time.sleep(3600)
        self._send(200, {"id": "x", "object": "chat.completion", "created": 0, "model": "stand-in",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "4"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
print("system_info: AVX2 = 1 | AMX_INT8 = " + ("1" if mode.startswith("crash") else "0"), flush=True)
HTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def stand_in_launcher(tmp_path: Path, mode: str = "ok", load_seconds: float = 0.3) -> list[str]:
    """A stand-in for ``python -m llama_cpp.server``: a small HTTP server on 127.0.0.1 that gets the same
    arguments; ``mode`` ok | crash (SIGSEGV on its first chat completion) | crash-later (on its second) |
    stall (accepts chat completions and never answers) | slow-exit (takes a minute to obey SIGTERM)."""
    script = tmp_path / "stand_in_server.py"
    script.write_text(STAND_IN)
    return [sys.executable, str(script), mode, str(load_seconds)]


class StandIn(LocalServer):
    """Runs the stand-in script instead of llama_cpp.server."""

    load_seconds = 0.3
    script = STAND_IN

    def command(self, model_file: Path) -> list[str]:
        rest = super().command(model_file)[3:]  # llama_cpp.server's arguments
        return [sys.executable, "-c", self.script, "ok", str(self.load_seconds), *rest]


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

    with pytest.raises(
        LocalServerError, match=r"exited with exit code 3 while starting; .*model file is not GGUF"
    ):
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


def test_the_start_up_proof_is_one_chat_completion(tmp_path: Path) -> None:
    launcher = stand_in_launcher(tmp_path)
    with LocalServer("qwen2.5-0.5b", model_file=_gguf(tmp_path), launcher=launcher) as server:
        assert (
            server.running and server.command(tmp_path)[:2] == launcher[:2]
        )  # the launcher, then the arguments


def test_a_server_that_dies_on_its_first_completion_fails_the_start_in_one_line(tmp_path: Path) -> None:
    server = LocalServer(
        "qwen2.5-0.5b", model_file=_gguf(tmp_path), launcher=stand_in_launcher(tmp_path, "crash")
    )
    started = time.monotonic()
    with pytest.raises(LocalServerError) as caught:
        server.start()
    message = str(caught.value)
    assert "\n" not in message and time.monotonic() - started < 10
    assert "exited with signal SIGSEGV on its first chat completion" in message
    assert f"log {tmp_path / 'logs'}" in message and "-DGGML_NATIVE=OFF" in message  # the AMX hint
    assert not server.running


def test_a_server_that_never_answers_a_completion_fails_fast(tmp_path: Path) -> None:
    server = LocalServer(
        "qwen2.5-0.5b",
        model_file=_gguf(tmp_path),
        launcher=stand_in_launcher(tmp_path, "stall"),
        probe_timeout=1.0,
    )
    started = time.monotonic()
    with pytest.raises(LocalServerError, match=r"not a one-token chat completion within 1s.*log ") as caught:
        server.start()
    assert "\n" not in str(caught.value) and time.monotonic() - started < 10
    assert not server.running  # stopped


async def test_a_server_dying_during_the_run_fails_the_request_at_once(tmp_path: Path) -> None:
    """Not 5 attempts against a dead port blamed on a timeout: one LocalServerDied naming signal and log."""
    from ruwikibench.conf.config import ModelConfig
    from ruwikibench.models.llm import LLM
    from ruwikibench.models.openai_backend import OpenAIBackend

    server = LocalServer(
        "qwen2.5-0.5b", model_file=_gguf(tmp_path), launcher=stand_in_launcher(tmp_path, "crash-later")
    )
    await server.astart()  # the proof is its first completion
    model = ModelConfig(name="stand-in", endpoints=[server.base_url], max_retries=4, retry_base_delay=2.0)
    llm = LLM({"writer": OpenAIBackend(model)}, servers=[server])
    try:
        await (
            llm.prepare()
        )  # the HTTP client built (imports: seconds of CPU on a loaded machine) before the clock
        started = time.monotonic()
        with pytest.raises(
            LocalServerDied, match=r"exited with signal SIGSEGV while the run used it; log .*llama-server-"
        ) as caught:
            await llm.complete("writer", "2+2=")
        assert time.monotonic() - started < 12  # the retries' backoff alone: at least (2 + 4 + 8 + 16) / 2 s
        assert "\n" not in str(caught.value) and "SIGSEGV" in (server.exit_line() or "")
        with pytest.raises(LocalServerDied):  # and every later request, before it is sent
            await llm.complete("writer", "3+3=")
    finally:
        await llm.aclose()


KILLED_RUN = r"""
import json, sys
from ruwikibench.conf.config import RunConfig
from ruwikibench.models.llm import LLM
config = RunConfig.model_validate({
    "models": {"writer": {"name": "q", "local": "qwen2.5-0.5b"}},
    "cache_dir": sys.argv[1],
    "local_server": {"command": json.loads(sys.argv[2])},
})
llm = LLM.from_config(config)  # as a run starts it
print(llm.servers[0].process.pid, flush=True)
sys.stdin.read()  # until killed
"""


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_a_killed_run_leaves_no_server(tmp_path: Path, how: signal.Signals) -> None:
    from ruwikibench.models.local_assets import _stamp, local_model, model_path

    gguf = model_path("qwen2.5-0.5b")  # under the test's RUWIKIBENCH_CACHE: a stand-in file, stamped verified
    gguf.parent.mkdir(parents=True)
    gguf.write_bytes(b"GGUF")
    gguf.with_name(gguf.name + ".sha256").write_text(
        json.dumps(_stamp(gguf, local_model("qwen2.5-0.5b").sha256))
    )
    run = subprocess.Popen(
        [
            sys.executable,
            "-c",
            KILLED_RUN,
            str(tmp_path),
            json.dumps(stand_in_launcher(tmp_path, "slow-exit")),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert run.stdout is not None
        server_pid = int(run.stdout.readline())
        assert _alive(server_pid)
        run.send_signal(how)
        run.wait(20)
        deadline = time.monotonic() + 10
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(server_pid), f"the server outlived a run killed by {how.name}"
    finally:
        run.kill()
        run.wait()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet reaped by init, counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
