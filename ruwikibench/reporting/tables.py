"""The report's tables: a stage's columns (each embedding metric with its floor and rescaled columns), cells
×100 with CIs, the runs' rows with their no-LLM baselines, and the one-line notes under a table. Shared by
report.md, the console and the HTML pages."""

from __future__ import annotations

import math
from typing import Any

from ruwikibench.reporting.paired import Headline, PairedRow, no_winner_line, p_at_best, paired_table
from ruwikibench.stage.contract import Stage
from ruwikibench.stage.metric import (
    FLOOR_SUFFIX,
    RESCALED_SUFFIX,
    SCALE_NOTES,
    Metric,
    factor,
    glossary,
    header,
    is_twin,
    paired_metrics,
    table_metrics,
)
from ruwikibench.stage.metric import count_keys as declared_count_keys
from ruwikibench.stage.registry import get_stage, stage_names
from ruwikibench.storage.results import FloorInfo, StageCounts, StageMetrics

SCALE = 100.0


def _declared(stage: str) -> Stage[Any] | None:
    try:
        return get_stage(stage)
    except Exception:  # noqa: BLE001 - a stage module that cannot be imported: nothing declared
        return None


def stage_description(stage: str) -> str:
    """The stage's own one-line ``description`` ('' when it declares none or cannot be loaded)."""
    declared = _declared(stage)
    return declared.description.strip() if declared is not None else ""


def paper_table(stage: str) -> str:
    """The paper's table of the stage ('Tables 3/4'; the stage's ``paper_table``), '' when the paper has
    none."""
    declared = _declared(stage)
    return (declared.paper_table or "") if declared is not None else ""


def stage_label(stage: str) -> str:
    """What a stage's table is: the paper's table ('Tables 3/4'), else the stage's ``table_label`` ('whole
    article, not in the paper' for the writer), else its own description ('' when it has none)."""
    declared = _declared(stage)
    if declared is None:
        return ""
    return declared.paper_table or declared.table_label or declared.description.strip()


def table_title(stage: str, note: str = "") -> str:
    """'writer (whole article, not in the paper; ×100 …)': the stage, its table label and ``note``; a plug-in
    stage's label is its description, and a stage without one is its bare name (never empty brackets)."""
    inside = "; ".join(part for part in (stage_label(stage), note) if part)
    return f"{stage} ({inside})" if inside else stage


def report_stages(metrics: list[dict[str, StageMetrics]]) -> list[str]:
    """The stages present in any of the runs' metrics, in the registry's order, then any other stage by
    name."""
    present = set().union(*(m.keys() for m in metrics)) if metrics else set()
    known = [s for s in stage_names() if s in present]
    return known + sorted(present - set(known))


def run_stages(spec: dict[str, Any], metrics: dict[str, StageMetrics]) -> list[str]:
    """The stages a run ran: its spec's ``options.stages``, else the stages of its metrics."""
    return list((spec.get("options") or {}).get("stages") or sorted(metrics))


def not_run_note(stage: str, absent: list[tuple[str, list[str]]]) -> str:
    """'Not run in the outline stage, …: B (its stages: ranking).' for the compared runs (name, the stages
    they ran) that skipped the stage: they have no row in its table, no bar in its chart, no row in its
    paired differences. '' when every run has it."""
    if not absent:
        return ""
    which = "; ".join(f"{name} (its stages: {', '.join(stages) or 'none'})" for name, stages in absent)
    return f"Not run in the {stage} stage, so not in its table, chart, paired differences or deltas: {which}."


def stage_metrics(stage: str) -> tuple[Metric, ...]:
    """The stage's metric declarations (none when the stage module cannot be loaded)."""
    try:
        return get_stage(stage).metrics
    except Exception:  # noqa: BLE001 - a stage module that cannot be imported: no declarations
        return ()


