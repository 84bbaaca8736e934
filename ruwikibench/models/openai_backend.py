"""An OpenAI-compatible endpoint (vLLM, a hosted API, the local llama.cpp server) through langchain-openai's
ChatOpenAI: one backend of the :class:`~ruwikibench.models.llm.LLM` client per role.

Retries 429 / 408 / 409 / 5xx / connection errors / timeouts with exponential backoff (``retry_base_delay`` ·
2^n with jitter, capped by ``retry_max_delay``; a server's Retry-After wins), rotating over replica endpoints;
the SDK's own retries are off so every attempt is counted. ``<think>`` blocks are removed from the text (kept
in ``raw_text``).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import itertools
import os
import re
import weakref
from collections.abc import AsyncIterator
from typing import Any

from ruwikibench.conf.config import ConfigError, ModelConfig
from ruwikibench.conf.secrets import query_of, register, register_model, without_credentials
from ruwikibench.models.retry import LLMRequestError, backoff_delay, is_retryable
from ruwikibench.models.types import REQUEST_SENT, Completion, Messages, TokenLogprob, TopLogprob
from ruwikibench.runtime.executors import run_cpu

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)


def strip_thinking(text: str) -> str:
    """Remove ``<think>…</think>`` blocks together with their content (an unclosed block runs to the end).

    A closing tag without an opening one (chat templates that put ``<think>`` into the prompt) drops
    everything before it.
    """
    text = _THINK.sub("", text)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    return text.strip()


def with_no_think_suffix(messages: Messages) -> Messages:
    """Append `` /no_think`` to the last user message (Qwen3-style soft switch)."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            updated = {**messages[index], "content": messages[index]["content"] + " /no_think"}
            return [*messages[:index], updated, *messages[index + 1 :]]
    return messages


class OpenAIBackend:
    """An OpenAI-compatible endpoint (or several replicas, used round-robin) through ChatOpenAI."""

    reports_sent = (
        True  # calls REQUEST_SENT's callback once a request reaches the HTTP transport (_request_sent)
    )

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
        register_model(config.endpoints, config.headers)
        self.config = config
        self.connections = max(1, connections)
        self._identity = {**config.identity(), **(identity_extra or {})}
        self._next = itertools.cycle(range(len(config.endpoints)))
        # one set of clients per event loop: a connection pool cannot outlive the loop it was made in
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[Any]] = (
            weakref.WeakKeyDictionary()
        )
        self._closers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, AsyncIterator[None]] = (
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
        """This loop's clients, one per endpoint, made once on the CPU pool (importing langchain-openai and
        building the clients takes seconds of CPU: on the loop it would stall every other request)."""
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
        if loop not in self._by_loop:
            self._by_loop[loop] = clients
            self._building.pop(loop, None)
            self._closers[loop] = closer = _close_when_loop_ends(clients)
            await anext(closer)
        return self._by_loop[loop]

    async def aclose(self) -> None:
        """Close this event loop's clients (their connections); the next request makes new ones."""
        loop = asyncio.get_running_loop()
        self._by_loop.pop(loop, None)
        closer = self._closers.pop(loop, None)
        if closer is not None:
            await closer.aclose()  # type: ignore[attr-defined]

    def _client(self, base_url: str) -> Any:  # ChatOpenAI
        """One endpoint's client, on aiohttp (:func:`aiohttp_client`) with :attr:`connections` kept alive."""
        cfg = self.config
        key = os.environ.get(cfg.api_key_env, "") if cfg.api_key_env else ""
        register(key)
        extra: dict[str, object] = dict(cfg.extra_body)
        if cfg.repetition_penalty is not None:
            extra["repetition_penalty"] = cfg.repetition_penalty
        if cfg.disable_thinking:
            extra["chat_template_kwargs"] = {"enable_thinking": False}
        base_url, headers, query = _connection(base_url, cfg.headers)
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
            default_headers=headers or None,
            default_query=query or None,
            http_async_client=aiohttp_client(cfg.timeout, self.connections),
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
                message = await client.chat(messages, **kwargs)
            except Exception as exc:
                if not is_retryable(exc) or attempt >= cfg.max_retries:
                    raise LLMRequestError(cfg.name, cfg.endpoints[index], attempt + 1, exc) from exc
                await asyncio.sleep(backoff_delay(attempt, cfg.retry_base_delay, cfg.retry_max_delay, exc))
                attempt += 1
                continue
            completion = self._completion(message, index, attempt)
            if (
                not completion.text.strip() and attempt < cfg.max_retries
            ):  # HTTP 200, no text: a server glitch
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
            logprobs=_parse_logprobs(message.response_metadata.get("logprobs")),  # chat() puts them there too
            prompt_tokens=int(usage.get("input_tokens", 0)),
            completion_tokens=int(usage.get("output_tokens", 0)),
            model=self.config.name,
            endpoint=self.config.endpoints[index],
            retries=retries,
        )


