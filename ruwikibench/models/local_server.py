"""The local llama.cpp server: llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with a bundled GGUF.

``LocalServer`` starts ``python -m llama_cpp.server --model F --host 127.0.0.1 --port P --n_ctx 4096
--logits_all true`` (a free port unless given; ``launcher`` replaces ``python -m llama_cpp.server``),
waits until
``/v1/models`` answers, then proves itself with one short chat completion under ``probe_timeout`` (a server
that loads but crashes or hangs on its first request — a llama.cpp build with kernels this CPU faults on —
fails here, in one line, never as timed-out units), and stops the process on exit — as a context manager
(``with`` / ``async with``), by :meth:`stop`, and at interpreter exit. The server process dies with the run
however the run ends (SIGTERM, SIGINT, ``kill -9``): it is spawned from one long-lived thread with Linux
``PR_SET_PDEATHSIG`` (SIGKILL), which fires when that thread ends, i.e. with the process. Its output goes to
``<cache>/logs/llama-server-<model>-<port>.log``; a failure names the exit code or signal and the log.
:meth:`LocalServer.exit_line` says why a server that was running has gone (the LLM client watches its
servers).

:func:`acquire_server` / :func:`release_server` share one server per local model inside a process
(:meth:`LLM.from_config` uses them, so every role that names the local model talks to the same server).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import IO, Any, Self

import httpx

from ruwikibench.models.local_assets import DEFAULT_LOCAL_MODEL, cache_root, ensure_model, local_model

RESERVED_PORTS = frozenset({8081})  # the shared development server


class LocalServerError(RuntimeError):
    pass


class LocalServerDied(LocalServerError):
    """The local server exited while a run used it: the run stops (no request can be answered any more)."""


PROBE = {"messages": [{"role": "user", "content": "2+2="}], "max_tokens": 1, "temperature": 0.0}
"""The start-up proof: one short chat completion (a prompt through the model and one decoded token)."""


def llama_cpp_available() -> bool:
    """True when llama-cpp-python with its server extra is importable."""
    try:
        return importlib.util.find_spec("llama_cpp") is not None and (
            importlib.util.find_spec("llama_cpp.server") is not None
        )
    except (ImportError, ValueError):
        return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port the OS reports free on ``host`` (never one of :data:`RESERVED_PORTS`)."""
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port = int(sock.getsockname()[1])
        if port not in RESERVED_PORTS:
            return port


def local_identity(name: str) -> dict[str, object]:
    """What identifies a local model's answers in the response cache: its name and the GGUF's sha256."""
    return {"local": name, "gguf_sha256": local_model(name).sha256}


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


