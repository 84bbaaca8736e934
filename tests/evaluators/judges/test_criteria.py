import json
import re
from pathlib import Path

import pytest

from ruwikibench.evaluators.judges.common import Limits
from ruwikibench.evaluators.judges.criteria import CriteriaOptions, build_prompt, judge_run
from ruwikibench.evaluators.judges.criteria_records import RESULTS_JSON, RESULTS_JSONL, read_records
from ruwikibench.evaluators.judges.criteria_set import Criterion, load_criteria
from ruwikibench.evaluators.judges.criteria_summary import summarize_judgements
from ruwikibench.evaluators.judges.rundir import load_run
from ruwikibench.evaluators.stats import bootstrap_ci
from ruwikibench.models.cache import ResponseCache
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from tests.evaluators.judges.helpers import fake_llm, section

CRITERIA = load_criteria()


def by_name(name: str) -> Criterion:
    return next(c for c in CRITERIA.criteria if c.name == name)


def test_default_set_follows_pollux_scales() -> None:
    groups = {c.name: c.group for c in CRITERIA.criteria}
    assert [n for n, g in groups.items() if g == "general"] == [
        "formal_compliance",
        "literacy",
        "no_speech_errors",
        "no_repetitions",
        "no_generation_errors",
    ]
    assert [n for n, g in groups.items() if g == "critical"] == ["critical_format", "refusal"]
    assert {"neutral_tone", "source_faithfulness", "topic_coverage", "structure_coherence"} <= set(groups)
    for c in CRITERIA.criteria:
        assert c.scale == ([0, 1] if c.group == "critical" else [0, 1, 2])
        assert all(re.search("[а-я]", text) for text in c.rubric.values())  # Russian rubrics


def test_normalization_and_critical_polarity() -> None:
    literacy, refusal = by_name("literacy"), by_name("refusal")
    assert [literacy.normalize(s) for s in (0, 1, 2)] == [0.0, 0.5, 1.0]
    # POLLUX's critical question asks whether the violation is present: 1 = failure = quality 0
    assert refusal.normalize(1) == 0.0 and refusal.normalize(0) == 1.0


