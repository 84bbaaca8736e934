"""A semaphore that lets the most urgent waiter in first: the LLM client's limit on in-flight requests.

A run mixes calls that others wait for (a query description unlocks a hundred relevance judgements; a
mini-outline unlocks the merge) with leaf calls nothing waits for (a relevance judgement). With a plain FIFO
semaphore the hundred leaves queued first hold every slot while the chains behind them stand still, and the
run ends a chain-length later than it needs to. Here a waiter with a smaller ``priority`` number gets the next
free slot; equal priorities keep their arrival order.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from enum import IntEnum


class Priority(IntEnum):
    """Smaller goes first."""

    CHAIN = 0  # other calls wait for this one's answer (the default)
    LEAF = 1  # nothing waits for this answer but the unit's end (relevance judgements)


class PrioritySemaphore:
    """``value`` slots; ``acquire(priority)`` waits for one, most urgent waiter first, FIFO among equals."""

    def __init__(self, value: int) -> None:
        if value < 1:
            raise ValueError(f"a semaphore needs at least one slot, got {value}")
        self._free = value
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def locked(self) -> bool:
        return self._free == 0

    @property
    def waiting(self) -> int:
        return sum(1 for *_, future in self._waiters if not future.done())

    async def acquire(self, priority: int = Priority.CHAIN) -> None:
        if self._free > 0:  # free slots exist only while no live waiter does (release hands slots to waiters)
            self._free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (int(priority), next(self._order), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():  # the slot was handed over as we were cancelled
                self.release()
            raise

    def release(self) -> None:
        """Hand the slot to the most urgent live waiter, or free it."""
        while self._waiters:
            *_, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                return
        self._free += 1

    def slot(self, priority: int = Priority.CHAIN) -> _Slot:
        """``async with semaphore.slot(priority): …``"""
        return _Slot(self, priority)

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        self.release()


class _Slot:
    def __init__(self, semaphore: PrioritySemaphore, priority: int) -> None:
        self._semaphore = semaphore
        self._priority = priority

    async def __aenter__(self) -> None:
        await self._semaphore.acquire(self._priority)

    async def __aexit__(self, *exc: object) -> None:
        self._semaphore.release()
