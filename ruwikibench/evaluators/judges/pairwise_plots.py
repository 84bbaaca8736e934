"""Charts of pairwise comparisons: one comparison's deltas with CIs, and every candidate against one
reference."""

from __future__ import annotations

from pathlib import Path

from ruwikibench.evaluators.charts import ci_bars
from ruwikibench.evaluators.judges.pairwise_summary import PairwiseSummary, load_summaries
from ruwikibench.evaluators.judges.rundir import safe_id
from ruwikibench.evaluators.stats import Estimate


def _bars(
    ax, labels: list[str], estimates: list[Estimate], reference: str, hatched: int | None = None
) -> None:
    """Horizontal bars (mean delta) with CI whiskers and the reference at 0 (bar ``hatched`` drawn
    hatched)."""
    positions = list(range(len(labels)))[::-1]
    colors = ["#4c72b0" if e.n == 0 or e.mean >= 0 else "#dd8452" for e in estimates]
    bars = ci_bars(
        ax, positions, estimates, missing=0.0, horizontal=True, color=colors, capsize=4, ecolor="#333333"
    )
    if hatched is not None:
        bars[hatched].set_hatch("//")
        bars[hatched].set_alpha(0.6)
    ax.axvline(0, color="black", linewidth=1)
    ax.set_yticks(
        positions, [label if e.n == 0 else f"{label} (n={e.n})" for label, e in zip(labels, estimates)]
    )
    ax.set_xlabel(f"баллы B − баллы A (эталон A = {reference}, в нуле)")
    ax.grid(axis="x", alpha=0.3)


def _short(model: str) -> str:
    """A model name fit for a chart label (a served file path becomes its file name)."""
    return Path(model).name[:40] or model[:40]


def plot_summary(summary: PairwiseSummary, path: Path) -> Path:
    """PNG: the overall delta, the length-controlled delta and each category's delta, with 95% CIs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["все", "все, поправка на длину"] + [c.category for c in summary.per_category]
    estimates = [summary.delta, summary.length_controlled.intercept] + [c.delta for c in summary.per_category]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * len(labels)))
    _bars(ax, labels, estimates, summary.reference_run, hatched=1)
    ax.set_title(
        f"{summary.candidate_run} против {summary.reference_run} (судья {_short(summary.judge)})", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_runs(out_dir: Path, reference_run: str) -> Path | None:
    """PNG with one bar per run compared against the same reference in this folder (rulm-sbs2's chart)."""
    summaries = [s for s in load_summaries(out_dir) if s.reference_run == reference_run]
    if not summaries:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reference = Estimate(mean=0.0, low=0.0, high=0.0, n=0)
    labels = [f"{reference_run} (эталон)"] + [
        f"{s.candidate_run} [{_short(s.judge)}, {s.mode}]" for s in summaries
    ]
    estimates = [reference] + [s.delta for s in summaries]
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.45 * len(labels)))
    _bars(ax, labels, estimates, reference_run)
    fig.tight_layout()
    path = out_dir / f"judge_pairwise_{safe_id(reference_run)}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
