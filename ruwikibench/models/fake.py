"""A scripted fake chat backend for tests: answers come from a function of the messages, logprobs optional."""

from __future__ import annotations

import math
from collections.abc import Callable

from ruwikibench.models.types import Completion, Messages, TokenLogprob, TopLogprob

Responder = Callable[[Messages], "str | Completion"]


def yes_no_completion(p_yes: float, answer: str | None = None) -> Completion:
    """A completion whose first token is 'Да'/'Нет' with the given probability of 'Да' in its top logprobs."""
    p_yes = min(max(p_yes, 1e-6), 1 - 1e-6)
    answer = answer or ("Да" if p_yes >= 0.5 else "Нет")
    top = [
        TopLogprob(token="Да", logprob=math.log(p_yes)),
        TopLogprob(token="Нет", logprob=math.log(1 - p_yes)),
    ]
    first = TokenLogprob(token=answer, logprob=math.log(p_yes if answer == "Да" else 1 - p_yes), top=top)
    return Completion(text=answer, raw_text=answer, logprobs=[first], prompt_tokens=10, completion_tokens=1)


class ScriptedChat:
    """Calls ``responder(messages)``; a str answer becomes a Completion without logprobs. Records every
    call."""

    def __init__(self, responder: Responder, name: str = "fake") -> None:
        self.responder = responder
        self.name = name
        self.calls: list[Messages] = []

    def identity(self) -> dict[str, object]:
        """Cache identity (so the response cache can be tested with the fake)."""
        return {"backend": "scripted", "name": self.name}

    async def generate(self, messages: Messages, *, max_tokens: int | None, top_logprobs: int) -> Completion:
        self.calls.append(messages)
        answer = self.responder(messages)
        if isinstance(answer, Completion):
            return answer.model_copy(update={"model": self.name})
        words = sum(len(m["content"].split()) for m in messages)
        return Completion(
            text=answer,
            raw_text=answer,
            model=self.name,
            prompt_tokens=words,
            completion_tokens=len(answer.split()),
        )
