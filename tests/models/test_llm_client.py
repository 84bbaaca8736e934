import asyncio

import pytest

from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.models.llm import LLM
from ruwikibench.models.openai_backend import strip_thinking


def test_strip_thinking_removes_block_and_content() -> None:
    assert strip_thinking("<think>долго думаю</think>\nДа") == "Да"
    assert strip_thinking("<think>не закончил") == ""


async def test_global_limit_and_usage() -> None:
    running = 0
    peak = 0

    class Slow(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    llm = LLM({"writer": Slow(lambda m: "ok")}, max_concurrency=2)
    await asyncio.gather(*(llm.complete("judge", "привет") for _ in range(7)))
    assert peak == 2
    assert llm.usage.as_dict()["judge"]["calls"] == 7


async def test_queue_wait_and_service_time_are_apart() -> None:
    """One slot, three 0.05 s calls at once: the third waits ~0.1 s for its slot and is served in ~0.05 s."""

    class Slow(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            await asyncio.sleep(0.05)
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    llm = LLM({"writer": Slow(lambda m: "ok")}, max_concurrency=1)
    done = await asyncio.gather(*(llm.complete("writer", f"вопрос {i}") for i in range(3)))
    waits = sorted(c.queued_s for c in done)
    assert waits[0] < 0.02 and 0.04 < waits[1] < 0.09 and 0.09 < waits[2] < 0.2
    assert all(0.045 < c.service_s < 0.1 for c in done)
    usage = llm.usage.as_dict()["writer"]
    assert usage["queued_s"] == pytest.approx(sum(waits), abs=1e-3)
    assert usage["service_s"] == pytest.approx(sum(c.service_s for c in done), abs=1e-3)


async def test_fake_logprobs() -> None:
    llm = LLM({"ranking": ScriptedChat(lambda m: yes_no_completion(0.9))})
    completion = await llm.complete("ranking", "?", top_logprobs=5)
    assert completion.text == "Да" and completion.logprobs and completion.logprobs[0].top[0].token == "Да"


def test_strip_thinking_closing_tag_only_and_several_blocks() -> None:
    assert strip_thinking("рассуждение без начала</think> Нет") == "Нет"
    assert strip_thinking("<think>a</think>Да<think>b</think>") == "Да"
    assert strip_thinking("Просто ответ") == "Просто ответ"


def test_answer_logprobs_skip_the_thinking_block() -> None:
    from ruwikibench.models.types import Completion, TokenLogprob

    tokens = [TokenLogprob(token=t, logprob=-0.1) for t in ["<think>", "хм", "</", "think>", "\n", "Да"]]
    completion = Completion(text="Да", raw_text="<think>хм</think>\nДа", logprobs=tokens)
    assert [t.token for t in completion.answer_logprobs() or []] == ["\n", "Да"]
    plain = Completion(text="Да", raw_text="Да", logprobs=tokens[-1:])
    assert plain.answer_logprobs() == tokens[-1:]
    unclosed = Completion(text="", raw_text="<think>хм", logprobs=tokens[:2])
    assert unclosed.answer_logprobs() == []
    assert Completion(text="x").answer_logprobs() is None


async def test_cache_hits_counted_per_role_and_tokens_only_for_sent_requests(tmp_path) -> None:
    from ruwikibench.models.cache import ResponseCache

    chat = ScriptedChat(lambda m: yes_no_completion(0.8))
    llm = LLM({"ranking": chat}, cache=ResponseCache(tmp_path / "c.sqlite"))
    first = await llm.complete("ranking", "вопрос", top_logprobs=5)
    second = await llm.complete("judge", "вопрос", top_logprobs=5)  # judge falls back to the same backend
    assert len(chat.calls) == 1 and not first.cached and second.cached
    assert second.logprobs == first.logprobs
    usage = llm.usage.as_dict()
    timing = {key: usage["ranking"].pop(key) for key in ("queued_s", "service_s")}
    assert usage["ranking"] == {
        "calls": 1, "prompt_tokens": 10, "completion_tokens": 1, "cache_hits": 0, "retries": 0, "failures": 0
    }  # fmt: skip
    assert timing["queued_s"] >= 0 and timing["service_s"] >= 0
    assert second.queued_s == 0 and second.service_s == 0  # a cached answer neither waited nor was served
    assert (
        usage["judge"]["calls"] == 1
        and usage["judge"]["cache_hits"] == 1
        and usage["judge"]["prompt_tokens"] == 0
    )
    assert llm.usage.total()["calls"] == 2


async def test_backend_without_identity_is_never_cached() -> None:
    from ruwikibench.models.cache import ResponseCache

    class Anonymous:
        def __init__(self) -> None:
            self.calls = 0

        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[no-untyped-def]
            self.calls += 1
            return await ScriptedChat(lambda m: "ok").generate(
                messages, max_tokens=max_tokens, top_logprobs=0
            )

    backend = Anonymous()
    llm = LLM({"writer": backend}, cache=ResponseCache(None))
    await llm.complete("writer", "x")
    await llm.complete("writer", "x")
    assert backend.calls == 2


async def test_failures_counted_and_error_shared_by_concurrent_waiters() -> None:
    from ruwikibench.models.cache import ResponseCache

    def boom(messages):  # type: ignore[no-untyped-def]
        raise RuntimeError("сервер упал")

    class SlowBoom(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            await asyncio.sleep(0.01)
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    chat = SlowBoom(boom)
    llm = LLM({"writer": chat}, cache=ResponseCache(None))
    results = await asyncio.gather(*(llm.complete("writer", "x") for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results) and len(chat.calls) == 1
    assert llm.usage.as_dict()["writer"]["failures"] == 3
    assert not llm._inflight  # nothing left behind: a later call tries again
    chat.responder = lambda m: "ok"
    assert (await llm.complete("writer", "x")).text == "ok" and len(chat.calls) == 2


def test_request_key_changes_with_every_part() -> None:
    from ruwikibench.models.cache import request_key

    identity = {"name": "m", "temperature": 0.01}
    messages = [{"role": "user", "content": "привет"}]
    base = request_key(identity, messages, 5, 0)
    assert base == request_key(dict(reversed(list(identity.items()))), messages, 5, 0)  # key order irrelevant
    assert base != request_key({**identity, "temperature": 0.02}, messages, 5, 0)
    assert base != request_key(identity, [{"role": "user", "content": "привет!"}], 5, 0)
    assert base != request_key(identity, messages, 6, 0)
    assert base != request_key(identity, messages, 5, 10)


def test_identity_has_generation_parameters_but_no_transport_or_secrets() -> None:
    from ruwikibench.conf.config import ModelConfig

    identity = ModelConfig(
        name="m", endpoints=["http://h/v1"], api_key_env="KEY", local="qwen2.5-0.5b"
    ).identity()
    assert {"name", "temperature", "top_p", "repetition_penalty", "max_tokens", "extra_body"} <= set(identity)
    assert not {"endpoints", "api_key_env", "timeout", "max_retries", "retry_base_delay", "local"} & set(
        identity
    )


def test_from_config_starts_one_local_server_per_model_and_releases_it(monkeypatch, tmp_path) -> None:
    from ruwikibench.conf.config import RunConfig
    from ruwikibench.models import local_server

    started: list[str] = []
    released: list[object] = []

    class Running:
        def __init__(self, model: str) -> None:
            self.model = model
            self.base_url = f"http://127.0.0.1:{40000 + len(started)}/v1"

    options_seen: list[dict[str, object]] = []

    def acquire(model: str, **options: object) -> Running:
        started.append(model)
        options_seen.append(options)
        return Running(model)

    monkeypatch.setattr(local_server, "acquire_server", acquire)
    monkeypatch.setattr(local_server, "release_server", released.append)
    config = RunConfig.model_validate(
        {
            "models": {
                "ranking": {"name": "q", "local": "qwen2.5-0.5b"},
                "writer": {"name": "q", "local": "qwen2.5-0.5b", "max_tokens": 64},
                "judge": {"name": "big", "local": "qwen2.5-coder-1.5b"},
                "query": {"name": "q", "local": "qwen2.5-0.5b", "endpoints": ["http://127.0.0.1:9/v1"]},
            },
            "cache_dir": str(tmp_path),
            "local_server": {"threads": 3, "probe_timeout": 9},
        }
    )
    llm = LLM.from_config(config)
    assert started == ["qwen2.5-0.5b", "qwen2.5-coder-1.5b"]  # one per local model, shared by roles
    assert options_seen[0]["n_threads"] == 3 and options_seen[0]["probe_timeout"] == 9  # the config's
    ranking, writer, judge, query = (llm.backends[r] for r in ("ranking", "writer", "judge", "query"))
    assert ranking.config.endpoints == writer.config.endpoints != judge.config.endpoints  # type: ignore[attr-defined]
    assert query.config.endpoints == ["http://127.0.0.1:9/v1"]  # given endpoints win: nothing started
    assert ranking.identity()["gguf_sha256"] != judge.identity()["gguf_sha256"]  # type: ignore[attr-defined]
    llm.close()
    assert [s.model for s in released] == ["qwen2.5-0.5b", "qwen2.5-coder-1.5b"]  # type: ignore[attr-defined]
    assert llm.servers == []

    with pytest.raises(ValueError, match="start_local=False"):
        LLM.from_config(config, start_local=False)