def _connection(url: str, headers: dict[str, str]) -> tuple[str, dict[str, str], dict[str, str]]:
    """An endpoint URL as the client takes it: ``user:pass@`` becomes an ``Authorization: Basic`` header (the
    HTTP transport refuses both at once), the query string becomes the client's default query (kept on every
    request's URL rather than glued to the path)."""
    url, credentials = without_credentials(url)
    url, query = query_of(url)
    headers = dict(headers)
    if credentials is not None:
        token = base64.b64encode(credentials.encode("utf-8")).decode("ascii")
        register(token)
        headers["Authorization"] = f"Basic {token}"
    return url, headers, query


async def _close_when_loop_ends(clients: list[Any]) -> AsyncIterator[None]:
    """Suspended until its loop shuts down: ``asyncio.run`` closes every async generator still open in the
    loop (``loop.shutdown_asyncgens``) before closing it, so the aiohttp sessions are closed inside their own
    loop even when nobody calls :meth:`OpenAIBackend.aclose`."""
    try:
        yield
    finally:
        await asyncio.gather(
            *(client.http_async_client.aclose() for client in clients), return_exceptions=True
        )


def aiohttp_client(timeout: float, connections: int) -> Any:
    """The openai SDK's aiohttp transport (``openai[aiohttp]``): ``connections`` kept alive, at least 100 open
    at once.

    At 256 requests in flight against bench/endpoint.py (``python bench/llm_client.py``) httpx with httpcore
    spent ~3 ms of the event loop per request and aiohttp ~0.2 ms; a whole ChatOpenAI call went from 6.3 to
    2.8 ms. httpcore's pool also walked all its connections for every request it assigned (quadratic in its
    size)."""
    import openai

    http = _http_library()
    limits = http.Limits(max_connections=max(100, connections), max_keepalive_connections=connections)
    return openai.DefaultAioHttpClient(
        timeout=timeout, limits=limits, event_hooks={"request": [_request_sent]}, verify=shared_ssl_context()
    )


@functools.cache
def shared_ssl_context() -> Any:  # ssl.SSLContext
    """The TLS context every client of the process shares, made as the SDK's transport makes its own
    (certifi's bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``): loading the CA bundle takes 20–25 ms of CPU
    with the GIL held, once per client otherwise — for every role's client, ``http://`` endpoints included."""
    return _http_library().create_ssl_context(verify=True, trust_env=True)


def _http_library() -> Any:
    """The HTTP library the openai SDK builds on: httpx2 from openai 3 on, httpx before."""
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - older openai releases build on httpx
        import httpx

        return httpx


async def _request_sent(request: Any) -> None:
    """The HTTP client's request hook, called as the request goes to the transport (aiohttp writes it at
    once): tells the LLM waiting for its first request to be out (:data:`REQUEST_SENT`), after langchain and
    the SDK built it."""
    notify = REQUEST_SENT.get()
    if notify is not None:
        notify()


def tracing_enabled() -> bool:
    """Whether LangSmith tracing is switched on in the environment (``LANGSMITH_TRACING`` or the older
    ``LANGCHAIN_TRACING_V2``): then every call goes through ``ainvoke``, whose callbacks record the trace."""
    return any(
        os.environ.get(name, "").strip().lower() in {"1", "true", "yes"}
        for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING")
    )


