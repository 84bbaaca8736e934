"""End to end through the CLI and the real OpenAI-compatible client, against a tiny server on 127.0.0.1."""

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from tests.evaluators.judges.helpers import section, write_run
from tests.fake_openai import fake_openai_server


def reply(prompt: str) -> str:
    if "### Критерий оценки:" in prompt:
        return "[FEEDBACK] Ошибок нет. [RESULT] 2 [END]" if "Грамотность" in prompt else "[RESULT] 0 [END]"
    first = prompt.split("[Начало ответа ассистента A]\n", 1)[1]
    return "[[4 8]]" if first.startswith("Короткий") else "[[8 4]]"  # prefers the longer text, in both orders


@pytest.fixture
def endpoint() -> Iterator[str]:
    with fake_openai_server(lambda messages: reply(messages[-1]["content"])) as url:
        yield url


def test_criteria_and_pairwise_commands(tmp_path: Path, endpoint: str) -> None:
    config = {
        "name": "t",
        "models": {"judge": {"name": "served-judge", "endpoints": [endpoint], "max_retries": 0}},
    }
    texts_a = [section(f"s{i}", "Короткий текст.") for i in range(3)]
    texts_b = [section(f"s{i}", "Длинный текст, " + "много слов " * 20) for i in range(3)]
    run_a = write_run(tmp_path / "a", "run-a", texts_a, config=config)
    run_b = write_run(tmp_path / "b", "run-b", texts_b, config=None)
    runner = CliRunner()

    result = runner.invoke(app, ["judge", "criteria", str(run_a), "--only", "literacy", "--only", "refusal"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (run_a / "judge_criteria.jsonl").read_text().splitlines()]
    assert len(records) == 6 and {r["judge"] for r in records} == {"served-judge"}
    assert {(r["criterion"], r["score"]) for r in records} == {("literacy", 2), ("refusal", 0)}
    assert "overall" in result.output

    # run B records no config: the judge comes from --judge-config
    result = runner.invoke(app, ["judge", "criteria", str(run_b), "--only", "literacy"])
    assert result.exit_code == 2 and "pass --judge-config" in result.output
    cfg = tmp_path / "judge.yaml"
    cfg.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    result = runner.invoke(
        app, ["judge", "criteria", str(run_b), "--only", "literacy", "--judge-config", str(cfg)]
    )
    assert result.exit_code == 0, result.output

    result = runner.invoke(app, ["judge", "pairwise", str(run_a), str(run_b), "--order", "both"])
    assert result.exit_code == 0, result.output
    summary = json.loads((run_b / "judge_pairwise_run-a_vs_run-b.json").read_text())
    assert summary["delta"]["mean"] == 4.0 and summary["position_consistency"] == 1.0
    assert (run_b / "judge_pairwise_run-a_vs_run-b.png").exists()

    # --reference RUN_B makes B the reference: results go to A's folder, delta A − B
    result = runner.invoke(
        app, ["judge", "pairwise", str(run_a), str(run_b), "--reference", "run-b", "--judge-config", str(cfg)]
    )
    assert result.exit_code == 0, result.output
    swapped = json.loads((run_a / "judge_pairwise_run-b_vs_run-a.json").read_text())
    assert swapped["delta"]["mean"] == -4.0 and swapped["reference_run"] == "run-b"

    result = runner.invoke(app, ["judge", "pairwise", str(run_a), str(run_b), "--reference", "run-c"])
    assert result.exit_code == 2 and "neither RUN_A" in result.output


def test_the_judge_config_chooses_the_criteria_prompt(tmp_path: Path) -> None:
    """`judges.criteria_prompt` of the judge config (in its prompts_dir) is the prompt the judge is sent."""
    seen: list[str] = []
    (tmp_path / "prompts" / "my").mkdir(parents=True)
    (tmp_path / "prompts" / "my" / "criteria.txt").write_text(
        "МОЙ ПРОМПТ {criterion}: {answer}\n### Критерий оценки:", encoding="utf-8"
    )
    with fake_openai_server(
        lambda messages: seen.append(messages[-1]["content"]) or "[RESULT] 1 [END]"
    ) as url:
        config = {
            "name": "j",
            "prompts_dir": "prompts",
            "cache_dir": str(tmp_path / "cache"),
            "models": {"judge": {"name": "served-judge", "endpoints": [url], "max_retries": 0}},
            "judges": {"criteria_prompt": "my/criteria.txt"},
        }
        (tmp_path / "judge.yaml").write_text(json.dumps(config), encoding="utf-8")
        run = write_run(tmp_path / "run", "r", [section("s1", "Короткий текст.")])
        result = CliRunner().invoke(
            app,
            [
                "judge",
                "criteria",
                str(run),
                "--judge-config",
                str(tmp_path / "judge.yaml"),
                "--only",
                "literacy",
            ],
        )
    assert result.exit_code == 0, result.output
    assert seen and all(prompt.startswith("МОЙ ПРОМПТ") for prompt in seen)
