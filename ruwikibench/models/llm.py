"""The LLM client the nodes use: role -> backend, one global concurrency limit, a response cache, usage.

Nodes call ``await llm.complete(role, prompt_or_messages, top_logprobs=…)``. Backends are OpenAI-compatible
endpoints (:class:`OpenAIBackend`, through langchain-openai's ChatOpenAI) or a scripted fake in tests.

* Retries: :class:`~ruwikibench.models.openai_backend.OpenAIBackend` retries with backoff over replicas.
* Scheduling: one global in-flight limit per event loop, a
  :class:`~ruwikibench.models.priority.PrioritySemaphore` (calls that others wait for go before queued leaf
  calls).
* Cache: with a :class:`ResponseCache`, a request identical to an earlier one (same model identity — name and
  every generation parameter — same messages, max_tokens and top_logprobs) is answered from the cache with
  ``cached=True``; identical requests in flight at the same time are sent once. The endpoint URL is NOT part
  of the key: replicas and a restarted server on another port share entries.
* Never cached: an empty answer (HTTP 200 with no text) is retried like a server error and, if it stays empty,
  raises :class:`EmptyAnswer` (counted as a failure); an answer the caller's ``accept`` rejects (e.g. a
  relevance judgement that is neither yes nor no) is returned but not stored, and a cached answer it rejects
  is asked anew, so the next run retries it.
* Usage per role (:mod:`ruwikibench.models.usage`): calls, tokens of requests actually sent, cache hits,
  retries, failures, and the seconds calls waited for a slot (``queued_s``) and were then served
  (``service_s``); each :class:`Completion` carries its own ``queued_s``/``service_s`` (node traces record
  them per node).
* Messages: ``sent_listeners`` get every call's messages with its answer or error (:class:`SentCall`), cached
  answers included (the run directory keeps them: :mod:`ruwikibench.runner.call_capture`).
* Local servers: while a request of a client that started local servers is out, the servers are watched; when
  one exits, the request is cancelled and :class:`~ruwikibench.models.local_server.LocalServerDied` names its
  exit code or signal and its log at once — every later request too — instead of retries against a dead port.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from ruwikibench.conf.config import RunConfig, role_served_by
from ruwikibench.models.cache import CACHED, ResponseCache, request_key
from ruwikibench.models.openai_backend import OpenAIBackend
from ruwikibench.models.priority import Priority, PrioritySemaphore
from ruwikibench.models.types import REQUEST_SENT, ChatBackend, Completion, Messages
from ruwikibench.models.usage import Usage

if TYPE_CHECKING:
    from ruwikibench.models.local_server import LocalServer


class EmptyAnswer(RuntimeError):
    """The endpoint answered with no text (after reasoning is removed): a failed request, never cached."""


Accept = Callable[[Completion], bool]


@dataclass(frozen=True)
class SentCall:
    """One call of :meth:`LLM.complete` as its ``sent_listeners`` see it: the role, the messages as sent and
    the answer (``completion``, a cached one too) or the error the call ended with."""

    role: str
    messages: Messages
    completion: Completion | None
    error: str | None = None


def as_messages(prompt: str | Messages) -> Messages:
    return [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt


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
    sent: asyncio.Event = field(
        default_factory=asyncio.Event
    )  # set when the first request is out (first_request_sent)
    server_gone: asyncio.Task[str] | None = None  # the local servers' watch: ends with the exit line of one


SERVER_POLL_S = 0.25
"""How often the local servers' processes are polled while requests are out."""


