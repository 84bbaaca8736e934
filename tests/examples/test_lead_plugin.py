"""The example plug-in package examples/rwb_lead installed for real (`pip install --target`, its entry point
in the installed dist-info), its `lead` stage run by `ruwikibench run stage lead` in a new process against the
fake OpenAI-compatible endpoint, with its own options and model role."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.evaluators.lexical import rouge_l
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TITLE, FakeWriterModel, make_dataset

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rwb_lead"
ASK = "Напиши вводный абзац энциклопедической статьи"
ANSWER = "ЗОЛОТО преамбула о городе."


class Model(FakeWriterModel):
    """Answers the lead prompt (and counts the snippets it shows); the writer fixture's answers otherwise."""

    def __init__(self) -> None:
        super().__init__(make_dataset())
        self.shown: list[int] = []
        self.models: list[str] = []

    def __call__(self, messages):
        prompt = messages[-1]["content"]
        if ASK in prompt:
            self.shown.append(prompt.count("\n[") + prompt.startswith("["))
            return f"# {TITLE}\n{ANSWER}"
        return super().__call__(messages)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The package installed into a folder of its own (the shared environment is not changed), built from a
    copy (a build writes build/ and *.egg-info next to the sources; the checkout stays clean)."""
    target, build = tmp_path_factory.mktemp("site"), tmp_path_factory.mktemp("build")
    source = build / "rwb_lead"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--quiet",
            "--target",
            str(target),
            str(source),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TMPDIR": str(build)},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (target / "rwb_lead-0.1.0.dist-info" / "entry_points.txt").is_file()
    yield target


def cli(*args: str, site: Path, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)]), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "ruwikibench", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=tmp,
    )


def _config(tmp: Path, url: str, name: str, **extra: object) -> Path:
    model = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 60}
    data = {
        "name": name,
        "models": {"writer": model, "lead": {**model, "name": "lead-model"}},
        "cache_dir": str(tmp / "cache"),
        "stages": ["lead"],
        **extra,
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return path


def _run_dir(result: subprocess.CompletedProcess) -> Path:
    assert result.returncode == 0, result.stdout + result.stderr
    return Path(result.stdout.split("run directory: ")[1].split()[0])


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_installed_lead_stage_runs_with_its_options_and_role(installed: Path, tmp_path: Path) -> None:
    listed = cli("stages", site=installed, tmp=tmp_path)
    assert listed.returncode == 0 and "rwb_lead.stage" in listed.stdout, listed.stdout + listed.stderr
    save_dataset(make_dataset(), tmp_path / "data")
    model = Model()
    common = ["--dataset", str(tmp_path / "data"), "--article", TITLE, "--out", str(tmp_path / "runs")]
    with fake_openai_server(model) as url:
        first = cli(
            "run",
            "stage",
            "lead",
            "--config",
            str(_config(tmp_path, url, "a")),
            *common,
            site=installed,
            tmp=tmp_path,
        )
        default = _run_dir(first)
        one = _config(tmp_path, url, "a", stage_options={"lead": {"top_k": 1}})
        single = _run_dir(
            cli("run", "stage", "lead", "--config", str(one), *common, site=installed, tmp=tmp_path)
        )
        bad = _config(tmp_path, url, "a", stage_options={"lead": {"top_k": "many"}})
        refused = cli("run", "stage", "lead", "--config", str(bad), *common, site=installed, tmp=tmp_path)
    assert model.shown == [3, 1]  # the option reached the node
    assert single != default  # two option values, two run directories
    assert (
        refused.returncode == 2
        and "stage_options.lead.top_k: Input should be a valid integer" in refused.stderr
    )

    reference = make_dataset().article(TITLE).root.text()
    result = _lines(default / "results.jsonl")[0]
    assert (
        result["metrics"]["rouge_l"] == pytest.approx(rouge_l(ANSWER, reference)["f"])
        and result["metrics"]["rouge_l"] > 0
    )
    assert len(result["info"]["picked"]) == 3
    metrics = json.loads((default / "metrics.json").read_text(encoding="utf-8"))
    assert metrics["lead"]["metrics"]["rouge_l"]["failures_excluded"]["mean"] == pytest.approx(
        result["metrics"]["rouge_l"]
    )
    assert {n["node"] for n in _lines(default / "nodes.jsonl")} == {"pick", "write"}

    spec = json.loads((default / "spec.json").read_text(encoding="utf-8"))
    identity = spec["stage_identity"]["lead"]
    assert identity["code"]["distribution"] == "rwb-lead" and identity["code"]["version"] == "0.1.0"
    assert Path(identity["code"]["file"]).resolve() == (installed / "rwb_lead" / "stage.py").resolve()
    assert identity["options"] == {
        "top_k": 3,
        "snippet_chars": 600,
        "max_tokens": 300,
        "prompt": "rwb_lead:prompts/lead.txt",
    }
    assert list(identity["prompts"]) == ["rwb_lead:prompts/lead.txt"]
    assert spec["prompts"]["rwb_lead:prompts/lead.txt"] == identity["prompts"]["rwb_lead:prompts/lead.txt"]
    usage = spec["last_session"]["llm"]
    assert usage["lead"]["calls"] == 1 and "writer" not in usage  # the stage's own role answered

    # the stage's own description titles its table: console, report.md, report.html (no "paper - layout", no
    # "()")
    title = "lead (the lead written from the snippets that best match the title, ROUGE-L"
    assert "the lead written from the snippets" in first.stdout and "paper - layout" not in first.stdout
    report = cli(
        "report", str(default), str(single), "--out", str(tmp_path / "cmp"), site=installed, tmp=tmp_path
    )
    assert report.returncode == 0, report.stdout + report.stderr
    assert "the lead written from the snippets" in report.stdout
    md = (tmp_path / "cmp" / "report.md").read_text(encoding="utf-8")
    assert f"## {title})" in md and "()" not in md
    assert (default / "report.md").read_text(encoding="utf-8").count(f"## {title}; ×100") == 1
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert '<h2 id="stage-lead">lead <span class="note">(the lead written from the snippets' in page