@functools.cache
def _chat_openai_class() -> type:
    """ChatOpenAI that can send the limit as ``max_tokens`` (langchain-openai always renames it to
    ``max_completion_tokens``, which llama-cpp-python's server and older vLLM silently ignore), with
    :meth:`chat`, a plain chat completion without langchain's per-call run machinery."""
    from langchain_openai import ChatOpenAI
    from pydantic import PrivateAttr

    class CompatChatOpenAI(ChatOpenAI):
        max_tokens_field: str = "max_tokens"
        _templates: dict[tuple, dict | None] = PrivateAttr(default_factory=dict)
        _post: Any = PrivateAttr(default=None)  # ChatPost: the SDK's request built once (models/chat_post.py)

        def _payload(self, messages: Messages, kwargs: dict[str, Any]) -> dict:
            """:meth:`_get_request_payload` of ``messages``, from a template made once per set of ``kwargs``
            when every message is plain text: langchain's conversion of those (dict → message → dict) gives
            them back as they were, which the template's making checks on a probe conversation (a model whose
            payload rewrites them, e.g. system → developer, always takes the full conversion)."""
            key = tuple(sorted(kwargs.items()))
            if key not in self._templates:
                full = self._get_request_payload(_PROBE, **kwargs)
                same = full.get("messages") == _PROBE
                self._templates[key] = {k: v for k, v in full.items() if k != "messages"} if same else None
            template = self._templates[key]
            if template is None or not all(_plain(message) for message in messages):
                return self._get_request_payload(messages, **kwargs)
            return {**template, "messages": [dict(message) for message in messages]}

        def _get_request_payload(self, input_: Any, *, stop: list[str] | None = None, **kwargs: Any) -> dict:
            payload = super()._get_request_payload(input_, stop=stop, **kwargs)
            if self.max_tokens_field == "max_tokens" and "max_completion_tokens" in payload:
                payload["max_tokens"] = payload.pop("max_completion_tokens")
            return payload

        async def chat(self, messages: Messages, **kwargs: Any) -> Any:  # -> AIMessage
            """The answer to ``messages`` (``kwargs``: request parameters, as ``bind`` takes them), as
            ``ainvoke`` returns it, logprobs in ``response_metadata``.

            With tracing off, ChatOpenAI's own request payload is POSTed to ``/chat/completions`` on its
            client and its own result parser reads the answer, skipping what a benchmark does not use, at ~0.8
            ms of CPU per call (``python bench/llm_client.py``: 1.7 → 0.9 ms): the callback managers of
            ``ainvoke``, the SDK re-walking the finished payload against its typed schema, and the thread hop
            of the parser. Anything but plain chat completions (structured output, the Responses API) takes
            ``ainvoke``."""
            payload = self._payload(messages, kwargs)
            if tracing_enabled() or "response_format" in payload or self._use_responses_api(payload):
                return await (self.bind(**kwargs) if kwargs else self).ainvoke(messages)
            extra = {name: payload.pop(name, None) for name in ("extra_body", "extra_headers", "extra_query")}
            if self._post is None:
                from ruwikibench.models.chat_post import ChatPost

                self._post = ChatPost(self.root_async_client)
            try:
                response = await self._post.post(payload, **extra)
            except Exception as exc:
                _raise_as_chat_openai_does(exc)
                raise
            generation = self._create_chat_result(response).generations[0]
            message = generation.message
            message.response_metadata = {**(generation.generation_info or {}), **message.response_metadata}
            return message

    return CompatChatOpenAI


_PROBE = [
    {"content": "s", "role": "system"},
    {"content": "u", "role": "user"},
    {"content": "a", "role": "assistant"},
]


def _plain(message: dict[str, Any]) -> bool:
    """A message of text only, in a role every chat endpoint knows."""
    return (
        message.keys() == {"role", "content"}
        and isinstance(message["content"], str)
        and message["role"] in ("system", "user", "assistant")
    )


def _raise_as_chat_openai_does(exc: BaseException) -> None:
    """Raise the langchain-openai error ChatOpenAI turns ``exc`` into (context overflow, authentication, …),
    if it turns it into one; return otherwise."""
    import openai
    from langchain_openai.chat_models import base

    if isinstance(exc, openai.BadRequestError) and hasattr(base, "_handle_openai_bad_request"):
        base._handle_openai_bad_request(exc)
    elif isinstance(exc, openai.APIError) and hasattr(base, "_handle_openai_api_error"):
        base._handle_openai_api_error(exc)


def _parse_logprobs(payload: object) -> list[TokenLogprob] | None:
    if not isinstance(payload, dict) or not payload.get("content"):
        return None
    tokens = []
    for item in payload["content"]:
        top = [TopLogprob(token=t["token"], logprob=t["logprob"]) for t in item.get("top_logprobs") or []]
        tokens.append(TokenLogprob(token=item["token"], logprob=item["logprob"], top=top))
    return tokens
