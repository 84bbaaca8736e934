"""`ruwikibench check-metrics` through the CLI on the real sample: exit 0 when the headline metrics pass the
ladder, 1 when one fails (random vectors through the config; a bag-of-words embedder on the outline), 2 on
unusable options. Cheap embedders only: the ladder with real encoders is tests/validity/test_check.py."""

from __future__ import annotations

from pathlib import Path

import yaml
from typer.testing import CliRunner

from ruwikibench.cli import app
from tests.graphs.writer_fixture import HashEmbedder
from tests.sample import sample_json_or_skip

runner = CliRunner()
RANDOM = {
    "kind": "langchain",
    "name": "langchain_core.embeddings:DeterministicFakeEmbedding",
    "options": {"size": 256},
}


def _args(tmp_path: Path, embedder: dict | None = None) -> list[str]:
    config = tmp_path / "c.yaml"
    body = {
        "name": "c",
        "models": {"writer": {"name": "fake"}},
        **({"embedder": embedder} if embedder else {}),
    }
    config.write_text(yaml.safe_dump(body), encoding="utf-8")
    return [
        "check-metrics",
        "--dataset",
        str(sample_json_or_skip()),
        "--config",
        str(config),
        "--articles",
        "4",
    ]


def _verdicts(output: str) -> dict[str, str]:
    rows = [line.split("│") for line in output.splitlines() if line.count("│") > 8]
    return {
        f"{r[1].strip()}/{r[2].strip()}": r[-2].strip()
        for r in rows
        if r[1].strip() in ("outline", "sections")
        and any(v in r[-2] for v in ("PASS", "FAIL", "cannot decide"))
    }


def test_random_vectors_fail_with_exit_code_1(tmp_path) -> None:
    result = runner.invoke(app, [*_args(tmp_path, RANDOM), "--stage", "sections"], terminal_width=400)
    assert result.exit_code == 1, result.output + repr(result.exception)
    assert "embedder langchain:langchain_core.embeddings:DeterministicFakeEmbedding" in result.output
    verdicts = {
        k: v for k, v in _verdicts(result.output).items() if "/entity_" not in k
    }  # the NER: no embedder
    assert set(verdicts) == {"sections/p", "sections/r", "sections/f1 *"}
    assert all(v.startswith("FAIL") for v in verdicts.values())
    assert "Headline metrics failing: sections/f1" in " ".join(result.output.split())


def test_exit_code_follows_the_headline_verdicts(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    args = _args(tmp_path)
    sections = runner.invoke(app, [*args, "--stage", "sections"], terminal_width=400)
    assert sections.exit_code == 0, sections.output + repr(sections.exception)
    assert _verdicts(sections.output)["sections/f1 *"] == "PASS"
    assert "Every headline metric passes" in sections.output
    # word overlap cannot tell a section's opening words from its heading: the outline ladder fails
    outline = runner.invoke(app, [*args, "--stage", "outline", "--articles", "8"], terminal_width=400)
    assert outline.exit_code == 1, outline.output
    assert _verdicts(outline.output)["outline/f1 *"].startswith("FAIL: ")


def test_structure_rung_decides_the_exit_code_too(tmp_path, monkeypatch) -> None:
    """The outline's structure rung is printed after the ladder; structure F1 failing it (random vectors)
    exits 1 on its own, and a bag-of-words embedder, which matches a restated heading («история») to its
    heading («История») by its words, passes it."""
    eight = ["--stage", "outline", "--articles", "8"]
    random_run = runner.invoke(app, [*_args(tmp_path, RANDOM), *eight], terminal_width=400)
    assert random_run.exit_code == 1, random_run.output + repr(random_run.exception)
    verdicts = _verdicts(random_run.output)
    assert verdicts["outline/structure_f1"].startswith("FAIL: ")
    assert verdicts["outline/f1"].startswith("not required (FAIL")  # heading F1: blind to the rung
    assert "Structure metrics failing: outline/structure_f1" in " ".join(random_run.output.split())
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    words = runner.invoke(app, [*_args(tmp_path), *eight], terminal_width=400)
    assert _verdicts(words.output)["outline/structure_f1"] == "PASS", words.output
    assert "Every structure metric passes" in words.output


def test_a_structure_rung_of_too_few_articles_cannot_decide(tmp_path) -> None:
    """4 articles: random vectors no longer FAIL the structure rung (exit 1), it cannot decide (exit 4)."""
    result = runner.invoke(app, [*_args(tmp_path, RANDOM), "--stage", "outline"], terminal_width=400)
    assert result.exit_code == 4, result.output + repr(result.exception)
    assert _verdicts(result.output)["outline/structure_f1"].startswith("cannot decide: 4 items")
    assert "Structure metrics that cannot be decided: outline/structure_f1 (4 items" in " ".join(
        result.output.split()
    )


def test_bad_options_exit_2(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    args = _args(tmp_path)
    bad = runner.invoke(app, [*args, "--stage", "ranking"])
    assert bad.exit_code != 0 and "outline or sections" in bad.output
    few = runner.invoke(app, [*args, "--stage", "sections", "--sentences", "3"])
    assert few.exit_code == 2 and "at least 4" in few.output