def stage_columns(stage: str, metrics: StageMetrics | None = None) -> list[tuple[str, str]]:
    """The stage's declared layout, each embedding metric followed by its floor and rescaled columns
    (or every metric key of ``metrics`` if the stage module is unavailable)."""
    declared = stage_metrics(stage)
    if not declared:
        return [(key, key) for key in sorted(metrics.metrics if metrics else ())]
    return [(m.label, m.key) for m in table_metrics(declared)]


def count_keys(stage: str) -> frozenset[str]:
    """Metrics the stage declares as counts (headings, depth) or seconds: shown as they are, never ×100."""
    return declared_count_keys(stage_metrics(stage))


def metric_scale(key: str, counts: frozenset[str]) -> float:
    """×100 for fractions, 1 for the stage's count metrics."""
    return 1.0 if key in counts else SCALE


def cell(metrics: StageMetrics, key: str, view: str, scale: float = SCALE) -> str:
    est = metrics.estimate(key, view)
    if est is None or not est.n:
        return "—"
    return est.fmt(scale)


BASELINE_PREFIX = "↳ baseline: "


def with_baseline_rows(runs: list[tuple[str, StageMetrics]]) -> list[tuple[str, StageMetrics]]:
    """Each run followed by its no-LLM baselines (the stage's ``baselines``), labelled with
    :data:`BASELINE_PREFIX`: a baseline has no failures, so both views show the same figures."""
    out: list[tuple[str, StageMetrics]] = []
    for name, metrics in runs:
        out.append((name, metrics))
        for baseline, summary in metrics.baselines.items():
            out.append((BASELINE_PREFIX + baseline, StageMetrics.of_baseline(summary)))
    return out


def stage_table(
    stage: str,
    runs: list[tuple[str, StageMetrics]],
    view: str = "failures_excluded",
    baselines: bool = True,
) -> list[list[str]]:
    """Rows (header first): one row per run (each followed by its no-LLM baselines unless ``baselines`` is
    False), the stage's columns, then the counts: ``scored`` (items that were scored: the n of the
    failures-excluded means), ``excluded`` (paper exclusions), ``failed`` (failed units) and, in the
    failures-as-zero view, ``zeroed`` (failures averaged in as 0, and in which columns when not all)."""
    columns = stage_columns(stage, runs[0][1] if runs else None)
    counts_only = count_keys(stage)
    header = ["run", *[title for title, _ in columns], "scored", "excluded", "failed"]
    if view == "failures_as_zero":
        header.append("zeroed")
    rows = [header]
    for name, metrics in with_baseline_rows(runs) if baselines else runs:
        counts = metrics.counts
        row = [
            name,
            *[cell(metrics, key, view, metric_scale(key, counts_only)) for _, key in columns],
            str(counts.evaluated),
            str(counts.excluded),
            str(counts.failed_units),
        ]
        if (
            view == "failures_as_zero"
        ):  # columns this run has no estimate for (no item had the key) say nothing
            row.append(_zeroed([c for c in columns if c[1] in metrics.metrics], counts))
        rows.append(row)
    return rows


def _zeroed(columns: list[tuple[str, str]], counts: StageCounts) -> str:
    """'1' when every failure was zeroed in every metric column, else which columns got how many zeros."""
    zeroed = counts.zeroed
    if zeroed is None:  # metrics.json written before per-metric zeroing: every failure zeroed everywhere
        return str(counts.failed_units)
    metric = [(title, key) for title, key in columns if not key.endswith(FLOOR_SUFFIX)]
    base = [(title, key.removesuffix(RESCALED_SUFFIX)) for title, key in metric]
    per_column = {title: int(zeroed.get(key, 0)) for title, key in base}
    values = set(per_column.values())
    if len(values) == 1:
        return str(values.pop())
    return ", ".join(f"{n} in {title}" for title, n in per_column.items() if n) or "0"


VERDICTS = {
    "better": "beats it",
    "worse": "is below it",
    "no significant difference": "does not differ from it significantly",
    "no shared item": "shares no item with it",
}