async def _watch_servers(servers: Sequence[LocalServer]) -> str:
    """Returns the :meth:`~ruwikibench.models.local_server.LocalServer.exit_line` of the first server to
    exit."""
    while True:
        for server in servers:
            line = server.exit_line(" while the run used it")
            if line is not None:
                return line
        await asyncio.sleep(SERVER_POLL_S)


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
        self.sent_listeners: list[Callable[[SentCall], None]] = []  # every call's messages and outcome
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
        """Backends for every role of the config. A model with ``local:`` and no ``endpoints`` gets the
        bundled llama.cpp server, started here once per local model and shared by the roles that name it
        (stopped by :meth:`close` or at interpreter exit). ``cache`` puts the response cache at
        ``<cache_dir>/llm.sqlite``."""
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
                        servers[model.local] = acquire_server(
                            model.local, **config.local_server.server_options()
                        )
                    model = model.model_copy(update={"endpoints": [servers[model.local].base_url]})
                backends[role] = OpenAIBackend(
                    model, identity_extra=extra, connections=max(32, config.max_concurrency)
                )
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
        """Build every backend's HTTP clients now (on the CPU pool), so the first requests of a run do not
        wait for them."""
        await asyncio.gather(
            *(prepare() for b in self.backends.values() if (prepare := getattr(b, "prepare", None)))
        )

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

        ``accept(completion)`` says whether the answer is usable: only accepted answers are cached (a rejected
        one is still returned). An empty answer raises :class:`EmptyAnswer`. ``priority``: when every slot is
        taken, waiting requests with a smaller number are sent first (:class:`Priority`: leaf calls nothing
        waits for pass ``Priority.LEAF``)."""
        request = _Request(
            self.backend(role), as_messages(prompt), max_tokens, top_logprobs, accept, priority
        )
        try:
            completion = await self._cached_or_sent(request)
        except Exception as exc:
            self.usage.fail(role, exc)
            self._tell_sent(SentCall(role, request.messages, None, f"{type(exc).__name__}: {exc}"))
            raise
        self.usage.add(role, completion)
        for listener in self.listeners:
            listener(role, completion)
        self._tell_sent(SentCall(role, request.messages, completion))
        return completion

    def _tell_sent(self, call: SentCall) -> None:
        for listener in self.sent_listeners:
            listener(call)

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
            return shared.model_copy(update=CACHED)
        task = asyncio.ensure_future(self._send_and_store(key, request))
        inflight[key] = task
        task.add_done_callback(lambda done: _settle(inflight, key, done))
        return await asyncio.shield(task)

    async def _send_and_store(self, key: str, request: _Request) -> Completion:
        completion = await self._send(request)
        if self.cache is not None and (request.accept is None or request.accept(completion)):
            self.cache.put(key, completion)
        return completion

    async def first_request_sent(self) -> None:
        """Returns once this event loop's first request is out — handed to the HTTP transport, for a backend
        that reports it (the OpenAI-compatible one, after langchain and the SDK built the request), else
        handed to the backend — at once if it already is."""
        await self._state().sent.wait()

    async def _send(self, request: _Request) -> Completion:
        asked = time.perf_counter()
        async with self._state().semaphore.slot(request.priority):
            granted = time.perf_counter()
            completion = await self._generate(request)
        completion = completion.model_copy(
            update={
                "queued_s": round(granted - asked, 4),
                "service_s": round(time.perf_counter() - granted, 4),
            }
        )
        if not completion.text.strip():
            where = f" at {completion.endpoint}" if completion.endpoint else ""
            raise EmptyAnswer(
                f"model {completion.model or '?'!r}{where}: empty answer (no text in the reply)"
            )
        return completion

    async def _generate(self, request: _Request) -> Completion:
        """The backend's answer. The loop's first request counts as out (:meth:`first_request_sent`) when it
        goes to the HTTP transport, for a backend that reports that (``reports_sent``), else when it is handed
        over; and at the latest when the backend returns or fails."""
        sent = self._state().sent
        reports = not sent.is_set() and getattr(request.backend, "reports_sent", False)
        token = REQUEST_SENT.set(sent.set) if reports else None
        if not reports:
            sent.set()
        try:
            call = request.backend.generate(
                request.messages, max_tokens=request.max_tokens, top_logprobs=request.top_logprobs
            )
            return await (self._watched(call) if self.servers else call)
        finally:
            if token is not None:
                REQUEST_SENT.reset(token)
            sent.set()

    async def _watched(self, call: Coroutine[Any, Any, Completion]) -> Completion:
        """The backend's answer, unless one of this client's local servers exits first: then the request is
        cancelled and :class:`LocalServerDied` raised with the server's exit line."""
        from ruwikibench.models.local_server import LocalServerDied

        state = self._state()
        if state.server_gone is None:
            state.server_gone = asyncio.ensure_future(_watch_servers(self.servers))
        gone = state.server_gone
        task = asyncio.ensure_future(call)
        try:
            done, _ = await asyncio.wait((task, gone), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not task.done():
                task.cancel()
        if task in done and (task.cancelled() or task.exception() is None):
            return task.result()
        if gone not in done:  # the request failed: a server that just died says so a moment later
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(gone), 2 * SERVER_POLL_S + 0.5)
        if gone.done() and not gone.cancelled():
            failed = task.done() and not task.cancelled()
            raise LocalServerDied(gone.result()) from (task.exception() if failed else None)
        return task.result()

    def close(self) -> None:
        """Stop the local servers this client started and close the cache."""
        _release_all(self.servers)
        self.servers = []
        if self.cache is not None:
            self.cache.close()
            self.cache = None

    async def aclose(self) -> None:
        """:meth:`close`, after closing the backends' connections of this event loop."""
        state = self._loops.get(asyncio.get_running_loop())
        if state is not None and state.server_gone is not None:
            state.server_gone.cancel()
        await asyncio.gather(
            *(close() for b in self.backends.values() if (close := getattr(b, "aclose", None)))
        )
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


def _settle(
    inflight: dict[str, asyncio.Future[Completion]], key: str, done: asyncio.Future[Completion]
) -> None:
    """Forget a finished shared request; its exception counts as retrieved, since every waiter already got it
    or was cancelled (the shield keeps the request going; nobody is left to log it as 'never retrieved')."""
    inflight.pop(key, None)
    if not done.cancelled():
        done.exception()
