"""Which units may run at once: their fan-outs (LLM requests a unit may have waiting at the same time) must
fit a budget, in the order the units come.

A ranking unit judges its whole candidate pool at once (one request per candidate: ~380 at the paper's 129
snippets per article and pool ratio 3), a section unit asks one or two questions at a time. Started as many at
once as requests may be in flight (256), ranking units put ~32,000 judgements in the LLM client's queue at 285
articles, each a LangGraph task with its prompt: 4.1 GB (bench/scale.py), for no gain in throughput — a few
units' judgements keep every request slot busy. Units therefore take
:attr:`~ruwikibench.stage.contract.Unit.fan_out` slots of a budget (:func:`fan_out_budget`: 8 ×
``max_concurrency``, at least 4,096; a unit larger than the budget takes all of it), first come, first served.
The floor keeps small runs as they were (the sample's eight ranking units of up to ~600 candidates all start
at once at ``max_concurrency`` 64): a unit that waits holds up every unit behind it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

FAN_OUT_PER_SLOT = 8
"""Requests that the units running at once may have waiting, per request slot (``max_concurrency``)."""
FAN_OUT_FLOOR = 4096
"""The smallest budget: ~4,000 waiting judgements hold a few hundred MB (a LangGraph task, prompt and request
each)."""


def fan_out_budget(max_concurrency: int) -> int:
    return max(FAN_OUT_FLOOR, FAN_OUT_PER_SLOT * max_concurrency)


class FanOutSlots:
    """``capacity`` slots taken ``weight`` at a time, strictly in arrival order (no unit overtakes a waiting
    one)."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"fan-out budget must be at least 1, got {capacity}")
        self.capacity = capacity
        self.used = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    @asynccontextmanager
    async def slot(self, weight: int) -> AsyncIterator[None]:
        taken = await self.acquire(weight)
        try:
            yield
        finally:
            self.release(taken)

    async def acquire(self, weight: int) -> int:
        """Wait for ``weight`` slots (capped at the capacity); returns how many were taken."""
        weight = max(1, min(weight, self.capacity))
        if not self._waiters and self.used + weight <= self.capacity:
            self.used += weight
            return weight
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((weight, future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # handed over as we were cancelled
                self.release(weight)
            raise
        return weight

    def release(self, weight: int) -> None:
        self.used -= weight
        while self._waiters:
            wanted, future = self._waiters[0]
            if future.done():  # cancelled while waiting
                self._waiters.popleft()
                continue
            if self.used + wanted > self.capacity:
                return
            self._waiters.popleft()
            self.used += wanted
            future.set_result(None)
