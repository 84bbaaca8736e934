"""Why a run or a unit has no result, said briefly: error texts with their long paths cut to the part that
matters, and the reason a whole stage of a run failed (no item scored, units failed), shown in charts and
delta blocks."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from ruwikibench.storage.results import StageMetrics

# an absolute path of three or more parts, not part of a URL ("http://host/v1") nor of a relative path
PATH = re.compile(r"(?<![\w:/.~-])(?:/[^\s/'\"`,;()\[\]]+){3,}/?")
KEEP_PARTS = 2
REASON_CHARS = 160


def shorten_paths(text: str) -> str:
    """Each absolute path of 3+ parts cut to its last two: '/home/u/.cache/rwb/llm.sqlite' ->
    '…/rwb/llm.sqlite'."""

    def cut(match: re.Match[str]) -> str:
        parts = [p for p in match.group(0).split("/") if p]
        return "…/" + "/".join(parts[-KEEP_PARTS:])

    return PATH.sub(cut, text)


def short_reason(text: str, limit: int = REASON_CHARS) -> str:
    """The error's first line, paths shortened, cut to ``limit`` characters (the full text goes in a
    ``title``)."""
    first = shorten_paths(str(text).strip().splitlines()[0] if str(text).strip() else "")
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


def stage_failed(metrics: StageMetrics) -> bool:
    """The stage of a run failed as a whole: units failed and no item was scored."""
    return not metrics.counts.evaluated and bool(metrics.counts.failed_units)


def common_reason(errors: list[dict[str, Any]]) -> str:
    """The most frequent reason of ``errors`` (errors.jsonl records), shortened; '' without errors."""
    reasons = Counter(short_reason(e.get("reason", "")) for e in errors)
    return reasons.most_common(1)[0][0] if reasons else ""


def stage_failures(stage: str, runs: list[tuple[str, StageMetrics, list[dict[str, Any]]]]) -> dict[str, str]:
    """Run name -> why the stage failed as a whole in that run ('' reason when errors.jsonl says nothing), for
    the runs (name, the stage's metrics, the run's errors) whose stage failed."""
    return {
        name: common_reason([e for e in errors if e.get("stage") == stage])
        for name, metrics, errors in runs
        if stage_failed(metrics)
    }
