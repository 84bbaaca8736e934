"""The backend's plain chat path (``CompatChatOpenAI.chat``) against ``ainvoke``, the path it skips: the same
request on the wire, the same answer, the same errors; ``ainvoke`` whenever tracing is on."""

from __future__ import annotations

import pytest

from ruwikibench.conf.config import ModelConfig
from ruwikibench.models import openai_backend
from ruwikibench.models.llm import LLM
from ruwikibench.models.openai_backend import OpenAIBackend, tracing_enabled
from ruwikibench.models.retry import LLMRequestError
from tests.fake_openai import Failure, StubServer

MESSAGES = [{"role": "system", "content": "Отвечай кратко."}, {"role": "user", "content": "Да или нет?"}]


def _backend(stub: StubServer) -> OpenAIBackend:
    config = ModelConfig.model_validate(
        {
            "name": "stub-model",
            "endpoints": [stub.base_url],
            "max_retries": 0,
            "timeout": 5.0,
            "extra_body": {"min_p": 0.05},
            "headers": {"X-Bench": "on"},
            "api_key_env": "RWB_CHAT_KEY",
        }
    )
    return OpenAIBackend(config)


async def _both_paths(stub: StubServer, monkeypatch: pytest.MonkeyPatch, **kwargs: object) -> list:
    """The completion through chat() and then through ainvoke (tracing switched on)."""
    monkeypatch.setenv("RWB_CHAT_KEY", "k-1")
    completions = []
    for traced in (False, True):
        monkeypatch.setattr(openai_backend, "tracing_enabled", lambda traced=traced: traced)
        completions.append(await LLM({"writer": _backend(stub)}).complete("writer", MESSAGES, **kwargs))
    return completions


async def test_chat_sends_what_ainvoke_sends(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _both_paths(stub_server, monkeypatch, max_tokens=5, top_logprobs=3)
    assert len(stub_server.requests) == 2
    assert stub_server.requests[0] == stub_server.requests[1]
    body = stub_server.requests[0]
    assert body["min_p"] == 0.05 and "extra_body" not in body and body["top_logprobs"] == 3
    headers = [{k.lower(): v for k, v in sent.items()} for sent in stub_server.headers]
    for name in ("authorization", "x-bench", "content-type"):
        assert headers[0][name] == headers[1][name]
    assert headers[0]["authorization"] == "Bearer k-1"


async def test_chat_reads_the_answer_as_ainvoke_does(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast, traced = await _both_paths(stub_server, monkeypatch, max_tokens=5, top_logprobs=3)
    assert fast.text == traced.text == "ответ: Да или нет?"
    assert fast.logprobs == traced.logprobs and fast.logprobs is not None and len(fast.logprobs[0].top) == 3
    assert (fast.prompt_tokens, fast.completion_tokens) == (traced.prompt_tokens, traced.completion_tokens)
    assert fast.prompt_tokens > 0


@pytest.mark.parametrize(
    ("message", "error"),
    [
        (
            "This model's maximum context length is 4096 tokens (context_length_exceeded)",
            "OpenAIContextOverflowError",
        ),
        ("no such parameter", "OpenAIInvalidRequestError"),
    ],
)
async def test_chat_raises_what_ainvoke_raises(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch, message: str, error: str
) -> None:
    causes = []
    stub_server.failures.extend([Failure(400), Failure(400)])
    monkeypatch.setattr(StubServer, "respond", _failing_with(message, StubServer.respond))
    monkeypatch.setenv("RWB_CHAT_KEY", "k-1")
    for traced in (False, True):
        monkeypatch.setattr(openai_backend, "tracing_enabled", lambda traced=traced: traced)
        with pytest.raises(LLMRequestError) as raised:
            await LLM({"writer": _backend(stub_server)}).complete("writer", MESSAGES)
        causes.append(raised.value.__cause__)
    assert type(causes[0]) is type(causes[1]) and str(causes[0]) == str(causes[1])
    assert type(causes[0]).__name__ == error
    assert raised.value.status_code == 400


def _failing_with(message: str, respond):  # type: ignore[no-untyped-def]
    def respond_with_message(self, body):  # type: ignore[no-untyped-def]
        status, headers, payload, delay = respond(self, body)
        if status == 400:
            payload = {"error": {"message": message, "type": "invalid_request_error"}}
        return status, headers, payload, delay

    return respond_with_message


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"LANGSMITH_TRACING": "true"}, True),
        ({"LANGCHAIN_TRACING_V2": "1"}, True),
        ({"LANGSMITH_TRACING": "false"}, False),
        ({"LANGSMITH_TRACING": ""}, False),
    ],
)
def test_tracing_switch_is_read_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: bool
) -> None:
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tracing_enabled() is expected


@pytest.mark.parametrize(("model", "system_role"), [("stub-model", "system"), ("o3-mini", "developer")])
async def test_the_payload_template_sends_what_the_full_conversion_sends(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch, model: str, system_role: str
) -> None:
    """A model whose payload rewrites roles (o-series: system → developer) must not take the template."""
    monkeypatch.setattr(openai_backend, "tracing_enabled", lambda: False)
    backend = OpenAIBackend(ModelConfig(name=model, endpoints=[stub_server.base_url], max_retries=0))
    llm = LLM({"writer": backend})
    for _ in range(2):  # the second request takes the template made by the first
        await llm.complete("writer", MESSAGES, max_tokens=3)
    assert [m["role"] for m in stub_server.requests[1]["messages"]] == [system_role, "user"]
    assert stub_server.requests[0] == stub_server.requests[1]
    client = (await backend._clients())[0]
    assert (
        stub_server.requests[1]["messages"] == client._get_request_payload(MESSAGES, max_tokens=3)["messages"]
    )
