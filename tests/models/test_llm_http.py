"""OpenAIBackend against a real HTTP server on 127.0.0.1: request body, retries with backoff, errors,
logprobs."""

from __future__ import annotations

import asyncio
import math
import socket
import time

import pytest

from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.models.cache import ResponseCache
from ruwikibench.models.llm import LLM
from ruwikibench.models.openai_backend import OpenAIBackend
from ruwikibench.models.retry import LLMRequestError, backoff_delay
from tests.fake_openai import Failure, StubServer


def _model(stub: StubServer, **overrides: object) -> ModelConfig:
    settings: dict[str, object] = {
        "name": "stub-model",
        "endpoints": [stub.base_url],
        "retry_base_delay": 0.01,
        "retry_max_delay": 1.0,
        "max_retries": 4,
        "timeout": 5.0,
    }
    settings.update(overrides)
    return ModelConfig.model_validate(settings)


def _llm(stub: StubServer, cache: ResponseCache | None = None, **overrides: object) -> LLM:
    return LLM({"writer": OpenAIBackend(_model(stub, **overrides))}, cache=cache)


async def test_request_body_carries_paper_parameters_and_logprobs(stub_server: StubServer) -> None:
    llm = _llm(stub_server, max_tokens=321)
    completion = await llm.complete("ranking", "Да или нет?", max_tokens=5, top_logprobs=3)
    body = stub_server.requests[0]
    assert body["model"] == "stub-model"
    assert body["temperature"] == pytest.approx(0.01) and body["top_p"] == pytest.approx(0.9)
    assert body["repetition_penalty"] == pytest.approx(1.0)
    assert body["max_tokens"] == 5 and body["logprobs"] is True and body["top_logprobs"] == 3
    assert body["messages"] == [{"role": "user", "content": "Да или нет?"}]
    assert "chat_template_kwargs" not in body and "max_completion_tokens" not in body
    assert completion.text == "ответ: Да или нет?"
    assert completion.logprobs is not None and len(completion.logprobs) == 4
    first = completion.logprobs[0]
    assert first.token == "ответ:" and math.isclose(first.logprob, math.log(0.8))
    assert [t.token for t in first.top] == ["ответ:", "alt0", "alt1"]
    assert completion.prompt_tokens == 7 and completion.endpoint == stub_server.base_url


async def test_max_completion_tokens_field_for_openai_reasoning_models(stub_server: StubServer) -> None:
    await _llm(stub_server, max_tokens_field="max_completion_tokens").complete("writer", "x", max_tokens=9)
    assert (
        stub_server.requests[0]["max_completion_tokens"] == 9 and "max_tokens" not in stub_server.requests[0]
    )


async def test_default_max_tokens_and_no_think_switches(stub_server: StubServer) -> None:
    llm = _llm(stub_server, max_tokens=77, disable_thinking=True, no_think_suffix=True)
    await llm.complete("writer", [{"role": "system", "content": "s"}, {"role": "user", "content": "привет"}])
    body = stub_server.requests[0]
    assert body["max_tokens"] == 77 and "logprobs" not in body
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert body["messages"][-1]["content"] == "привет /no_think" and body["messages"][0]["content"] == "s"


async def test_thinking_removed_from_text_kept_in_raw(stub_server: StubServer) -> None:
    stub_server.answer = lambda body: "<think>пусть подумаю</think>\nДа"
    completion = await _llm(stub_server).complete("ranking", "?")
    assert completion.text == "Да" and completion.raw_text.startswith("<think>")


