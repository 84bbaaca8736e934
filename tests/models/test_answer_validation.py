"""Empty and unusable answers are never cached: empty ones fail (after retries), rejected ones are asked
again."""

from __future__ import annotations

from pathlib import Path

import pytest

from ruwikibench.conf.config import ModelConfig
from ruwikibench.models.cache import ResponseCache
from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.models.llm import LLM, EmptyAnswer
from ruwikibench.models.openai_backend import OpenAIBackend
from ruwikibench.models.types import Completion
from ruwikibench.nodes.ranking import parseable
from tests.fake_openai import StubServer


def _scripted(answers: list[str | Completion], tmp_path: Path) -> tuple[LLM, ScriptedChat]:
    chat = ScriptedChat(lambda messages: answers.pop(0))
    return LLM({"ranking": chat}, cache=ResponseCache(tmp_path / "llm.sqlite")), chat


async def test_empty_answer_fails_and_is_not_cached(tmp_path: Path) -> None:
    llm, chat = _scripted(["", "  \n", "ответ"], tmp_path)
    for _ in range(2):
        with pytest.raises(EmptyAnswer, match="model 'fake': empty answer"):
            await llm.complete("ranking", "вопрос")
    assert llm.cache is not None and len(llm.cache) == 0
    assert llm.usage.total()["failures"] == 2
    assert (await llm.complete("ranking", "вопрос")).text == "ответ"
    assert (await llm.complete("ranking", "вопрос")).cached and len(chat.calls) == 3


async def test_rejected_answer_is_returned_but_asked_again(tmp_path: Path) -> None:
    llm, chat = _scripted(["может быть", yes_no_completion(0.9)], tmp_path)
    first = await llm.complete("ranking", "релевантно?", accept=parseable)
    assert first.text == "может быть" and llm.cache is not None and len(llm.cache) == 0
    second = await llm.complete("ranking", "релевантно?", accept=parseable)
    assert not second.cached and parseable(second) and len(llm.cache) == 1
    assert (await llm.complete("ranking", "релевантно?", accept=parseable)).cached and len(chat.calls) == 2


async def test_cached_answer_the_caller_rejects_is_asked_again(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "llm.sqlite")
    answers: list[str | Completion] = ["может быть", yes_no_completion(0.9)]
    old = LLM({"ranking": ScriptedChat(lambda m: answers.pop(0))}, cache=cache)
    await old.complete("ranking", "релевантно?")  # cached before answers were checked
    chat = ScriptedChat(lambda m: answers.pop(0))
    again = await LLM({"ranking": chat}, cache=cache).complete("ranking", "релевантно?", accept=parseable)
    assert parseable(again) and len(chat.calls) == 1


async def test_http_empty_content_is_retried_like_a_server_error(stub_server: StubServer) -> None:
    replies = iter(["", "", "ответ"])
    stub_server.answer = lambda body: next(replies)
    model = ModelConfig(name="stub", endpoints=[stub_server.base_url], max_retries=3, retry_base_delay=0.01)
    completion = await LLM({"writer": OpenAIBackend(model)}).complete("writer", "x")
    assert completion.text == "ответ" and completion.retries == 2 and len(stub_server.requests) == 3


async def test_http_empty_content_after_retries_is_a_failure(stub_server: StubServer) -> None:
    stub_server.answer = lambda body: ""
    model = ModelConfig(name="stub", endpoints=[stub_server.base_url], max_retries=1, retry_base_delay=0.01)
    llm = LLM({"writer": OpenAIBackend(model)})
    with pytest.raises(EmptyAnswer, match=f"at {stub_server.base_url}: empty answer"):
        await llm.complete("writer", "x")
    assert len(stub_server.requests) == 2 and llm.usage.total()["failures"] == 1
