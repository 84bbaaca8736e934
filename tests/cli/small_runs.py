"""Two small benchmark runs through the CLI against the fake OpenAI endpoint (tests/cli/fake_openai.py): the
writer fixture's three articles, configs 'base' (outline description mode) and 'direct' (direct mode)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.prompts import PromptLibrary
from tests.fake_openai import fake_openai_server
from tests.graphs.writer_fixture import TAG, FakeWriterModel, HashEmbedder, _fragments, make_dataset

runner = CliRunner()
WRITE = [
    _fragments(PromptLibrary().get(f"ru/{name}.txt").text) for name in ("section_write", "section_write_lead")
]


class BenchModel(FakeWriterModel):
    """The writer fixture's answers, plus the benchmark's section-write prompts; counts requests."""

    def __init__(self) -> None:
        super().__init__(make_dataset())
        self.requests = 0

    def __call__(self, messages):
        self.requests += 1
        prompt = messages[-1]["content"]
        if any(parts and all(p in prompt for p in parts) for parts in WRITE):
            return "Раздел о теме: " + " ".join(sorted(set(TAG.findall(prompt)))) + "."
        return super().__call__(messages)


@contextmanager
def fake_setup(tmp_path: Path, monkeypatch) -> Iterator[tuple[Path, list[Path], BenchModel]]:
    """The dataset in tmp_path/data, the two configs, the fake model (served while the block runs)."""
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    save_dataset(make_dataset(), tmp_path / "data")
    model = BenchModel()
    with fake_openai_server(model) as url:
        endpoint = {"name": "fake", "endpoints": [url], "max_retries": 0, "timeout": 20}
        configs = []
        for name, mode in (("base", "description"), ("direct", "direct")):
            config = {
                "name": name,
                "models": {"writer": endpoint},
                "cache_dir": str(tmp_path / "cache"),
                "ranking": {"query_mode": "generated"},
                "outline": {"mode": mode},
                "max_concurrency": 2,
            }
            path = tmp_path / f"{name}.yaml"
            path.write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
            configs.append(path)
        yield tmp_path, configs, model


def run_all(tmp: Path, config: Path) -> str:
    """`ruwikibench run all` with ``config``; returns the run directory it printed."""
    result = runner.invoke(
        app,
        ["run", "all", "--dataset", str(tmp / "data"), "--config", str(config), "--out", str(tmp / "runs")],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output.split("run directory: ")[1].split()[0]
