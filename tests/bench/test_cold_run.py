"""bench/cold_run.py's per-unit and per-snippet figures: the units of the run directory a run made (not of
older ones), and the snippets of the articles run."""

from __future__ import annotations

from pathlib import Path

from bench.cold_run import snippets_of, units_of
from tests.sample import sample_dataset_or_skip, sample_json_or_skip


def _rundir(runs: Path, name: str, rows: int) -> Path:
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text("".join(f'{{"unit": "u{i}"}}\n' for i in range(rows)) + "\n")
    return folder


def test_units_counts_only_the_new_run_directory(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert units_of(runs, set()) == 0  # no runs folder yet
    old = _rundir(runs, "bench-old", 5)
    _rundir(runs, "bench-new", 11)
    assert units_of(runs, {old}) == 11
    assert units_of(runs, {old, runs / "bench-new"}) == 0  # the run reused its directory


def test_snippets_of_the_articles_run(monkeypatch, tmp_path: Path) -> None:
    dataset = sample_dataset_or_skip()
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path))
    names = [article.name for article in dataset.articles[:2]]
    expected = sum(1 for snippet in dataset.snippets if snippet.article in names)
    assert expected > 0
    assert snippets_of(str(sample_json_or_skip()), names) == expected
