"""Units start while their fan-outs fit the budget, in arrival order; a cancelled waiter frees its place."""

import asyncio

import pytest

from ruwikibench.runner.admission import FanOutSlots


async def _run(slots: FanOutSlots, weights: list[int]) -> tuple[list[int], int]:
    """Start one task per weight; each holds its slots for a moment. Returns the order they got in and the
    most slots ever held at once."""
    order: list[int] = []
    held = [0, 0]

    async def unit(i: int, weight: int) -> None:
        async with slots.slot(weight):
            order.append(i)
            held[0] += min(weight, slots.capacity)
            held[1] = max(held[1], held[0])
            await asyncio.sleep(0.01)
            held[0] -= min(weight, slots.capacity)

    await asyncio.gather(*(unit(i, w) for i, w in enumerate(weights)))
    return order, held[1]


async def test_units_start_in_order_within_the_budget() -> None:
    slots = FanOutSlots(10)
    order, most = await _run(slots, [4, 4, 4, 1, 1, 9, 1])
    assert order == list(range(7))  # nobody overtakes: the 1s wait behind the third 4
    assert most <= 10 and slots.used == 0


async def test_a_unit_wider_than_the_budget_runs_alone() -> None:
    slots = FanOutSlots(8)
    _, most = await _run(slots, [384, 384, 1])
    assert most == 8 and slots.used == 0


async def test_budget_bounds_what_a_fan_out_puts_in_flight() -> None:
    """Twelve units of 128 under a budget of 256: never more than two at once (before: all twelve)."""
    _, most = await _run(FanOutSlots(256), [128] * 12)
    assert most == 256


async def test_a_cancelled_waiter_gives_its_place_to_the_next() -> None:
    slots = FanOutSlots(4)
    await slots.acquire(4)
    waiting = asyncio.ensure_future(slots.acquire(3))
    behind = asyncio.ensure_future(slots.acquire(1))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    slots.release(4)
    assert await behind == 1 and slots.used == 1


def test_budget_must_hold_one_slot() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        FanOutSlots(0)


def test_budget_grows_with_concurrency_above_a_floor() -> None:
    from ruwikibench.runner.admission import fan_out_budget

    assert fan_out_budget(4) == fan_out_budget(64) == 4096  # small runs: every unit starts at once, as before
    assert fan_out_budget(1024) == 8192
