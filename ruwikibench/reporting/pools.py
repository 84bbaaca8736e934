"""Ranking runs whose candidate pools differ (query modes): which metrics still compare.

NDCG and R-Precision are normalised inside each run's own pool (a title query whose pool holds 10 of the
article's 16 snippets, ranked first, scores R-Precision 100), so between runs of different query modes their
paired differences and verdicts say nothing. Pool recall and R-recall divide by all the article's snippets
and compare across pools. A comparison of such runs leaves the within-pool metrics out of its paired
differences and says why under the ranking table.
"""

from __future__ import annotations

from typing import Any

from ruwikibench.evaluators.ranking import WITHIN_POOL_KEYS
from ruwikibench.reporting.paired import Headline
from ruwikibench.reporting.settings import read_spec, spec_settings
from ruwikibench.storage.rundir import RunDir

RANKING = "ranking"
DEFAULT_MODE = "reference"
"""The query mode of a config that names none (``RankingConfig.query_mode``'s default)."""


def query_modes(runs: list[tuple[str, dict[str, Any], RunDir]]) -> dict[str, str]:
    """The ranking query mode of each run that has the ranking stage, from its spec.json config."""
    return {
        name: str(spec_settings(read_spec(rundir)).get("ranking.query_mode") or DEFAULT_MODE)
        for name, metrics, rundir in runs
        if RANKING in metrics
    }


def pools_differ(modes: dict[str, str]) -> bool:
    return len(set(modes.values())) > 1


def comparable_headlines(stage: str, headlines: list[Headline], modes: dict[str, str]) -> list[Headline]:
    """The headlines of a paired comparison of ``stage``: for ranking runs of different query modes, those
    that divide by the article's full relevant set (the within-pool NDCG and R-Precision left out)."""
    if stage != RANKING or not pools_differ(modes):
        return headlines
    return [h for h in headlines if h.key not in WITHIN_POOL_KEYS]


def pool_note(stage: str, modes: dict[str, str]) -> list[str]:
    """report.md's lines under the ranking table when the runs rank different pools; none otherwise."""
    if stage != RANKING or not pools_differ(modes):
        return []
    listed = ", ".join(f"{name}: {mode}" for name, mode in modes.items())
    note = (
        f"> **Different pools.** The runs use different query modes ({listed}), so they rank different "
        "candidate pools. NDCG and R-Pr are normalised inside each run's own pool and do not compare across "
        "them (left out of the paired differences); compare Pool recall and R-recall, which divide by all "
        "the article's snippets."
    )
    return [note, ""]