def test_bad_criteria_file_names_file_and_criterion(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "criteria:\n  - name: tone\n    title: Тон\n    group: general\n    description: d\n"
        "    scale: [0, 1, 2]\n    rubric: {0: a, 1: b}\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match=r"bad\.yaml: criterion tone: .*rubric scores \[0, 1\] ≠ scale"):
        load_criteria(bad)
    critical = tmp_path / "critical.yaml"
    critical.write_text(
        "- {name: x, title: X, group: critical, description: d, scale: [0, 1], rubric: {0: a, 1: b}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="critical.yaml: criterion x: .*needs 'failure'"):
        load_criteria(critical)
    with pytest.raises(ValueError, match="unknown criteria"):
        CRITERIA.select(["no_such_criterion"])


def test_prompt_variants_reference_free_and_guided() -> None:
    prompts = PromptLibrary()
    text = section(
        "s1", "Пушкин родился в Москве.", reference="ЭТАЛОН: родился в 1799 году.", sources=["ИСТОЧНИК 1"]
    )
    free = build_prompt(text, by_name("literacy"), CriteriaOptions(mode="free"), prompts)
    guided = build_prompt(text, by_name("literacy"), CriteriaOptions(mode="guided"), prompts)
    faithful = build_prompt(text, by_name("source_faithfulness"), CriteriaOptions(mode="free"), prompts)
    assert "ЭТАЛОН" not in free and "ЭТАЛОН" in guided and "### Эталонный ответ:" in guided
    assert (
        "ИСТОЧНИК 1" not in free and "ИСТОЧНИК 1" in faithful
    )  # sources only where the criterion needs them
    for prompt in (free, guided, faithful):
        assert "Пушкин родился в Москве." in prompt and "[RESULT]" in prompt and "[END]" in prompt
        assert "раздел «Раздел s1» энциклопедической статьи «Пушкин»" in prompt
    assert "0: В тексте две и более ошибки" in free and "Грамотность" in free


def test_long_texts_are_cut_to_the_limits() -> None:
    text = section("s1", "слово " * 5000, sources=["источник " * 3000] * 10)
    options = CriteriaOptions(limits=Limits(text_chars=1000, source_chars=500, sources_chars=1200))
    prompt = build_prompt(text, by_name("source_faithfulness"), options, PromptLibrary())
    assert len(prompt) < 6000 and "[… ещё источников:" in prompt


SCORES = {"Грамотность": "2", "Структура и связность": "1", "Критическое нарушение формата": "0"}


def scripted(prompt: str) -> str:
    """Scores by criterion title; texts containing ПЛОХО get 0 everywhere; one criterion answers without a
    block."""
    criterion = prompt.split("### Критерий оценки:\n", 1)[1].split("\n", 1)[0]
    if criterion == "Отсутствие речевых ошибок":
        return "Речевых ошибок не вижу, текст хороший."  # no [RESULT] block
    bad = "ПЛОХО" in prompt.split("### Ответ для оценки:", 1)[1]
    if criterion == "Отказ от ответа":
        return f"[FEEDBACK] {'Отказ.' if bad else 'Ответ получен.'} [RESULT] {1 if bad else 0} [END]"
    score = "0" if bad else SCORES.get(criterion, "2")
    return f"[FEEDBACK] Обоснование по критерию «{criterion}». [RESULT] {score} [END]"


async def test_judge_run_aggregates_and_counts_unparseable(make_run) -> None:
    texts = [
        section("s1", "Хороший текст."),
        section("s2", "Хороший текст без источников.", sources=[]),
        section("s3", "ПЛОХО"),
    ]
    run = load_run(make_run("run1", texts))
    llm, chat = fake_llm(scripted)
    summary = await judge_run(run, llm, CRITERIA, judge="fake-judge", progress=False)
    records = read_records(run.path / RESULTS_JSONL)
    assert len(records) == 3 * 11 and summary["judged_now"] == 33
    status = {(r.item, r.criterion): r.status for r in records}
    assert status[("s2", "source_faithfulness")] == "not_applicable"  # no sources: no call
    assert status[("s1", "no_speech_errors")] == "unparseable"
    assert len(chat.calls) == 33 - 1
    data = json.loads((run.path / RESULTS_JSON).read_text(encoding="utf-8"))
    (s,) = data["summaries"]
    assert s["statuses"] == {"ok": 29, "unparseable": 3, "not_applicable": 1}
    assert s["texts_with_critical_failure"] == 1
    per = {c["criterion"]: c for c in s["per_criterion"]}
    assert per["refusal"]["failures"] == 1 and per["refusal"]["failed_items"] == ["sections/Пушкин/s3"]
    assert per["structure_coherence"]["distribution"] == {"0": 1, "1": 2}
    assert per["no_speech_errors"]["normalized"]["n"] == 0
    # per-text mean of normalized general + encyclopedic scores, by hand:
    # s1: 8 criteria parsed (5 general − 1 unparseable + 4 encyclopedic), all 1.0 except structure 0.5
    # s2: 7 (no sources criterion), structure 0.5; s3: everything 0
    s1, s2, s3 = (7 + 0.5) / 8, (6 + 0.5) / 7, 0.0
    assert s["overall"]["mean"] == pytest.approx((s1 + s2 + s3) / 3)
    assert s["overall"]["low"] == pytest.approx(bootstrap_ci([s1, s2, s3]).low)
    assert s["overall_without_critical"]["mean"] == pytest.approx((s1 + s2) / 2)


async def test_rerun_resumes_and_rejudges_changed_texts_and_errors(make_run) -> None:
    texts = [section("s1", "Текст один."), section("s2", "Текст два.")]
    path = make_run("run1", texts)
    chosen = CRITERIA.select(["literacy", "neutral_tone"])
    llm, chat = fake_llm(scripted)
    await judge_run(load_run(path), llm, chosen, judge="fake-judge", progress=False)
    assert len(chat.calls) == 4
    await judge_run(load_run(path), llm, chosen, judge="fake-judge", progress=False)
    assert len(chat.calls) == 4  # nothing left to judge

    # a changed text is judged again; an interrupted write (truncated last line) is dropped and redone
    texts[1] = section("s2", "Текст два, исправленный.")
    make_run("run1", texts)
    with (path / RESULTS_JSONL).open("a", encoding="utf-8") as handle:
        handle.write('{"stage": "sections", "article": "Пу')
    await judge_run(load_run(path), llm, chosen, judge="fake-judge", progress=False)
    assert len(chat.calls) == 6

    # transport errors are recorded, counted, and retried on the next run
    def failing(prompt: str) -> str:
        raise ConnectionError("endpoint down")

    llm_down, _ = fake_llm(failing)
    await judge_run(load_run(path), llm_down, chosen, judge="other-judge", progress=False)
    rows = summarize_judgements(path)
    other = [r for r in rows if r["judge"] == "other-judge"]
    assert {r["errors"] for r in other if r["group"] != "all"} == {"2"}
    await judge_run(load_run(path), llm, chosen, judge="other-judge", progress=False)
    assert len(chat.calls) == 10
    assert all(r["errors"] == "0" for r in summarize_judgements(path))


async def test_retry_unparseable_option(make_run) -> None:
    path = make_run("run1", [section("s1", "Текст.")])
    chosen = CRITERIA.select(["no_speech_errors"])
    llm, chat = fake_llm(scripted)
    await judge_run(load_run(path), llm, chosen, judge="j", progress=False)
    await judge_run(load_run(path), llm, chosen, judge="j", progress=False)
    assert len(chat.calls) == 1  # an unparseable verdict counts as judged
    await judge_run(
        load_run(path),
        llm,
        chosen,
        judge="j",
        options=CriteriaOptions(retry_unparseable=True),
        progress=False,
    )
    assert len(chat.calls) == 2


async def test_summary_rows_for_reports(make_run) -> None:
    path = make_run("run1", [section("s1", "Текст."), section("s2", "ПЛОХО")])
    llm, _ = fake_llm(scripted)
    chosen = CRITERIA.select(["literacy", "refusal"])
    await judge_run(
        load_run(path), llm, chosen, judge="j", options=CriteriaOptions(mode="guided"), progress=False
    )
    rows = summarize_judgements(path)
    assert [r["criterion"] for r in rows] == ["refusal", "literacy", "overall (per-text mean)"]
    assert all(r.keys() == rows[0].keys() for r in rows)
    assert (
        rows[0]["score"] == "failures 1/2" and rows[1]["score"] == "1.00 / 2" and rows[0]["mode"] == "guided"
    )
    assert summarize_judgements(path.parent / "nowhere") == []


async def test_concurrency_stays_within_the_llm_limit(make_run) -> None:
    import asyncio

    from ruwikibench.models.llm import LLM
    from ruwikibench.models.types import Completion

    class SlowChat:
        def __init__(self) -> None:
            self.active = self.peak = 0

        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[no-untyped-def]
            self.active += 1
            self.peak = max(self.peak, self.active)
            await asyncio.sleep(0.01)
            self.active -= 1
            return Completion(text="[RESULT] 2 [END]")

    chat = SlowChat()
    path = make_run("run1", [section(f"s{i}", "Текст.") for i in range(6)])
    await judge_run(
        load_run(path), LLM({"judge": chat}, max_concurrency=3), CRITERIA, judge="j", progress=False
    )
    assert chat.peak == 3


def test_pollux_layout_prompt_for_pollux_judges() -> None:
    text = section("s1", "Текст раздела.", reference="Эталон.")
    options = CriteriaOptions(mode="guided", prompt="ru/judge_criteria_pollux.txt")
    prompt = build_prompt(text, by_name("literacy"), options, PromptLibrary())
    headers = [line for line in prompt.splitlines() if line.startswith("### ")]
    assert headers == [
        "### Задание для оценки:",
        "### Эталонный ответ:",
        "### Ответ для оценки:",
        "### Критерий оценки:",
        "### Шкала оценивания по критерию:",
    ]
    assert prompt.rstrip().endswith(
        "2: В тексте нет орфографических, пунктуационных и грамматических ошибок."
    )


def test_unreadable_run_config_only_matters_without_judge_config(make_run, tmp_path: Path) -> None:
    from ruwikibench.cli.judge import pick_config as judge_config
    from ruwikibench.evaluators.judges.rundir import RunError

    path = make_run("run1", [section("s1", "Текст.")], config={"models": {}, "unknown_field": 1})
    run = load_run(path)
    assert run.config is None and "unknown_field" in (run.config_error or "")
    with pytest.raises(RunError, match="unknown_field.*pass --judge-config"):
        judge_config(run, None)
    cfg = tmp_path / "judge.yaml"
    cfg.write_text("models:\n  judge: {name: j, endpoints: ['http://127.0.0.1:9/v1']}\n", encoding="utf-8")
    assert judge_config(run, cfg).model_for("judge").name == "j"


async def test_unparseable_verdict_is_never_cached(make_run, tmp_path: Path) -> None:
    """With a response cache, an unparseable verdict is asked again on retry; a parsed one comes from the
    cache."""
    path = make_run("run1", [section("s1", "Текст.")])
    chosen = CRITERIA.select(["no_speech_errors", "literacy"])
    chat = ScriptedChat(lambda messages: scripted(messages[-1]["content"]), name="fake-judge")
    llm = LLM({"judge": chat}, cache=ResponseCache(tmp_path / "llm.sqlite"))
    await judge_run(load_run(path), llm, chosen, judge="j", progress=False)
    assert llm.cache is not None and len(llm.cache) == 1  # only the parsed verdict
    retry = CriteriaOptions(retry_unparseable=True)
    await judge_run(load_run(path), llm, chosen, judge="j2", options=retry, progress=False)
    assert len(chat.calls) == 3  # 'literacy' from the cache, the unparseable one asked again


def test_a_text_written_twice_is_judged_once_in_its_latest_version(tmp_path) -> None:
    """A resumed run that re-scored an item appends its generated text again: judges read the latest one."""
    import json as _json

    from ruwikibench.evaluators.judges.rundir import load_run

    (tmp_path / "spec.json").write_text(_json.dumps({"run_id": "r"}), encoding="utf-8")
    rows = [
        {"stage": "sections", "article": "A", "item": "s1", "title": "T", "text": t} for t in ("old", "new")
    ]
    rows.append({"stage": "sections", "article": "A", "item": "s2", "title": "T", "text": "other"})
    (tmp_path / "generated.jsonl").write_text("".join(_json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run = load_run(tmp_path)
    assert [(t.item, t.text) for t in run.texts] == [("s1", "new"), ("s2", "other")]


async def test_verdicts_written_as_normalised_are_read_and_not_judged_again(make_run) -> None:
    """Verdict files from before the -ize spelling keep their scores and are resumed, not judged again."""
    path = make_run("run1", [section("s1", "Текст один.")])
    chosen = CRITERIA.select(["literacy", "neutral_tone"])
    llm, chat = fake_llm(scripted)
    await judge_run(load_run(path), llm, chosen, judge="fake-judge", progress=False)
    new = read_records(path / RESULTS_JSONL)
    assert len(chat.calls) == 2 and all(r.normalized is not None for r in new)
    old_spelling = (path / RESULTS_JSONL).read_text("utf-8").replace('"normalized":', '"normalised":')
    (path / RESULTS_JSONL).write_text(old_spelling, "utf-8")
    assert [r.normalized for r in read_records(path / RESULTS_JSONL)] == [r.normalized for r in new]
    await judge_run(load_run(path), llm, chosen, judge="fake-judge", progress=False)
    assert len(chat.calls) == 2
