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


def _plugin_run(tmp: Path, name: str, code_sha: str, prompt_sha: str, overrides: dict[str, str]) -> Path:
    """A run of a plug-in stage 'lead' (its code and declared prompt in spec.json's stage_identity)."""
    path = tmp / name
    path.mkdir()
    spec = {
        "dataset": {"id": "d1"},
        "config": {"name": "lead", "stages": ["lead"], "overrides": overrides},
        "options": {"stages": ["lead"]},
        "stage_identity": {
            "lead": {
                "code": {
                    "qualname": "lead_pkg.stage.LeadStage",
                    "file": f"/src/{name}/lead_pkg/stage.py",
                    "sha256": code_sha * 64,
                    "distribution": "lead-pkg",
                    "version": "0.1",
                },
                "prompts": {"lead/ru/lead.txt": prompt_sha * 64},
            }
        },
        "prompts": {"ru/outline_merge.txt": "c" * 64},
    }
    (path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    (path / "metrics.json").write_text("{}", encoding="utf-8")
    return path


def test_two_versions_of_a_plugin_stage_differ_in_code_and_prompt_rows(tmp_path: Path) -> None:
    """Same config, same stage name: only the code and the prompt file changed between the runs."""
    paths = [
        _plugin_run(tmp_path, "v1", "1", "a", {}),
        _plugin_run(tmp_path, "v2", "2", "a", {}),
        _plugin_run(tmp_path, "v3", "2", "b", {}),
    ]
    table = settings_table([(p.name, {}, RunDir(p)) for p in paths])
    rows = {r.key: (r.group, r.values) for r in table.differing}
    code = "{} lead_pkg.stage.LeadStage (lead-pkg 0.1)"
    assert rows["stage_code.lead"] == ("plug-in code", [code.format("1" * 12), *[code.format("2" * 12)] * 2])
    assert rows["prompt_sha256.lead/ru/lead.txt"] == ("prompts", ["a" * 12, "a" * 12, "b" * 12])
    assert {r.key: r.values for r in table.same}["prompt_sha256.ru/outline_merge.txt"] == ["c" * 12] * 3
    page = tmp_path / "cmp"
    compare_runs(paths, page)
    html = (page / "report.html").read_text(encoding="utf-8").split('<h3 id="settings">')[1].split("<h2")[0]
    assert ">plug-in code</th>" in html and f'<td title="{code.format("1" * 12)}">{"1" * 12} lead_pkg' in html


def test_an_override_row_names_the_override_and_is_blank_for_runs_without(tmp_path: Path) -> None:
    """No row 'overrides' showing {} for the runs without overrides and null for the one with them."""
    paths = [
        _plugin_run(tmp_path, "plain", "1", "a", {}),
        _plugin_run(tmp_path, "swapped", "1", "a", {"lead.write": "my_nodes:write"}),
    ]
    table = settings_table([(p.name, {}, RunDir(p)) for p in paths])
    rows = {r.key: (r.group, r.values) for r in table.differing + table.same}
    assert "overrides" not in rows
    assert rows["overrides.lead.write"] == ("overrides", ["—", "my_nodes:write"])
    assert "overrides" not in {r.key for r in settings_table([(paths[0].name, {}, RunDir(paths[0]))]).same}