def baseline_lines(stage: str, data: StageMetrics, run: str = "the run") -> list[str]:
    """One sentence per compared metric: the run − its best no-LLM baseline, paired over shared items."""
    titles = {key: title for title, key in stage_columns(stage, data)}
    counts = count_keys(stage)
    lines = []
    for key, versus in data.vs_baseline.items():
        if versus.verdict == "no floor":
            lines.append(
                f"- {titles.get(key, key)}: {run} is not compared with the best baseline "
                f"({versus.baseline}): {versus.reason or 'no floor'}"
            )
            continue
        p = versus.p_value
        p_text = "—" if p is None or math.isnan(p) else f"{p:.3g}"
        head = (
            f"- {titles.get(key, key)}: {run} − best baseline ({versus.baseline}) = "
            f"{versus.difference.fmt(metric_scale(key, counts))}, p = {p_text}, "
        )
        if few := p_at_best(versus.items):  # whatever the stored verdict (older runs: 'no significant …')
            lines.append(f"{head}{versus.items} paired items: **cannot be significant** ({few})")
        else:
            verdict = VERDICTS.get(versus.verdict, versus.verdict)
            lines.append(f"{head}{versus.items} paired items: {run} **{verdict}**")
    return lines + skipped_baselines(data)


def skipped_baselines(data: StageMetrics) -> list[str]:
    """One line per baseline that could not be built for some items, with the reason its builder gave (e.g.
    ``frequent headings`` on a dataset of too few articles)."""
    lines = []
    for name, summary in data.baselines.items():
        items = summary.counts.evaluated + summary.counts.excluded
        for reason, count in sorted(summary.excluded_reasons.items()):
            if reason.startswith(("baseline: ", "baseline failed: ")):
                lines.append(
                    f"- baseline {name}: not built for {count} of {items} items: "
                    f"{reason.removeprefix('baseline: ')}"
                )
    return lines


def baseline_note(stage: str, data: StageMetrics, run: str = "the run") -> list[str]:
    """The 'vs the best baseline' paragraph of a stage (empty when the run has no baselines)."""
    lines = baseline_lines(stage, data, run)
    if data.vs_baseline_error:
        lines.append(f"- {run}: no comparison with the baselines ({data.vs_baseline_error})")
    if not lines:
        return []
    head = (
        "Against the no-LLM baselines (rows '↳ baseline: …'; paired bootstrap 95% CI over the items both "
        "scored, randomization p, exact up to 16 items):"
    )
    return [head, "", *lines, ""]


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def judgements_line(data: StageMetrics) -> str:
    """'LLM judgements: N, failed M (…)' for a stage whose units make judgements (ranking), else ''."""
    counts = data.counts
    if not counts.judgements:
        return ""
    sources = counts.judgement_sources
    failed = counts.failed_judgements
    detail = ", ".join(f"{s} {sources[s]}" for s in FAILED_SOURCES if sources.get(s))
    line = f"LLM judgements: {counts.judgements}, failed {failed}"
    return line + (f" ({detail}; asked again when the run resumes)" if failed else "")


FAILED_SOURCES = ("error", "unparseable")


def floor_note(floor: FloorInfo) -> str:
    """One line saying how the floor columns were measured and what the rescaled columns are."""
    copied = (
        f"; {floor.copied} references left out as copies of the output"
        + (f", {floor.unfloored} items left with no floor" if floor.unfloored else "")
        if floor.copied
        else ""
    )
    return (
        f"Floor: the metric of each output against the references of other articles ({floor.items} items, "
        f"{floor.pairs} pairs, up to {floor.per_item_max} per item, seed {floor.seed}{copied}); "
        "rescaled = (score − floor) / (1 − floor): 0 is chance level, 100 a perfect match."
    )


