"""The chat request built once (models/chat_post.py): after a client's first request, which the SDK builds,
the next ones copy it with their own body — the same request on the wire, the same answers, the same errors as
the SDK's path — and a client whose requests may change from call to call never takes that path."""

from __future__ import annotations

import socket
from typing import Any

import openai
import pytest

from ruwikibench.conf.config import ModelConfig
from ruwikibench.models.chat_post import ChatPost
from ruwikibench.models.llm import LLM
from ruwikibench.models.openai_backend import OpenAIBackend
from ruwikibench.models.retry import LLMRequestError
from tests.fake_openai import Failure, StubServer

WIRE_HEADERS = (
    "authorization",
    "x-bench",
    "content-type",
    "accept",
    "user-agent",
    "x-stainless-lang",
    "x-stainless-package-version",
    "x-stainless-retry-count",
    "host",
)


def _backend(url: str, **extra: Any) -> OpenAIBackend:
    config = ModelConfig.model_validate(
        {
            "name": "stub-model",
            "endpoints": [url],
            "max_retries": 0,
            "timeout": 5.0,
            "extra_body": {"min_p": 0.05},
            "headers": {"X-Bench": "on"},
            "api_key_env": "RWB_POST_KEY",
            **extra,
        }
    )
    return OpenAIBackend(config)


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RWB_POST_KEY", "k-2")


def _count_sdk_posts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    posts: list[str] = []
    original = openai.AsyncOpenAI.post

    async def counted(self: Any, path: str, **kwargs: Any) -> Any:
        posts.append(path)
        return await original(self, path, **kwargs)

    monkeypatch.setattr(openai.AsyncOpenAI, "post", counted)
    return posts


async def test_after_the_first_request_the_sdk_builds_none(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    posts = _count_sdk_posts(monkeypatch)
    llm = LLM({"writer": _backend(stub_server.base_url)})
    answers = [await llm.complete("writer", f"вопрос {i}", max_tokens=5, top_logprobs=2) for i in range(3)]
    assert [a.text for a in answers] == [f"ответ: вопрос {i}" for i in range(3)]
    assert posts == ["/chat/completions"]  # the first only
    logprobs = answers[2].logprobs
    assert logprobs is not None and len(logprobs[0].top) == 2 and answers[2].prompt_tokens > 0


async def test_the_copied_request_is_the_sdks_request(stub_server: StubServer) -> None:
    llm = LLM({"writer": _backend(stub_server.base_url)})
    first = await llm.complete("writer", "тот же вопрос", max_tokens=7)
    stub_server.requests.clear()  # the same prompt again, past the response cache: a new LLM, the same client
    backend = next(iter(llm.backends.values()))
    again = await LLM({"writer": backend}).complete("writer", "тот же вопрос", max_tokens=7)
    assert again.text == first.text
    sdk, copied = stub_server.headers[0], stub_server.headers[1]
    sdk, copied = ({k.lower(): v for k, v in h.items()} for h in (sdk, copied))
    for name in WIRE_HEADERS:
        assert copied.get(name) == sdk.get(name), name
    assert copied["authorization"] == "Bearer k-2" and copied["x-bench"] == "on"
    assert int(copied["content-length"]) > 0
    body = stub_server.requests[0]
    assert body["min_p"] == 0.05 and "extra_body" not in body and body["max_tokens"] == 7


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
async def test_a_copied_request_fails_as_the_sdks_does(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch, message: str, error: str
) -> None:
    monkeypatch.setattr(StubServer, "respond", _failing_with(message, StubServer.respond))
    backend = _backend(stub_server.base_url)
    llm = LLM({"writer": backend})
    await llm.complete("writer", "первый")  # builds the template
    causes = []
    for prompt in ("второй", "третий"):
        stub_server.failures.append(Failure(400))
        with pytest.raises(LLMRequestError) as raised:
            await llm.complete("writer", prompt)
        causes.append(raised.value.__cause__)
        assert raised.value.status_code == 400
    fresh = LLM({"writer": _backend(stub_server.base_url)})  # the SDK's path: no template yet
    stub_server.failures.append(Failure(400))
    with pytest.raises(LLMRequestError) as raised:
        await fresh.complete("writer", "четвёртый")
    assert type(causes[0]) is type(raised.value.__cause__) and str(causes[0]) == str(raised.value.__cause__)
    assert type(causes[0]).__name__ == error


def _failing_with(message: str, respond):  # type: ignore[no-untyped-def]
    def respond_with_message(self, body):  # type: ignore[no-untyped-def]
        status, headers, payload, delay = respond(self, body)
        if status == 400:
            payload = {"error": {"message": message, "type": "invalid_request_error"}}
        return status, headers, payload, delay

    return respond_with_message


async def test_a_copied_request_is_retried_after_429_timeouts_and_5xx(stub_server: StubServer) -> None:
    backend = _backend(stub_server.base_url, max_retries=3, retry_base_delay=0.01, timeout=0.5)
    llm = LLM({"writer": backend})
    await llm.complete("writer", "первый")
    stub_server.failures.extend(
        [Failure(429, headers={"Retry-After": "0"}), Failure(200, delay=1.2), Failure(503)]
    )
    completion = await llm.complete("writer", "второй")
    assert completion.text == "ответ: второй" and completion.retries == 3


async def test_a_copied_request_to_a_dead_endpoint_is_a_connection_error(stub_server: StubServer) -> None:
    backend = _backend(stub_server.base_url)
    await LLM({"writer": backend}).complete("writer", "первый")
    clients = await backend._clients()
    post: ChatPost = clients[0]._post
    assert post.template is not None
    stub_server_url = str(post.template.url)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    post.template.url = post.template.url.copy_with(port=port)  # the same request, to a closed port
    with pytest.raises(openai.APIConnectionError):
        await post.post({"model": "stub-model", "messages": [{"role": "user", "content": "x"}]})
    assert stub_server_url.endswith("/chat/completions")


def test_a_client_whose_requests_change_per_call_always_takes_the_sdks_path() -> None:
    client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    assert ChatPost(client).lean
    client = openai.AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1")
    client._api_key_provider = lambda: "fresh"  # type: ignore[attr-defined]  # e.g. a token refreshed per call
    assert not ChatPost(client).lean