async def test_api_key_read_from_named_env_var(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RWB_TEST_KEY", "sekret-123")
    await _llm(stub_server, api_key_env="RWB_TEST_KEY").complete("writer", "x")
    headers = {k.lower(): v for k, v in stub_server.headers[0].items()}
    assert headers["authorization"] == "Bearer sekret-123"
    assert all("sekret" not in str(v) for v in stub_server.requests[0].values())
    monkeypatch.delenv("RWB_TEST_KEY")
    with pytest.raises(ValueError, match="RWB_TEST_KEY"):
        _llm(stub_server, api_key_env="RWB_TEST_KEY")


async def test_retries_429_and_5xx_then_succeeds(stub_server: StubServer) -> None:
    stub_server.failures = [Failure(429), Failure(500), Failure(503)]
    llm = _llm(stub_server)
    completion = await llm.complete("ranking", "повтори")
    assert completion.text == "ответ: повтори"
    assert len(stub_server.requests) == 4
    assert completion.retries == 3
    assert llm.usage.as_dict()["ranking"]["retries"] == 3 and llm.usage.as_dict()["ranking"]["failures"] == 0


async def test_backoff_grows_exponentially(stub_server: StubServer) -> None:
    stub_server.failures = [Failure(500), Failure(500), Failure(500)]
    await _llm(stub_server, retry_base_delay=0.1).complete("writer", "x")
    gaps = [b - a for a, b in zip(stub_server.times, stub_server.times[1:], strict=False)]
    # jitter keeps each wait within [50 %, 100 %] of base·2^n: [.05,.1], [.1,.2], [.2,.4]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.1 and gaps[2] >= 0.2
    assert gaps[2] > gaps[0]


async def test_retry_after_header_is_honoured(stub_server: StubServer) -> None:
    stub_server.failures = [Failure(429, headers={"retry-after-ms": "300"})]
    start = time.monotonic()
    await _llm(stub_server, retry_base_delay=0.001).complete("writer", "x")
    assert time.monotonic() - start >= 0.3 and len(stub_server.requests) == 2


def test_backoff_delay_is_capped() -> None:
    assert backoff_delay(20, base=1.0, cap=3.0) <= 3.0
    assert 2.0 <= backoff_delay(2, base=1.0, cap=30.0) <= 4.0  # attempt 2: 1·2² with jitter [50 %, 100 %]


async def test_client_errors_are_not_retried(stub_server: StubServer) -> None:
    stub_server.failures = [Failure(400)]
    llm = _llm(stub_server)
    with pytest.raises(LLMRequestError) as err:
        await llm.complete("judge", "x")
    assert len(stub_server.requests) == 1
    assert (
        err.value.status_code == 400
        and "stub-model" in str(err.value)
        and stub_server.base_url in str(err.value)
    )
    assert llm.usage.as_dict()["judge"]["failures"] == 1


async def test_gives_up_after_max_retries(stub_server: StubServer) -> None:
    stub_server.failures = [Failure(502)] * 5
    llm = _llm(stub_server, max_retries=2)
    with pytest.raises(LLMRequestError, match="3 attempt"):
        await llm.complete("writer", "x")
    assert len(stub_server.requests) == 3
    assert llm.usage.as_dict()["writer"] == {
        "calls": 1, "prompt_tokens": 0, "completion_tokens": 0, "cache_hits": 0, "retries": 2, "failures": 1,
        "queued_s": 0.0, "service_s": 0.0,  # a failed call's timing is not counted (no Completion carries it)
    }  # fmt: skip


async def test_timeout_is_retried(stub_server: StubServer) -> None:
    stub_server.failures = [Failure(200, delay=1.5)]  # answers too late: the client times out
    completion = await _llm(stub_server, timeout=0.5).complete("writer", "медленно")
    assert completion.text == "ответ: медленно" and completion.retries == 1 and len(stub_server.requests) == 2


def _dead_endpoint() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"  # closed again: connections are refused


async def test_connection_error_retried_on_next_replica(stub_server: StubServer) -> None:
    llm = _llm(stub_server, endpoints=[_dead_endpoint(), stub_server.base_url])
    completion = await llm.complete("writer", "реплика")
    assert completion.retries == 1 and completion.endpoint == stub_server.base_url
    assert len(stub_server.requests) == 1


async def test_connection_refused_everywhere_fails_clearly() -> None:
    config = ModelConfig(name="m", endpoints=[_dead_endpoint()], max_retries=1, retry_base_delay=0.01)
    with pytest.raises(LLMRequestError, match="2 attempt.*cause: connection refused"):
        await LLM({"writer": OpenAIBackend(config)}).complete("writer", "x")


async def test_cache_sends_no_duplicate_request_across_runs(stub_server: StubServer, tmp_path) -> None:
    path = tmp_path / "llm.sqlite"
    prompts = ["первый", "второй", "первый", "третий"]
    first = _llm(stub_server, cache=ResponseCache(path))
    answers = [await first.complete("ranking", p, max_tokens=5, top_logprobs=2) for p in prompts]
    assert len(stub_server.requests) == 3 and [a.cached for a in answers] == [False, False, True, False]
    first.close()

    rerun = _llm(stub_server, cache=ResponseCache(path))  # a new process would see the same file
    again = [await rerun.complete("ranking", p, max_tokens=5, top_logprobs=2) for p in prompts]
    assert len(stub_server.requests) == 3  # nothing sent
    assert all(a.cached for a in again)
    assert [a.logprobs for a in again] == [a.logprobs for a in answers]  # logprobs survive the cache
    assert rerun.usage.as_dict()["ranking"]["cache_hits"] == 4
    assert rerun.usage.as_dict()["ranking"]["prompt_tokens"] == 0

    await rerun.complete(
        "ranking", "первый", max_tokens=6, top_logprobs=2
    )  # another max_tokens: a new request
    await rerun.complete("ranking", "первый", max_tokens=5, top_logprobs=3)  # another top_logprobs: new
    assert len(stub_server.requests) == 5


async def test_cache_key_includes_generation_parameters(stub_server: StubServer) -> None:
    cache = ResponseCache(None)
    await _llm(stub_server, cache=cache).complete("writer", "x")
    await _llm(stub_server, cache=cache, temperature=0.7).complete("writer", "x")
    await _llm(stub_server, cache=cache, endpoints=[stub_server.base_url + "/"]).complete("writer", "x")
    assert len(stub_server.requests) == 2  # the endpoint is not part of the key, the temperature is


async def test_concurrent_identical_requests_are_sent_once(stub_server: StubServer) -> None:
    stub_server.delay = 0.2
    llm = _llm(stub_server, cache=ResponseCache(None))
    results = await asyncio.gather(*(llm.complete("ranking", p) for p in ["a", "a", "a", "b", "a", "b"]))
    assert len(stub_server.requests) == 2
    assert sum(not r.cached for r in results) == 2
    assert [r.text for r in results] == ["ответ: " + p for p in ["a", "a", "a", "b", "a", "b"]]
    usage = llm.usage.as_dict()["ranking"]
    assert usage["calls"] == 6 and usage["cache_hits"] == 4 and usage["prompt_tokens"] == 2 * 7


def test_from_config_builds_backends_and_cache(stub_server: StubServer, tmp_path) -> None:
    config = RunConfig.model_validate(
        {
            "models": {"writer": {"name": "w", "endpoints": [stub_server.base_url]}},
            "cache_dir": str(tmp_path),
        }
    )
    with LLM.from_config(config) as llm:
        completion = asyncio.run(llm.complete("judge", "привет"))
        assert completion.text == "ответ: привет"
        assert llm.cache is not None and llm.cache.path == tmp_path / "llm.sqlite"
    with LLM.from_config(config) as llm:
        assert asyncio.run(llm.complete("judge", "привет")).cached
    assert len(stub_server.requests) == 1


def test_one_client_serves_several_event_loops(stub_server: StubServer) -> None:
    llm = _llm(stub_server, cache=ResponseCache(None))
    assert asyncio.run(llm.complete("writer", "первый цикл")).text == "ответ: первый цикл"
    assert asyncio.run(llm.complete("writer", "второй цикл")).text == "ответ: второй цикл"
    assert asyncio.run(llm.complete("writer", "первый цикл")).cached
    assert len(stub_server.requests) == 2


async def test_many_connections_share_one_aiohttp_pool(stub_server: StubServer) -> None:
    backend = OpenAIBackend(_model(stub_server), connections=256)
    llm = LLM({"writer": backend}, max_concurrency=256)
    answers = await asyncio.gather(*(llm.complete("writer", f"вопрос {i}") for i in range(40)))
    assert [a.text for a in answers] == [f"ответ: вопрос {i}" for i in range(40)]
    clients = await backend._clients()
    assert len(clients) == 1  # one client per endpoint
    session = clients[0].http_async_client._transport.client
    assert type(session).__module__.startswith("aiohttp") and session.connector.limit == 256


async def test_every_client_shares_one_tls_context(stub_server: StubServer) -> None:
    """The CA bundle is loaded once per process, not once per role's client."""
    import ssl

    backends = [OpenAIBackend(_model(stub_server, name=f"m{i}")) for i in range(3)]
    contexts = [
        (await backend._clients())[0].http_async_client._transport.ssl_context for backend in backends
    ]
    assert isinstance(contexts[0], ssl.SSLContext) and all(c is contexts[0] for c in contexts)
    assert contexts[0].verify_mode == ssl.CERT_REQUIRED and contexts[0].check_hostname


async def test_a_small_run_may_still_open_100_connections(stub_server: StubServer) -> None:
    backend = OpenAIBackend(_model(stub_server), connections=32)
    await LLM({"writer": backend}).complete("writer", "один")
    (client,) = await backend._clients()
    assert client.http_async_client._transport.client.connector.limit == 100


def test_sessions_are_closed_when_their_event_loop_ends(stub_server: StubServer) -> None:
    backend = OpenAIBackend(_model(stub_server))
    llm = LLM({"writer": backend}, cache=ResponseCache(None))
    sessions = []

    async def ask(prompt: str) -> None:
        await llm.complete("writer", prompt)
        sessions.append((await backend._clients())[0].http_async_client._transport.client)

    asyncio.run(ask("первый"))  # nobody closes: the loop's shutdown does
    assert sessions[0].closed

    async def ask_and_close() -> None:
        await ask("второй")
        await llm.aclose()
        assert sessions[1].closed and sessions[1] is not sessions[0]

    asyncio.run(ask_and_close())


async def test_the_first_request_is_out_once_it_reaches_the_transport(
    stub_server: StubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """first_request_sent (the warm-up and the other units wait for it) returns once the HTTP client's request
    hook saw the request — built by langchain and the SDK, going to aiohttp — before the answer, not when the
    request is handed to the backend; later requests notify no one."""
    from ruwikibench.models import openai_backend

    stub_server.delay = 0.3
    notified: list[int] = []
    real = openai_backend._request_sent

    async def recording(request) -> None:  # type: ignore[no-untyped-def]
        if openai_backend.REQUEST_SENT.get() is not None:
            notified.append(1)
        await real(request)

    monkeypatch.setattr(openai_backend, "_request_sent", recording)
    llm = _llm(stub_server)
    asking = asyncio.ensure_future(llm.complete("writer", "привет"))
    await asyncio.wait_for(llm.first_request_sent(), 5)
    assert notified == [1] and not asking.done()
    assert (await asking).text == "ответ: привет"
    await llm.complete("writer", "ещё")
    assert notified == [1]


async def test_a_first_request_that_fails_counts_as_out() -> None:
    """An endpoint that refuses the connection: the request is out once it has failed."""
    from tests.cli.test_input_errors import refused_url

    llm = LLM({"writer": OpenAIBackend(ModelConfig(name="m", endpoints=[refused_url()], max_retries=0))})
    with pytest.raises(LLMRequestError):
        await llm.complete("writer", "привет")
    await asyncio.wait_for(llm.first_request_sent(), 1)
