"""The priority semaphore: the most urgent waiter first, FIFO among equals, no slot lost to a cancellation."""

import asyncio

import pytest

from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.models.priority import Priority, PrioritySemaphore


async def _hold(semaphore: PrioritySemaphore, release: asyncio.Event) -> None:
    async with semaphore:
        await release.wait()


async def _queue_order(semaphore: PrioritySemaphore, entries: list[tuple[str, int]]) -> list[str]:
    """Fill the one slot, queue ``entries`` in the given order, free the slot: the order they get in."""
    order: list[str] = []
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(semaphore, release))
    await asyncio.sleep(0)

    async def waiter(name: str, priority: int) -> None:
        async with semaphore.slot(priority):
            order.append(name)
            await asyncio.sleep(0)

    tasks = []
    for name, priority in entries:
        tasks.append(asyncio.create_task(waiter(name, priority)))
        await asyncio.sleep(0)  # queued in this order
    release.set()
    await asyncio.gather(holder, *tasks)
    return order


async def test_urgent_waiters_go_first_and_equals_keep_arrival_order() -> None:
    entries = [
        ("leaf1", Priority.LEAF),
        ("leaf2", Priority.LEAF),
        ("chain1", Priority.CHAIN),
        ("leaf3", Priority.LEAF),
        ("chain2", Priority.CHAIN),
    ]
    order = await _queue_order(PrioritySemaphore(1), entries)
    assert order == ["chain1", "chain2", "leaf1", "leaf2", "leaf3"]


async def test_never_more_holders_than_slots_and_every_waiter_served() -> None:
    semaphore = PrioritySemaphore(3)
    running = peak = served = 0

    async def work(priority: int) -> None:
        nonlocal running, peak, served
        async with semaphore.slot(priority):
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.001)
            running -= 1
            served += 1

    await asyncio.gather(*(work(i % 3) for i in range(40)))
    assert (peak, served) == (3, 40)
    assert not semaphore.locked() and semaphore.waiting == 0


async def test_a_cancelled_waiter_gives_its_turn_away_and_loses_no_slot() -> None:
    semaphore = PrioritySemaphore(1)
    release = asyncio.Event()
    holder = asyncio.create_task(_hold(semaphore, release))
    await asyncio.sleep(0)
    cancelled = asyncio.create_task(semaphore.acquire(Priority.CHAIN))
    later = asyncio.create_task(semaphore.acquire(Priority.LEAF))
    await asyncio.sleep(0)
    cancelled.cancel()
    release.set()
    await holder
    await asyncio.wait_for(later, 1)  # the leaf got the slot the cancelled chain call would have had
    semaphore.release()
    await asyncio.wait_for(semaphore.acquire(), 1)  # and the slot came back
    with pytest.raises(asyncio.CancelledError):
        await cancelled


async def test_cancelled_just_as_the_slot_was_handed_over_passes_it_on() -> None:
    semaphore = PrioritySemaphore(1)
    await semaphore.acquire()
    first = asyncio.create_task(semaphore.acquire())
    second = asyncio.create_task(semaphore.acquire())
    await asyncio.sleep(0)
    semaphore.release()  # hands the slot to `first` …
    first.cancel()  # … which is cancelled before it runs again
    await asyncio.wait_for(second, 1)
    with pytest.raises(asyncio.CancelledError):
        await first


def test_a_semaphore_needs_a_slot() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        PrioritySemaphore(0)


async def test_the_client_sends_chain_calls_before_queued_leaf_calls() -> None:
    """With every slot busy, a chain call asked after a crowd of leaf calls is sent before them."""
    sent: list[str] = []
    gate = asyncio.Event()

    class Gated(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            sent.append(messages[-1]["content"])
            await gate.wait()
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    llm = LLM({"writer": Gated(lambda m: "ok")}, max_concurrency=1)
    first = asyncio.create_task(llm.complete("writer", "first"))
    await asyncio.sleep(0.01)
    leaves = [
        asyncio.create_task(llm.complete("ranking", f"leaf {i}", priority=Priority.LEAF)) for i in range(5)
    ]
    await asyncio.sleep(0.01)
    chain = asyncio.create_task(llm.complete("outline", "chain"))
    await asyncio.sleep(0.01)
    gate.set()
    await asyncio.gather(first, chain, *leaves)
    assert sent[:2] == ["first", "chain"]
    assert sent[2:] == [f"leaf {i}" for i in range(5)]
