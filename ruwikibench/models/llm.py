"""The LLM client the nodes use: role -> backend, one global concurrency limit, a response cache, usage.

Nodes call ``await llm.complete(role, prompt_or_messages, top_logprobs=…)``. Backends are OpenAI-compatible
endpoints (:class:`OpenAIBackend`, through langchain-openai's ChatOpenAI) or a scripted fake in tests.

* Retries: :class:`OpenAIBackend` retries 429 / 408 / 409 / 5xx / connection errors / timeouts with exponential
  backoff (``retry_base_delay`` · 2^n with jitter, capped by ``retry_max_delay``; a server's Retry-After wins),
  rotating over replica endpoints; the SDK's own retries are switched off so every attempt is counted.
* Cache: with a :class:`ResponseCache`, a request identical to an earlier one (same model identity — name and
  every generation parameter — same messages, max_tokens and top_logprobs) is answered from the cache with
  ``cached=True``; identical requests in flight at the same time are sent once. The endpoint URL is NOT part of
  the key: replicas and a restarted server on another port share entries.
* Never cached: an empty answer (HTTP 200 with no text) is retried like a server error and, if it stays empty,
  raises :class:`EmptyAnswer` (counted as a failure); an answer the caller's ``accept`` rejects (e.g. a relevance
  judgement that is neither yes nor no) is returned but not stored, and a cached answer it rejects is asked anew,
  so the next run retries it.
* Usage per role: calls, prompt/completion tokens of requests actually sent, cache hits, retries, failures.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import os
import re
import weakref
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ruwikibench.config import ConfigError, ModelConfig, RunConfig, role_served_by
from ruwikibench.executors import run_cpu
from ruwikibench.models.cache import ResponseCache, request_key
from ruwikibench.models.priority import Priority, PrioritySemaphore
from ruwikibench.models.retry import LLMRequestError, backoff_delay, is_retryable
from ruwikibench.models.types import ChatBackend, Completion, Messages, TokenLogprob, TopLogprob

if TYPE_CHECKING:
    from ruwikibench.models.local_server import LocalServer

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)


class EmptyAnswer(RuntimeError):
    """The endpoint answered with no text (after reasoning is removed): a failed request, never cached."""


Accept = Callable[[Completion], bool]


def strip_thinking(text: str) -> str:
    """Remove ``<think>…</think>`` blocks together with their content (an unclosed block runs to the end).

    A closing tag without an opening one (chat templates that put ``<think>`` into the prompt) drops
    everything before it.
    """
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


@dataclass
class RoleUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0


@dataclass
class Usage:
    """Per-role counters. Tokens count only requests actually sent (cache hits cost nothing)."""

    by_role: dict[str, RoleUsage] = field(default_factory=lambda: defaultdict(RoleUsage))

    def add(self, role: str, completion: Completion) -> None:
        usage = self.by_role[role]
        usage.calls += 1
        usage.retries += completion.retries
        if completion.cached:
            usage.cache_hits += 1
        else:
            usage.prompt_tokens += completion.prompt_tokens
            usage.completion_tokens += completion.completion_tokens

    def fail(self, role: str, exc: BaseException) -> None:
        usage = self.by_role[role]
        usage.calls += 1
        usage.failures += 1
        attempts = getattr(exc, "attempts", 1)
        usage.retries += max(0, int(attempts) - 1)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {role: vars(u).copy() for role, u in sorted(self.by_role.items())}

    def total(self) -> dict[str, int]:
        out = vars(RoleUsage()).copy()
        for usage in self.by_role.values():
            for name, value in vars(usage).items():
                out[name] += value
        return out


def as_messages(prompt: str | Messages) -> Messages:
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt


def with_no_think_suffix(messages: Messages) -> Messages:
    """Append `` /no_think`` to the last user message (Qwen3-style soft switch)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            updated = {**messages[index], "content": messages[index]["content"] + " /no_think"}
            return [*messages[:index], updated, *messages[index + 1 :]]
    return messages


