"""The LLM client the nodes use: role -> backend, one global concurrency limit, token accounting.

Nodes call ``await llm.complete(role, prompt_or_messages, top_logprobs=…)``. Backends are OpenAI-compatible
endpoints (:class:`OpenAIBackend`, through langchain-openai's ChatOpenAI) or a scripted fake in tests.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from ruwikibench.config import ModelConfig, RunConfig
from ruwikibench.models.types import ChatBackend, Completion, Messages, TokenLogprob, TopLogprob

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)


def strip_thinking(text: str) -> str:
    """Remove ``<think>…</think>`` blocks together with their content (an unclosed block runs to the end)."""
    return _THINK.sub("", text).strip()


@dataclass
class RoleUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0


@dataclass
class Usage:
    by_role: dict[str, RoleUsage] = field(default_factory=lambda: defaultdict(RoleUsage))

    def add(self, role: str, completion: Completion) -> None:
        usage = self.by_role[role]
        usage.calls += 1
        usage.prompt_tokens += completion.prompt_tokens
        usage.completion_tokens += completion.completion_tokens
        usage.cache_hits += int(completion.cached)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {role: vars(u).copy() for role, u in sorted(self.by_role.items())}


def as_messages(prompt: str | Messages) -> Messages:
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt


class OpenAIBackend:
    """An OpenAI-compatible endpoint (or several replicas, used round-robin) through ChatOpenAI."""

    def __init__(self, config: ModelConfig) -> None:
        if not config.endpoints:
            raise ValueError(f"model {config.name!r}: no endpoint configured (set 'endpoints' or 'local')")
        self.config = config
        self._clients = [self._client(url) for url in config.endpoints]
        self._next = itertools.cycle(range(len(self._clients)))

    def _client(self, base_url: str):  # -> ChatOpenAI
        from langchain_openai import ChatOpenAI

        cfg = self.config
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        extra: dict[str, object] = dict(cfg.extra_body)
        if cfg.repetition_penalty is not None:
            extra["repetition_penalty"] = cfg.repetition_penalty
        if cfg.disable_thinking:
            extra["chat_template_kwargs"] = {"enable_thinking": False}
        return ChatOpenAI(
            model=cfg.name,
            base_url=base_url,
            api_key=key or "EMPTY",
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            max_tokens=cfg.max_tokens,
            timeout=cfg.timeout,
            max_retries=cfg.max_retries,
            extra_body=extra or None,
        )

    async def generate(self, messages: Messages, *, max_tokens: int | None, top_logprobs: int) -> Completion:
        index = next(self._next)
        client = self._clients[index]
        kwargs: dict[str, object] = {}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        if top_logprobs:
            kwargs.update(logprobs=True, top_logprobs=top_logprobs)
        if self.config.no_think_suffix:
            messages = [*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + " /no_think"}]
        message = await client.bind(**kwargs).ainvoke(messages) if kwargs else await client.ainvoke(messages)
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
        )


def _parse_logprobs(payload: object) -> list[TokenLogprob] | None:
    if not isinstance(payload, dict) or not payload.get("content"):
        return None
    tokens = []
    for item in payload["content"]:
        top = [TopLogprob(token=t["token"], logprob=t["logprob"]) for t in item.get("top_logprobs") or []]
        tokens.append(TokenLogprob(token=item["token"], logprob=item["logprob"], top=top))
    return tokens


class LLM:
    """Role-aware client with one global limit on in-flight requests and per-role usage."""

    def __init__(self, backends: dict[str, ChatBackend], max_concurrency: int = 4) -> None:
        self.backends = backends
        self.semaphore = asyncio.Semaphore(max_concurrency)
        self.usage = Usage()
        self.listeners: list[Callable[[str, Completion], None]] = []

    @classmethod
    def from_config(cls, config: RunConfig) -> LLM:
        backends: dict[str, ChatBackend] = {}
        for role in config.models:
            backends[role] = OpenAIBackend(config.models[role])
        return cls(backends, config.max_concurrency)

    def backend(self, role: str) -> ChatBackend:
        if role in self.backends:
            return self.backends[role]
        for fallback in ("writer", "outline", "ranking", "query"):
            if fallback in self.backends:
                return self.backends[fallback]
        raise KeyError(f"no chat model for role {role!r}")

    async def complete(
        self, role: str, prompt: str | Messages, *, max_tokens: int | None = None, top_logprobs: int = 0
    ) -> Completion:
        backend = self.backend(role)
        async with self.semaphore:
            completion = await backend.generate(as_messages(prompt), max_tokens=max_tokens, top_logprobs=top_logprobs)
        self.usage.add(role, completion)
        for listener in self.listeners:
            listener(role, completion)
        return completion
