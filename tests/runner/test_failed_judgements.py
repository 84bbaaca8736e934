"""Failed relevance judgements (request errors, answers neither yes nor no) are counted in metrics.json, the
report and the console, and asked again when the run resumes, until the run equals a fault-free one."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ruwikibench.models.cache import ResponseCache
from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.runner.execute import RunOptions, execute
from tests.retrieval.synthetic import article_of_prompt, make_context, make_dataset

DATASET = make_dataset()


def _faulty(faults: bool):
    def respond(messages):
        prompt = messages[-1]["content"]
        if faults:
            kind = int(hashlib.md5(prompt.encode()).hexdigest(), 16) % 4
            if kind == 0:
                raise ConnectionError("endpoint down")
            if kind == 1:
                return "не знаю"  # neither yes nor no
        title, article = article_of_prompt(DATASET, prompt)
        return yes_no_completion(0.97 if DATASET.article(title).name == article else 0.03)

    return respond


async def _run(tmp_path: Path, faults: bool, run_id: str) -> tuple[dict, ScriptedChat]:
    chat = ScriptedChat(_faulty(faults))
    context = make_context(DATASET, {"ranking": chat}, tmp_path, query_mode="title")
    context.llm.cache = ResponseCache(tmp_path / f"{run_id}.sqlite")
    options = RunOptions(stages=["ranking"], out=tmp_path / "runs", run_id=run_id, progress=False, retries=0)
    rundir = await execute(context, "mem", options)
    return json.loads(rundir.file("metrics.json").read_text())["ranking"], chat


async def test_failed_judgements_counted_then_retried_on_resume(tmp_path: Path) -> None:
    clean, clean_chat = await _run(tmp_path, faults=False, run_id="clean")
    total = len(clean_chat.calls)
    assert clean["counts"]["judgements"] == total and clean["counts"]["failed_judgements"] == 0

    faulty, _ = await _run(tmp_path, faults=True, run_id="r")
    counts = faulty["counts"]
    sources = counts["judgement_sources"]
    assert counts["judgements"] == total and sources["error"] > 0 and sources["unparseable"] > 0
    assert counts["failed_judgements"] == sources["error"] + sources["unparseable"]
    report = (tmp_path / "runs" / "r" / "report.md").read_text()
    assert (
        f"LLM judgements: {total}, failed {counts['failed_judgements']} (error {sources['error']}, "
        f"unparseable {sources['unparseable']}; asked again when the run resumes)" in report
    )

    resumed, second = await _run(tmp_path, faults=False, run_id="r")
    assert len(second.calls) == counts["failed_judgements"]  # only the failed ones are asked again
    assert (
        resumed["counts"]["failed_judgements"] == 0
        and "asked again" not in (tmp_path / "runs" / "r" / "report.md").read_text()
    )
    assert resumed["metrics"] == clean["metrics"] and resumed["counts"] == clean["counts"]

    _, third = await _run(tmp_path, faults=False, run_id="r")
    assert third.calls == []  # nothing left to retry


def test_intervals_do_not_depend_on_the_order_units_finished() -> None:
    import random

    from ruwikibench.aggregation.metrics import aggregate

    rng = random.Random(3)
    results = [
        {"stage": "s", "article": f"a{i}", "item": "article", "metrics": {"m": rng.random()}}
        for i in range(30)
    ]
    errors = [{"stage": "s", "article": f"f{i}", "unit": "article", "reason": "x"} for i in range(3)]
    first = aggregate(results, errors)
    for _ in range(3):
        rng.shuffle(results)
        rng.shuffle(errors)
        assert aggregate(results, errors) == first
