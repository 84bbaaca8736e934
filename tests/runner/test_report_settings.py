"""The settings table of compared runs: one row per setting the runs differ in, one column per run, grouped;
the roles' equal model fields merged into one row; settings equal in every run kept apart (report.md: a folded
list, report.html: a <details> toggle); long values shortened in HTML with the whole value on hover."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ruwikibench.reporting.compare import compare_runs
from ruwikibench.reporting.settings import SHORT_VALUE, settings_table
from ruwikibench.storage.rundir import RunDir

LONG = "ru/" + "очень_длинный_путь_" * 4 + ".txt"


def _model(name: str) -> dict[str, Any]:
    return {"name": name, "temperature": 0.01, "max_tokens": 400}


def _spec(name: str, model: str, query_mode: str, prompt: str) -> dict[str, Any]:
    return {
        "dataset": {"id": "d1"},
        "config": {
            "name": name,
            "models": {role: _model(model) for role in ("writer", "query", "ranking")},
            "ranking": {"query_mode": query_mode, "pool_ratio": 3, "prompt_relevance": prompt},
            "stages": ["ranking"],
            "cache_dir": f"/tmp/{name}",
        },
        "options": {"stages": ["ranking"], "out": f"runs-{name}", "run_id": None},
        "overrides": {"ranking.judge": {"sha256": "ab" * 32}},
    }


def _run(tmp: Path, name: str, **spec: Any) -> Path:
    path = tmp / name
    path.mkdir()
    (path / "spec.json").write_text(json.dumps(_spec(name, **spec), ensure_ascii=False), encoding="utf-8")
    (path / "metrics.json").write_text("{}", encoding="utf-8")
    return path


def _two_runs(tmp: Path) -> list[Path]:
    return [
        _run(tmp, "local", model="qwen-1.5b", query_mode="generated", prompt="ru/relevance.txt"),
        _run(tmp, "fake", model="fake", query_mode="reference", prompt=LONG),
    ]


def test_rows_are_the_differing_settings_grouped_with_the_roles_merged(tmp_path: Path) -> None:
    table = settings_table([(p.name, {}, RunDir(p)) for p in _two_runs(tmp_path)])
    assert table.runs == ["local", "fake"]
    assert [(r.group, r.key, r.values) for r in table.differing] == [
        ("models", "models.*.name", ["qwen-1.5b", "fake"]),  # three roles, one row
        ("stage options", "ranking.query_mode", ["generated", "reference"]),
        ("prompts", "ranking.prompt_relevance", ["ru/relevance.txt", LONG]),
        ("other", "name", ["local", "fake"]),
    ]
    same = {r.key: r.values for r in table.same}
    assert same["models.*.temperature"] == ["0.01", "0.01"] and same["ranking.pool_ratio"] == ["3", "3"]
    assert (
        same["override.ranking.judge.sha256"] == ["abababababab"] * 2
        and same["stages"] == ['["ranking"]'] * 2
    )
    assert not any(r.key.startswith(("cache_dir", "options.out", "options.run_id")) for r in table.same)


def test_report_md_and_html_show_the_same_rows(tmp_path: Path) -> None:
    compare_runs(_two_runs(tmp_path), tmp_path / "cmp")
    md = (tmp_path / "cmp" / "report.md").read_text(encoding="utf-8")
    assert "| setting | local | fake |" in md and "| **stage options** |  |  |" in md
    assert "| `ranking.query_mode` | generated | reference |" in md
    assert "| `models.*.name` | qwen-1.5b | fake |" in md and "models.writer.name" not in md
    assert "<details><summary>9 settings equal in all runs (whole values in settings.csv)</summary>" in md
    assert '- stage options: `ranking.pool_ratio`=3; `stages`=["ranking"]' in md
    csv_text = (tmp_path / "cmp" / "settings.csv").read_text(encoding="utf-8")
    assert LONG in csv_text  # whole there
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    block = page.split('<h3 id="settings">')[1].split("<h2")[0]
    assert '<th colspan="3" scope="rowgroup">stage options</th>' in block
    assert '<th scope="row"><code>ranking.query_mode</code></th><td>generated</td><td>reference</td>' in block
    assert f'<td title="{LONG}">{LONG[: SHORT_VALUE - 1]}…</td>' in block  # shortened, whole on hover
    assert '<details class="settings-same"><summary>9 settings equal in all runs</summary>' in block
    assert block.index("ranking.pool_ratio") > block.index("<details")  # equal settings behind the toggle


def test_one_run_lists_its_settings_as_equal(tmp_path: Path) -> None:
    table = settings_table([(p.name, {}, RunDir(p)) for p in _two_runs(tmp_path)[:1]])
    assert table.differing == [] and {"ranking.query_mode", "models.*.name"} <= {r.key for r in table.same}
    assert "The runs differ in" not in "\n".join(table.markdown())