class OpenAIBackend:
    """An OpenAI-compatible endpoint (or several replicas, used round-robin) through ChatOpenAI."""

    def __init__(
        self, config: ModelConfig, identity_extra: dict[str, object] | None = None, connections: int = 32
    ) -> None:
        """``connections``: HTTP connections kept open per endpoint; at least the run's in-flight limit, or
        every wave of requests beyond it opens (and closes) new connections."""
        if not config.endpoints:
            raise ConfigError(f"model {config.name!r}: no endpoint configured (set 'endpoints' or 'local')")
        if config.api_key_env and not os.environ.get(config.api_key_env):
            raise ConfigError(
                f"model {config.name!r}: environment variable {config.api_key_env} (api_key_env) is not set"
            )
        self.config = config
        self.connections = max(1, connections)
        self._identity = {**config.identity(), **(identity_extra or {})}
        self._next = itertools.cycle(range(len(config.endpoints)))
        # one set of clients per event loop: an httpx connection pool cannot outlive the loop it was made in
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._building: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[list[Any]]] = (
            weakref.WeakKeyDictionary()
        )

    def identity(self) -> dict[str, object]:
        """What the response cache keys on: name and every generation parameter (no endpoint, no key)."""
        return self._identity

    async def prepare(self) -> None:
        await self._clients()

    async def _clients(self) -> list[Any]:
        """This loop's clients, made once on the CPU pool (importing langchain-openai and building httpx
        clients takes seconds of CPU: on the loop it would stall every other request)."""
        loop = asyncio.get_running_loop()
        clients = self._by_loop.get(loop)
        if clients is not None:
            return clients
        building = self._building.get(loop)
        if building is None:
            building = self._building[loop] = asyncio.ensure_future(
                run_cpu(lambda: [self._client(url) for url in self.config.endpoints])
            )
        clients = await asyncio.shield(building)
        self._by_loop[loop] = clients
        self._building.pop(loop, None)
        return clients

    def _client(self, base_url: str) -> Any:  # ChatOpenAI
        import httpx

        cfg = self.config
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        extra: dict[str, object] = dict(cfg.extra_body)
        if cfg.repetition_penalty is not None:
            extra["repetition_penalty"] = cfg.repetition_penalty
        if cfg.disable_thinking:
            extra["chat_template_kwargs"] = {"enable_thinking": False}
        return _chat_openai_class()(
            max_tokens_field=cfg.max_tokens_field,
            model=cfg.name,
            base_url=base_url,
            api_key=key or "EMPTY",
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=cfg.max_tokens,
            timeout=cfg.timeout,
            max_retries=0,  # retries are ours: counted, with backoff, rotating over replicas
            extra_body=extra or None,
            http_async_client=httpx.AsyncClient(
                timeout=cfg.timeout,
                limits=httpx.Limits(max_connections=max(100, self.connections),
                                    max_keepalive_connections=self.connections),
            ),
        )

    async def generate(self, messages: Messages, *, max_tokens: int | None, top_logprobs: int) -> Completion:
        kwargs: dict[str, object] = {}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if top_logprobs:
            kwargs.update(logprobs=True, top_logprobs=top_logprobs)
        if self.config.no_think_suffix:
            messages = with_no_think_suffix(messages)
        cfg = self.config
        attempt = 0
        clients = await self._clients()
        while True:
            index = next(self._next)
            client = clients[index]
            try:
                message = await (client.bind(**kwargs) if kwargs else client).ainvoke(messages)
            except Exception as exc:
                if not is_retryable(exc) or attempt >= cfg.max_retries:
                    raise LLMRequestError(cfg.name, cfg.endpoints[index], attempt + 1, exc) from exc
                await asyncio.sleep(backoff_delay(attempt, cfg.retry_base_delay, cfg.retry_max_delay, exc))
                attempt += 1
                continue
            completion = self._completion(message, index, attempt)
            if not completion.text.strip() and attempt < cfg.max_retries:  # HTTP 200, no text: a server glitch
                await asyncio.sleep(backoff_delay(attempt, cfg.retry_base_delay, cfg.retry_max_delay, None))
                attempt += 1
                continue
            return completion

    def _completion(self, message: Any, index: int, retries: int) -> Completion:
        raw = message.content if isinstance(message.content, str) else str(message.content)
        usage = message.usage_metadata or {}
        return Completion(
            text=strip_thinking(raw),
            raw_text=raw,
            logprobs=_parse_logprobs(message.response_metadata.get("logprobs")),
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
            model=self.config.name,
            endpoint=self.config.endpoints[index],
            retries=retries,
        )


