"""PNG charts of a stage's table as small multiples, sized to be read at 1366 px: one small panel per metric
group (an embedding metric with its floor and rescaled values, or up to three metrics of one scale), three
panels to a row, bars per run with CI whiskers. A run whose stage failed as a whole has no bars: its place
says "failed" and its legend entry gives the reason."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path
from typing import Any

from ruwikibench.reporting.tables import SCALE, count_keys, metric_scale, stage_columns, table_title
from ruwikibench.stage.metric import FLOOR_SUFFIX, RESCALED_SUFFIX, is_twin
from ruwikibench.storage.results import StageMetrics

PANELS_PER_ROW = 3
METRICS_PER_PANEL = 3
DPI = 100
WIDTH_IN = 12.6  # 1260 px: shown at full size in the report's 1366 px wide page
PANEL_HEIGHT_IN = 2.7
LEGEND_CHARS = 150  # a failed run's reason in the legend


def metric_groups(stage: str, columns: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """The panels: each embedding metric with its floor and rescaled columns, the other metrics in runs of up
    to :data:`METRICS_PER_PANEL` of the same scale (fractions ×100, counts as they are)."""
    counts = count_keys(stage)
    keys = {key for _, key in columns}
    groups: list[list[tuple[str, str]]] = []
    plain: list[tuple[str, str]] = []
    for title, key in columns:
        if is_twin(key):
            continue
        if key + FLOOR_SUFFIX in keys:
            groups += [plain] if plain else []
            plain = []
            groups.append([(title, key), ("floor", key + FLOOR_SUFFIX), ("rescaled", key + RESCALED_SUFFIX)])
            continue
        if plain and (
            len(plain) == METRICS_PER_PANEL or metric_scale(plain[0][1], counts) != metric_scale(key, counts)
        ):
            groups.append(plain)
            plain = []
        plain.append((title, key))
    return groups + ([plain] if plain else [])


def _floor_group(group: list[tuple[str, str]]) -> bool:
    return len(group) == 3 and group[1][1].endswith(FLOOR_SUFFIX)


def chart_description(
    stage: str, runs: list[str], failures: dict[str, str], metrics: StageMetrics | None
) -> str:
    """The chart's alt text: the stage, the metrics it shows and the runs, failed ones with their reason."""
    titles = [
        f"{group[0][0]} with its floor and rescaled"
        if _floor_group(group)
        else ", ".join(t for t, _ in group)
        for group in metric_groups(stage, stage_columns(stage, metrics))
    ]
    named = [f"{run} (failed: {failures[run]})" if run in failures else run for run in runs]
    return (
        f"Bar chart of the {stage} stage, mean with 95% CI per run: {'; '.join(titles)}. "
        f"Runs: {', '.join(named)}."
    )


def plot_stage(
    stage: str,
    runs: list[tuple[str, StageMetrics]],
    path: Path,
    view: str,
    failures: dict[str, str] | None = None,
) -> None:
    """Small multiples of the stage's metrics (mean with 95% CI per run); ``failures``: run name -> why its
    stage failed (its bars are replaced by "failed", its legend entry says why)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    failures = failures or {}
    groups = metric_groups(stage, stage_columns(stage, runs[0][1]))
    rows = max(1, math.ceil(len(groups) / PANELS_PER_ROW))
    legend_lines = len(runs) + sum(1 for name, _ in runs if name in failures)
    legend_in = 0.19 * legend_lines
    fig, axes = plt.subplots(
        rows, PANELS_PER_ROW, figsize=(WIDTH_IN, 0.5 + legend_in + PANEL_HEIGHT_IN * rows), squeeze=False
    )
    counts = count_keys(stage)
    handles = []
    for ax, group in zip(axes.flat, groups, strict=False):
        scale = metric_scale(group[0][1], counts)
        handles = _bars(ax, group, runs, view, scale, failures)
        ax.set_title(group[0][0] if _floor_group(group) else "", fontsize=11)
        ax.set_ylabel("×100" if scale == SCALE else "count", fontsize=10)
        ax.tick_params(labelsize=10)
    for ax in list(axes.flat)[len(groups) :]:
        ax.set_axis_off()
    labels = [_legend_label(name, failures) for name, _ in runs]
    top = 1 - (0.3 + legend_in) / fig.get_figheight()
    fig.legend(
        handles,
        labels,
        loc="upper left",
        bbox_to_anchor=(0.01, 1 - 0.3 / fig.get_figheight()),
        fontsize=10,
        frameon=False,
    )
    fig.suptitle(
        f"{table_title(stage)}, mean with 95% CI",
        fontsize=12,
        x=0.01,
        y=1 - 0.08 / fig.get_figheight(),
        ha="left",
        va="top",
    )
    fig.tight_layout(rect=(0, 0, 1, top))
    fig.savefig(path, dpi=DPI)
    plt.close(fig)


def _legend_label(name: str, failures: dict[str, str]) -> str:
    if name not in failures:
        return name
    reason = failures[name] or "no item scored"
    reason = reason if len(reason) <= LEGEND_CHARS else reason[: LEGEND_CHARS - 1] + "…"
    return f"{name} — failed:\n{reason}"


def _bars(
    ax: Any,
    columns: list[tuple[str, str]],
    runs: list[tuple[str, StageMetrics]],
    view: str,
    scale: float,
    failures: dict[str, str],
) -> list[Any]:
    import numpy as np

    from ruwikibench.evaluators.charts import ci_bars

    width = 0.8 / max(1, len(runs))
    handles = []
    shown = 0
    for index, (name, metrics) in enumerate(runs):
        estimates = [metrics.estimate(key, view) for _, key in columns]
        positions = np.arange(len(columns)) + index * width
        handles.append(ci_bars(ax, positions, estimates, scale=scale, width=width, capsize=3, label=name))
        shown += sum(1 for e in estimates if e is not None and e.n)
        if name in failures:
            for x in positions:
                ax.text(
                    x,
                    0.03,
                    "failed",
                    rotation=90,
                    ha="center",
                    va="bottom",
                    fontsize=9,
                    color="#cf222e",
                    transform=ax.get_xaxis_transform(),
                )
    if not shown:
        ax.text(
            0.5,
            0.5,
            "no run has a value",
            ha="center",
            va="center",
            fontsize=10,
            color="#57606a",
            transform=ax.transAxes,
        )
        ax.set_yticks([])
    ax.set_xlim(-width, len(columns) - 1 + width * len(runs))
    ax.set_xticks(np.arange(len(columns)) + width * (len(runs) - 1) / 2)
    ax.set_xticklabels([textwrap.fill(title, 14) for title, _ in columns], fontsize=10)
    ax.axhline(0, color="#8c959f", linewidth=0.6)
    return handles
