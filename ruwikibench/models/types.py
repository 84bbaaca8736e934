"""Shared types of the model layer: completions with token log-probabilities."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Protocol

from pydantic import BaseModel, Field

Messages = list[dict[str, str]]


class TopLogprob(BaseModel):
    token: str
    logprob: float


class TokenLogprob(BaseModel):
    token: str
    logprob: float
    top: list[TopLogprob] = Field(default_factory=list)


class Completion(BaseModel):
    """One chat answer. ``text`` has reasoning (<think>…</think>) removed; ``raw_text`` is as received.

    ``cached`` is True when the answer came from the response cache (or from an identical request that was
    in flight at the same time); ``retries`` counts the retried attempts of the request that produced it.
    ``queued_s`` is how long the call waited for a concurrency slot of the client, ``service_s`` how long it
    then took to be answered (retries included); both are 0 for a cached answer.
    """

    text: str
    raw_text: str = ""
    logprobs: list[TokenLogprob] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    endpoint: str | None = None
    cached: bool = False
    retries: int = 0
    queued_s: float = 0.0
    service_s: float = 0.0

    def answer_logprobs(self) -> list[TokenLogprob] | None:
        """The token logprobs after any ``<think>…</think>`` block (all of them when there is none).

        An unclosed block leaves no answer tokens (an empty list); no logprobs at all gives None.
        """
        if self.logprobs is None:
            return None
        if "<think>" not in self.raw_text and "</think>" not in self.raw_text:
            return self.logprobs
        seen = ""
        for index, token in enumerate(self.logprobs):
            seen += token.token
            if "</think>" in seen:
                return self.logprobs[index + 1 :]
        return []


class ChatBackend(Protocol):
    """Anything that turns messages into a Completion (an OpenAI-compatible endpoint, a scripted fake).

    A backend that can tell when a request goes out — to the HTTP transport, which writes it — says so with
    ``reports_sent = True`` and then calls :data:`REQUEST_SENT`'s callback (when one is set) at that
    moment."""

    async def generate(
        self, messages: Messages, *, max_tokens: int | None, top_logprobs: int
    ) -> Completion: ...


REQUEST_SENT: ContextVar[Callable[[], None] | None] = ContextVar("ruwikibench_request_sent", default=None)
"""Set by :class:`~ruwikibench.models.llm.LLM` around a request while the event loop's first request is not
out: the callback marks it out (:meth:`~ruwikibench.models.llm.LLM.first_request_sent`). A backend with
``reports_sent`` calls it once the request goes to its HTTP transport; for any other backend the request
counts as out when it is handed over."""
