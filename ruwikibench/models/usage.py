"""Per-role usage of the LLM client: calls, tokens of requests actually sent, cache hits, retries, failures,
and the seconds calls waited for a concurrency slot (``queued_s``) and were served after it
(``service_s``)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ruwikibench.models.types import Completion


@dataclass
class RoleUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    retries: int = 0
    failures: int = 0
    queued_s: float = 0.0  # waiting for a concurrency slot of the client, summed over calls
    service_s: float = 0.0  # from getting the slot to the answer, summed over calls


@dataclass
class Usage:
    """Per-role counters. Tokens count only requests actually sent (cache hits cost nothing)."""

    by_role: dict[str, RoleUsage] = field(default_factory=lambda: defaultdict(RoleUsage))

    def add(self, role: str, completion: Completion) -> None:
        usage = self.by_role[role]
        usage.calls += 1
        usage.retries += completion.retries
        usage.queued_s = round(usage.queued_s + completion.queued_s, 4)
        usage.service_s = round(usage.service_s + completion.service_s, 4)
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

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {role: vars(u).copy() for role, u in sorted(self.by_role.items())}

    def total(self) -> dict[str, float]:
        out: dict[str, float] = vars(RoleUsage()).copy()
        for usage in self.by_role.values():
            for name, value in vars(usage).items():
                out[name] += value
        return out
