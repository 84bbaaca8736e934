"""The support judge: a scripted yes/no model answers from the claim and passage it is shown."""

from __future__ import annotations

import asyncio

import pytest

from ruwikibench.conf.config import CitationsConfig, RunConfig
from ruwikibench.evaluators.judges.citations import (
    CitedText,
    judge_texts,
    passage_for,
    score_cited_text,
    support_llm,
    verdict_map,
)
from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary

SOURCES = {
    1: "Гвидо ван Россум начал работу над языком в конце 1980-х годов.",
    2: "Первая версия Python вышла в 1991 году.",
    3: "Название языка происходит от шоу «Летающий цирк Монти Пайтона».",
}
TEXT = CitedText(
    article="Python",
    item="lead",
    title="Python",
    text="Python выпущен в 1991 году [1][2]. Назван в честь "
    "цирка Монти Пайтона [3]. Создатель любит чай [1].",
    sources=SOURCES,
)


def responder(messages):  # type: ignore[no-untyped-def]
    """'Да' when the passage holds the key fact of the claim; 'что?' (unparseable) for the tea claim."""
    prompt = messages[-1]["content"]
    passage = prompt.split('"""')[1]
    claim = prompt.split('"""')[3]
    if "чай" in claim:
        return "что?"
    facts = {"1991": "1991", "цирк": "цирк"}
    ok = any(key in claim and value in passage for key, value in facts.items())
    return yes_no_completion(0.9 if ok else 0.2)


def run(texts, chat, known=None, options=None):  # type: ignore[no-untyped-def]
    llm = LLM({"support": chat}, max_concurrency=2)
    return asyncio.run(
        judge_texts(
            texts,
            llm,
            judge="fake",
            options=options or CitationsConfig(),
            prompts=PromptLibrary(),
            known=known or [],
        )
    )


def test_judge_scores_a_text_with_probabilities_kept() -> None:
    chat = ScriptedChat(responder)
    records = run([TEXT], chat)
    # s0: union (1,2) yes -> singles (1,) no, (2,) yes -> leave-one-out of 1 is (2,): known. s1: (3,). s2:
    # (1,).
    assert sorted((r.sentence, tuple(r.numbers)) for r in records) == [
        (0, (1,)),
        (0, (1, 2)),
        (0, (2,)),
        (1, (3,)),
        (2, (1,)),
    ]
    assert len(chat.calls) == 5
    tea = next(r for r in records if r.sentence == 2)
    assert tea.source == "unparseable" and tea.probability is None
    union = next(r for r in records if r.numbers == [1, 2])
    assert union.source == "logprobs" and union.probability == pytest.approx(0.9)
    score = score_cited_text(TEXT, verdict_map(TEXT, records, "fake", 0.5), CitationsConfig())
    assert [s.status for s in score.sentences] == ["supported", "supported", "unjudged"]
    assert score.sentences[0].precise == {1: 0, 2: 1}
    assert (score.counts.citation_recall, score.counts.citation_precision) == (1.0, 2 / 3)
    assert score.probabilities[0] == pytest.approx(0.9)
    assert "1991" in score.passages[0][2]


def test_threshold_from_config_decides_support() -> None:
    records = run([TEXT], ScriptedChat(responder))
    strict = score_cited_text(TEXT, verdict_map(TEXT, records, "fake", 0.95), CitationsConfig(threshold=0.95))
    assert [s.status for s in strict.sentences] == ["unsupported", "unsupported", "unjudged"]


def test_known_records_are_not_asked_again_and_errors_are() -> None:
    first = run([TEXT], ScriptedChat(responder))
    chat = ScriptedChat(responder)
    assert run([TEXT], chat, known=first) == [] and chat.calls == []

    def failing(messages):  # type: ignore[no-untyped-def]
        raise RuntimeError("endpoint down")

    broken = run([TEXT], ScriptedChat(failing))
    assert {r.source for r in broken} == {"error"} and len(broken) == 3  # one error per sentence, asked once
    score = score_cited_text(TEXT, verdict_map(TEXT, broken, "fake", 0.5), CitationsConfig())
    assert [s.status for s in score.sentences] == ["unjudged"] * 3
    retried = run([TEXT], ScriptedChat(responder), known=broken)
    assert len(retried) == 5


def test_long_snippet_judged_through_its_best_window() -> None:
    filler = "Посторонний текст о погоде в горах. " * 60
    text = TEXT.model_copy(update={"sources": {**SOURCES, 2: filler + SOURCES[2] + " " + filler}})
    passage = passage_for(text, "Python выпущен в 1991 году.", [2], 300)
    assert "1991" in passage and len(passage) <= 300


def test_support_role_falls_back_to_the_judge_model() -> None:
    config = RunConfig.model_validate(
        {
            "models": {
                "writer": {"name": "w", "endpoints": ["http://127.0.0.1:9/v1"]},
                "judge": {"name": "j", "endpoints": ["http://127.0.0.1:9/v1"]},
            }
        }
    )
    assert config.model_for("support").name == "j"
    llm, name = support_llm(config)
    assert name == "j" and list(llm.backends) == ["support"]
    llm.close()
    own = config.model_copy(
        update={
            "models": {**config.models, "support": config.models["judge"].model_copy(update={"name": "s"})}
        }
    )
    assert own.model_for("support").name == "s"
