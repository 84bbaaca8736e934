"""The local llama.cpp server: llama-cpp-python's OpenAI-compatible server on 127.0.0.1 with a bundled GGUF.

``LocalServer`` starts ``python -m llama_cpp.server --model F --host 127.0.0.1 --port P --n_ctx 4096
--logits_all true`` (a free port unless given), waits until ``/v1/models`` answers, and stops the process on
exit — as a context manager (``with`` / ``async with``), by :meth:`stop`, and at interpreter exit. The server
process also dies with its parent (Linux ``PR_SET_PDEATHSIG``, when started from the main thread). Its output goes to
``<cache>/logs/llama-server-<model>-<port>.log``; a start that fails quotes the log's tail.

:func:`acquire_server` / :func:`release_server` share one server per local model inside a process
(:meth:`LLM.from_config` uses them, so every role that names the local model talks to the same server).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Self

import httpx

from ruwikibench.models.local_assets import DEFAULT_LOCAL_MODEL, cache_root, ensure_model, local_model

RESERVED_PORTS = frozenset({8081})  # the shared development server


class LocalServerError(RuntimeError):
    pass


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

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _pdeathsig_safe() -> bool:
    """PR_SET_PDEATHSIG fires when the spawning *thread* ends: use it only from the main thread on Linux."""
    return sys.platform.startswith("linux") and threading.current_thread() is threading.main_thread()


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
        model_file: Path | None = None,
    ) -> None:
        local_model(model)  # validates the name
        self.model = model
        self.host = host
        self.port = port
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = startup_timeout
        self.model_file = model_file
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
            sys.executable, "-m", "llama_cpp.server",
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
        if not llama_cpp_available():
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
        self.process = subprocess.Popen(
            self.command(model_file),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent if _pdeathsig_safe() else None,  # noqa: PLW1509 — main thread only
        )
        _LIVE.add(self)

    def _check_alive(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            code = self.process.returncode
            self._close_log()
            raise LocalServerError(
                f"llama.cpp server for {self.model} exited with code {code} while starting; "
                f"log {self.log_path}:\n{self.log_tail()}"
            )

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
                        return self
                if time.monotonic() > deadline:
                    raise self._timed_out()
                time.sleep(0.25)

    async def astart(self) -> Self:
        """Async :meth:`start` (the process is spawned in the calling thread, the wait does not block)."""
        self._spawn()
        deadline = time.monotonic() + self.startup_timeout
        async with httpx.AsyncClient(timeout=2.0) as client:
            while True:
                self._check_alive()
                with contextlib.suppress(httpx.HTTPError):
                    if (await client.get(f"{self.base_url}/models")).status_code == 200:
                        return self
                if time.monotonic() > deadline:
                    raise self._timed_out()
                await asyncio.sleep(0.25)

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