@functools.cache
def _chat_openai_class() -> type:
    """ChatOpenAI that can send the limit as ``max_tokens``: langchain-openai always renames it to
    ``max_completion_tokens``, which llama-cpp-python's server (and older vLLM) silently ignore."""
    from langchain_openai import ChatOpenAI

    class CompatChatOpenAI(ChatOpenAI):  # type: ignore[misc]
        max_tokens_field: str = "max_tokens"

        def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            if self.max_tokens_field == "max_tokens" and "max_completion_tokens" in payload:
                payload["max_tokens"] = payload.pop("max_completion_tokens")
            return payload

    return CompatChatOpenAI


def _parse_logprobs(payload: object) -> list[TokenLogprob] | None:
    if not isinstance(payload, dict) or not payload.get("content"):
        return None
    tokens = []
    for item in payload["content"]:
        top = [TopLogprob(token=t["token"], logprob=t["logprob"]) for t in item.get("top_logprobs") or []]
        tokens.append(TokenLogprob(token=item["token"], logprob=item["logprob"], top=top))
    return tokens


@dataclass(frozen=True)
class _Request:
    backend: ChatBackend
    messages: Messages
    max_tokens: int | None
    top_logprobs: int
    accept: Accept | None
    priority: int


@dataclass
class _LoopState:
    semaphore: PrioritySemaphore
    inflight: dict[str, asyncio.Future[Completion]] = field(default_factory=dict)