def stage_headlines(stage: str, metrics: StageMetrics | None = None) -> list[Headline]:
    """The metrics a paired comparison covers (declared ``paired``; by default the table's metrics but its
    counts), each marked when it has a permutation floor (its rescaled difference follows it)."""
    declared = stage_metrics(stage)
    if not declared:  # an unknown stage: every metric of the run, floored where it has a rescaled key
        keys = {key for _, key in stage_columns(stage, metrics)}
        return [
            Headline(key, key, SCALE, key + RESCALED_SUFFIX in keys)
            for key in sorted(keys)
            if not is_twin(key)
        ]
    return [
        Headline(m.label, m.key, factor(m), m.floor, m.direction, m.paired_when_equal)
        for m in paired_metrics(declared)
    ]


def column_marks(stage: str) -> dict[str, str]:
    """Per column title of the stage's table: the title with its direction mark ('Mean F1 ↑', 'Headings ·');
    a column the stage does not declare keeps its title."""
    return {m.label: header(m) for m in table_metrics(stage_metrics(stage))}


def marked(stage: str, title: str) -> str:
    """``title`` with its direction mark when the stage declares the column."""
    return column_marks(stage).get(title, title)


def marked_rows(stage: str, rows: list[list[str]]) -> list[list[str]]:
    """A stage table (header first) with each declared column's header carrying its direction mark: what
    report.md and the console print (the CSV files keep the bare titles)."""
    marks = column_marks(stage)
    return [[marks.get(title, title) for title in rows[0]], *rows[1:]] if rows else rows


def marked_paired_table(rows: list[PairedRow]) -> list[list[str]]:
    """:func:`~ruwikibench.reporting.paired.paired_table` with each metric's direction mark ('Mean F1 ↑',
    'Mean F1 rescaled ↑'): a difference above 0 is better only for ↑."""
    table = paired_table(rows)
    return table[:1] + [[marked(row.stage, cells[0]), *cells[1:]] for row, cells in zip(rows, table[1:])]


def column_meanings(stage: str) -> dict[str, str]:
    """Per column header of the stage's table: 'Mean F1 ↑ (×100): sentence F1 …' (the HTML header's hover)."""
    return {
        m.label: f"{header(m)} ({SCALE_NOTES[m.scale]}): {m.description or 'no description declared'}"
        for m in table_metrics(stage_metrics(stage))
    }


def glossary_rows(stage: str) -> list[list[str]]:
    """The stage's glossary (header first): each column with its direction mark, scale and one-line
    meaning."""
    return [["column", "scale", "meaning"], *[list(row) for row in glossary(stage_metrics(stage))]]


GLOSSARY_NOTE = "↑ higher is better, ↓ lower is better, · neither: a count or a reference figure"


def glossary_section(stage: str) -> list[str]:
    """The stage's 'What the columns mean' block of report.md (nothing for a stage without declarations)."""
    rows = glossary_rows(stage)
    if len(rows) < 2:
        return []
    return ["What the columns mean (" + GLOSSARY_NOTE + "):", "", markdown_table(rows), ""]


PAIRED_NOTE = (
    "Each run minus the first run, over the items both scored (items scored by one run only, or excluded in "
    "either, are left out and counted); ×100, mean difference [95% paired bootstrap CI]; p: two-sided "
    "randomization, exact up to 16 items (the chance of a difference at least this large if the two runs "
    "were interchangeable item by item), one test per row, no correction for the number of rows. A run "
    "*beats* the other when p < 0.05 and the CI excludes 0; with 5 shared items or fewer no p can be below "
    "0.05 (the smallest is 2/2^n) and the verdict says so."
)


def paired_section(rows: list[PairedRow]) -> list[str]:
    """The stage's 'Paired differences' block of report.md (nothing for one run), significant rows spelled
    out."""
    if not rows:
        return []
    found = [f"- {row.sentence()}" for row in rows if row.winner is not None]
    return [
        "### Paired differences",
        "",
        PAIRED_NOTE,
        "",
        markdown_table(marked_paired_table(rows)),
        "",
        *(found or [no_winner_line(rows)]),
        "",
    ]