class _Spawner:
    """One daemon thread that starts every server process. PR_SET_PDEATHSIG fires when the spawning *thread*
    ends: this one ends only with the process, whichever thread (an executor's, a loop's) asked for the
    start."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def run(self, job: Callable[[], Any]) -> Any:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="local-server-spawner", daemon=True)
                self._thread.start()
        done: Future[Any] = Future()
        self._jobs.put((job, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            job, done = self._jobs.get()
            try:
                done.set_result(job())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)


_SPAWNER = _Spawner()


def describe_exit(code: int) -> str:
    """``exit code 3`` or ``signal SIGSEGV`` (a negative Popen return code)."""
    if code >= 0:
        return f"exit code {code}"
    try:
        return f"signal {signal.Signals(-code).name}"
    except ValueError:
        return f"signal {-code}"


class LocalServer:
    """One llama.cpp server process for one bundled local model."""

    def __init__(
        self,
        model: str = DEFAULT_LOCAL_MODEL,
        *,
        port: int | None = None,
        host: str = "127.0.0.1",
        n_ctx: int = 4096,
        n_threads: int | None = None,
        startup_timeout: float = 300.0,
        probe_timeout: float = 120.0,
        model_file: Path | None = None,
        launcher: Sequence[str] | None = None,
    ) -> None:
        local_model(model)  # validates the name
        self.model = model
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self.probe_timeout = probe_timeout
        self.model_file = model_file
        self.launcher = list(launcher) if launcher else None
        self.process: subprocess.Popen[bytes] | None = None
        self.log_path: Path | None = None
        self._log: IO[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL (``…/v1``)."""
        if self.port is None:
            raise LocalServerError("the server has no port yet: start it first")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def command(self, model_file: Path) -> list[str]:
        command = [
            *(self.launcher or [sys.executable, "-m", "llama_cpp.server"]),
            "--model", str(model_file),
            "--model_alias", self.model,
            "--host", self.host,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--logits_all", "true",
        ]  # fmt: skip
        threads = str(
            self.n_threads or os.cpu_count() or 1
        )  # llama_cpp.server's default decodes on half the cores
        command += ["--n_threads", threads, "--n_threads_batch", threads]
        return command

    def _spawn(self) -> None:
        if self.running:
            return
        if self.launcher is None and not llama_cpp_available():
            raise LocalServerError(
                "llama-cpp-python with its server is not installed: pip install 'ruwikibench[local]' "
                "(compiles llama.cpp for ~6 minutes; see docs/models.md for CMAKE_ARGS that shorten it)"
            )
        model_file = self.model_file or ensure_model(self.model)
        if self.port is None:
            self.port = free_port(self.host)
        logs = cache_root() / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.log_path = logs / f"llama-server-{self.model}-{self.port}.log"
        self._log = self.log_path.open("wb")
        command, log = self.command(model_file), self._log
        linux = sys.platform.startswith("linux")
        self.process = _SPAWNER.run(
            lambda: subprocess.Popen(
                command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=_die_with_parent if linux else None,  # noqa: PLW1509 — from the spawner thread
            )
        )
        _LIVE.add(self)

    def exit_line(self, when: str = "") -> str | None:
        """None while the process runs (or was never started); else one line: how it ended and its log, with a
        hint when the log shows a llama.cpp build with Intel AMX kernels that died of a fault."""
        process = self.process
        if process is None or process.poll() is None:
            return None
        code = process.returncode
        hint = ""
        if code in (-signal.SIGSEGV, -signal.SIGILL, -signal.SIGBUS) and "AMX_INT8 = 1" in self.log_tail(400):
            hint = (
                " (this llama.cpp build uses Intel AMX kernels: rebuild llama-cpp-python with the README's "
                "CMAKE_ARGS, -DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)"
            )
        return (
            f"llama.cpp server for {self.model} (pid {process.pid}, port {self.port}) exited with "
            f"{describe_exit(code)}{when}; log {self.log_path}{hint}"
        )

    def _check_alive(self) -> None:
        assert self.process is not None
        line = self.exit_line(" while starting")
        if line is not None:
            self._close_log()
            last = self.log_tail(1).strip()
            raise LocalServerError(line + (f"; its last line: {last}" if last else ""))

    def _exited_within(self, seconds: float, when: str) -> str | None:
        """:meth:`exit_line` once the process has ended, waiting up to ``seconds`` for it (a dropped
        connection comes a moment before the exit status)."""
        process = self.process
        if process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(seconds)
        return self.exit_line(when)

    def _probe(self) -> None:
        """One short chat completion within ``probe_timeout``: a server that dies or hangs on it is stopped
        and reported in one line (exit code or signal, log)."""
        body = {"model": self.model, **PROBE}
        try:
            with httpx.Client(timeout=self.probe_timeout) as client:
                response = client.post(f"{self.base_url}/chat/completions", json=body)
            response.raise_for_status()
            if not response.json().get("choices"):
                raise ValueError(f"no choices in {response.text[:200]!r}")
        except httpx.TimeoutException:
            self.stop()
            raise LocalServerError(
                f"llama.cpp server for {self.model} answers {self.base_url}/models but not a one-token chat "
                f"completion within {self.probe_timeout:.0f}s (local_server.probe_timeout); stopped; "
                f"log {self.log_path}"
            ) from None
        except (httpx.HTTPError, ValueError) as exc:
            line = self._exited_within(2.0, " on its first chat completion")
            self.stop()
            if line is not None:
                raise LocalServerError(line) from None
            raise LocalServerError(
                f"llama.cpp server for {self.model} failed its first chat completion: "
                f"{type(exc).__name__}: {exc}; stopped; log {self.log_path}"
            ) from None

    def _timed_out(self) -> LocalServerError:
        tail = self.log_tail()
        self.stop()
        return LocalServerError(
            f"llama.cpp server for {self.model} did not answer {self.base_url}/models within "
            f"{self.startup_timeout:.0f}s; log {self.log_path}:\n{tail}"
        )

    def start(self) -> Self:
        """Start the server (if not running) and block until it answers."""
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        with httpx.Client(timeout=2.0) as client:
            while True:
                self._check_alive()
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.base_url}/models").status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise self._timed_out()
                time.sleep(0.25)
        self._probe()
        return self

    async def astart(self) -> Self:
        """Async :meth:`start` (the process is spawned in the calling thread, the wait does not block)."""
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                self._check_alive()
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{self.base_url}/models")).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise self._timed_out()
                await asyncio.sleep(0.25)
        await asyncio.to_thread(self._probe)
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after ``timeout`` seconds)."""
        process, self.process = self.process, None
        _LIVE.discard(self)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout)
        self._close_log()

    async def astop(self) -> None:
        await asyncio.to_thread(self.stop)

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, lines: int = 20) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await self.astart()

    async def __aexit__(self, *exc: object) -> None:
        await self.astop()


_LIVE: set[LocalServer] = set()
_SHARED: dict[str, tuple[LocalServer, int]] = {}
_SHARED_LOCK = threading.Lock()


def acquire_server(model: str = DEFAULT_LOCAL_MODEL, **options: object) -> LocalServer:
    """The process-wide server of ``model``, started on first use; pair with :func:`release_server`."""
    with _SHARED_LOCK:
        server, users = _SHARED.get(model, (None, 0))
        if server is None or not server.running:
            server = LocalServer(model, **options).start()  # type: ignore[arg-type]
            users = 0
        _SHARED[model] = (server, users + 1)
        return server


def release_server(server: LocalServer) -> None:
    """Drop one user of a shared server; the last one stops it. Servers not shared are stopped at once."""
    with _SHARED_LOCK:
        shared, users = _SHARED.get(server.model, (None, 0))
        if shared is not server:
            server.stop()
            return
        if users <= 1:
            del _SHARED[server.model]
            server.stop()
        else:
            _SHARED[server.model] = (server, users - 1)


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop(timeout=5.0)
