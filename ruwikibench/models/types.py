"""Shared types of the model layer: completions with token log-probabilities."""

from __future__ import annotations

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
    """One chat answer. ``text`` has reasoning (<think>…</think>) removed; ``raw_text`` is as received."""

    text: str
    raw_text: str = ""
    logprobs: list[TokenLogprob] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    endpoint: str | None = None
    cached: bool = False


class ChatBackend(Protocol):
    """Anything that turns messages into a Completion (an OpenAI-compatible endpoint, a scripted fake)."""

    async def generate(self, messages: Messages, *, max_tokens: int | None, top_logprobs: int) -> Completion: ...