class LLM:
    """Role-aware client: one global limit on in-flight requests, optional response cache, per-role usage."""

    def __init__(
        self,
        backends: dict[str, ChatBackend],
        max_concurrency: int = 4,
        cache: ResponseCache | None = None,
        servers: list[LocalServer] | None = None,
    ) -> None:
        self.backends = backends
        self.max_concurrency = max_concurrency
        self.usage = Usage()
        self.listeners: list[Callable[[str, Completion], None]] = []
        self.cache = cache
        self.servers = list(servers or [])
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )

    def _state(self) -> _LoopState:
        """The semaphore and in-flight table of the running event loop (a client may outlive one loop)."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            state = self._loops[loop] = _LoopState(PrioritySemaphore(self.max_concurrency))
        return state

    @property
    def semaphore(self) -> PrioritySemaphore:
        """The global in-flight limit (per event loop)."""
        return self._state().semaphore

    @property
    def _inflight(self) -> dict[str, asyncio.Future[Completion]]:
        return self._state().inflight

    @classmethod
    def from_config(cls, config: RunConfig, *, cache: bool = True, start_local: bool = True) -> LLM:
        """Backends for every role of the config. A model with ``local:`` and no ``endpoints`` gets the bundled
        llama.cpp server, started here once per local model and shared by the roles that name it (stopped by
        :meth:`close` or at interpreter exit). ``cache`` puts the response cache at ``<cache_dir>/llm.sqlite``."""
        from ruwikibench.models.local_server import acquire_server, local_identity

        servers: dict[str, LocalServer] = {}
        backends: dict[str, ChatBackend] = {}
        try:
            for role, model in config.models.items():
                extra = local_identity(model.local) if model.local else None
                if model.local and not model.endpoints:
                    if not start_local:
                        raise ValueError(
                            f"model {model.name!r} of role {role!r} is local but start_local=False"
                        )
                    if model.local not in servers:
                        servers[model.local] = acquire_server(model.local)
                    model = model.model_copy(update={"endpoints": [servers[model.local].base_url]})
                backends[role] = OpenAIBackend(model, identity_extra=extra,
                                               connections=max(32, config.max_concurrency))
        except BaseException:
            _release_all(servers.values())
            raise
        response_cache = ResponseCache(default_cache_path(config)) if cache else None
        return cls(backends, config.max_concurrency, cache=response_cache, servers=list(servers.values()))

    def backend(self, role: str) -> ChatBackend:
        served_by = role_served_by(role, self.backends)
        if served_by is None:
            raise KeyError(f"no chat model for role {role!r}")
        return self.backends[served_by]

    async def prepare(self) -> None:
        """Build every backend's HTTP clients now (on the CPU pool), so the first requests of a run do not wait
        for them."""
        await asyncio.gather(*(prepare() for b in self.backends.values() if (prepare := getattr(b, "prepare", None))))

    async def complete(
        self,
        role: str,
        prompt: str | Messages,
        *,
        max_tokens: int | None = None,
        top_logprobs: int = 0,
        accept: Accept | None = None,
        priority: int = Priority.CHAIN,
    ) -> Completion:
        """One chat completion for ``role``; from the cache when an identical request was answered before.

        ``accept(completion)`` says whether the answer is usable: only accepted answers are cached (a rejected one
        is still returned). An empty answer raises :class:`EmptyAnswer`. ``priority``: when every slot is taken,
        waiting requests with a smaller number are sent first (:class:`Priority`: leaf calls nothing waits for
        pass ``Priority.LEAF``)."""
        request = _Request(self.backend(role), as_messages(prompt), max_tokens, top_logprobs, accept, priority)
        try:
            completion = await self._cached_or_sent(request)
        except Exception as exc:
            self.usage.fail(role, exc)
            raise
        self.usage.add(role, completion)
        for listener in self.listeners:
            listener(role, completion)
        return completion

    async def _cached_or_sent(self, request: _Request) -> Completion:
        identity = getattr(request.backend, "identity", None)
        if self.cache is None or identity is None:
            return await self._send(request)
        key = request_key(identity(), request.messages, request.max_tokens, request.top_logprobs)
        hit = self.cache.get(key)
        if hit is not None and hit.text.strip() and (request.accept is None or request.accept(hit)):
            return hit
        inflight = self._inflight
        running = inflight.get(key)
        if running is not None:
            shared = await asyncio.shield(running)
            return shared.model_copy(update={"cached": True, "retries": 0})
        task = asyncio.ensure_future(self._send_and_store(key, request))
        inflight[key] = task
        task.add_done_callback(lambda done: _settle(inflight, key, done))
        return await asyncio.shield(task)

    async def _send_and_store(self, key: str, request: _Request) -> Completion:
        completion = await self._send(request)
        if self.cache is not None and (request.accept is None or request.accept(completion)):
            self.cache.put(key, completion)
        return completion

    async def _send(self, request: _Request) -> Completion:
        async with self._state().semaphore.slot(request.priority):
            completion = await request.backend.generate(
                request.messages, max_tokens=request.max_tokens, top_logprobs=request.top_logprobs
            )
        if not completion.text.strip():
            where = f" at {completion.endpoint}" if completion.endpoint else ""
            raise EmptyAnswer(f"model {completion.model or '?'!r}{where}: empty answer (no text in the reply)")
        return completion

    def close(self) -> None:
        """Stop the local servers this client started and close the cache."""
        _release_all(self.servers)
        self.servers = []
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _release_all(servers: Any) -> None:
    from ruwikibench.models.local_server import release_server

    for server in list(servers):
        release_server(server)


def default_cache_path(config: RunConfig) -> Path:
    """Where :meth:`LLM.from_config` keeps the response cache."""
    return config.cache_path / "llm.sqlite"


def _settle(inflight: dict[str, asyncio.Future[Completion]], key: str, done: asyncio.Future[Completion]) -> None:
    """Forget a finished shared request; its exception counts as retrieved, since every waiter already got it
    or was cancelled (the shield keeps the request going; nobody is left to log it as 'never retrieved')."""
    inflight.pop(key, None)
    if not done.cancelled():
        done.exception()
