"""PNG charts of a stage's table: grouped bars with CI whiskers, one panel for scores and one for counts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ruwikibench.evaluators.stats import Estimate
from ruwikibench.reporting.tables import SCALE, count_keys, metric_scale, stage_columns, table_title


def plot_stage(stage: str, runs: list[tuple[str, dict[str, Any]]], path: Path, view: str) -> None:
    """Grouped bars with CI whiskers: scores (×100) in one panel, counts (headings, depth) in a second one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = stage_columns(stage, runs[0][1])
    counts_only = count_keys(stage)
    panels = [[c for c in columns if c[1] not in counts_only], [c for c in columns if c[1] in counts_only]]
    panels = [p for p in panels if p]
    widths = [max(3.0, 1.6 * len(p)) for p in panels]
    fig, axes = plt.subplots(
        1, len(panels), figsize=(max(6.0, sum(widths)), 4), width_ratios=widths, squeeze=False
    )
    for ax, panel in zip(axes[0], panels, strict=True):
        scale = metric_scale(panel[0][1], counts_only)
        _bars(ax, panel, runs, view, scale)
        ax.set_ylabel("×100" if scale == SCALE else "count")
    axes[0][0].legend(fontsize=8)
    fig.suptitle(f"{table_title(stage)}, mean with 95% CI")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(
    ax: Any, columns: list[tuple[str, str]], runs: list[tuple[str, dict[str, Any]]], view: str, scale: float
) -> None:
    import numpy as np

    from ruwikibench.evaluators.charts import ci_bars

    width = 0.8 / max(1, len(runs))
    for index, (name, metrics) in enumerate(runs):
        found = [metrics.get("metrics", {}).get(key, {}).get(view) for _, key in columns]
        estimates = [Estimate.model_validate(est) if est else None for est in found]
        ci_bars(ax, np.arange(len(columns)) + index * width, estimates, scale=scale, width=width, capsize=3, label=name)
    ax.set_xticks(np.arange(len(columns)) + width * (len(runs) - 1) / 2)
    ax.set_xticklabels([title for title, _ in columns], rotation=20, ha="right")
