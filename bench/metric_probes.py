"""What each metric can and cannot see: planted variants of the sample's reference outlines and sections,
scored by the stages' own code with the configured embedder (``configs/local.yaml``: e5-int8).

    python bench/metric_probes.py [--config configs/local.yaml] [--sections 3] [--articles 8]

Every metric a stage declares (its ``metrics``; a metric added later is measured too, nothing below names one)
is printed for every variant: the mean over items ×100, and for a floored metric its rescaled mean, the floor
measured for that variant as a run measures it (:mod:`ruwikibench.aggregation.floors`). A second table counts
the items whose score moved by a point or more from the verbatim reference: a metric that moves on none of
them does not see what the variant changed.

Variants (the outputs are stage-specific, the metrics are not):

- outline, one item per article with reference headings: ``reference`` (every heading below the title, its
  level kept), ``shuffled`` (a random order seeded by the article, levels kept), ``flattened`` (reference
  order, every heading at level 2), ``shuffled + flat``, ``+10 junk`` (the reference and ten headings about
  nothing in it), ``other article`` (the next article's reference outline, verbatim: a copy);
- sections, the first ``--sections`` sections of each article with a reference of two sentences or more and a
  cited snippet: ``reference``, ``reordered`` (its sentences reversed), ``"."`` (a content-free text),
  ``other article`` (the reference text of a section of the next article, verbatim: a copy).

For the copy variants it also prints how many floor pairs were left out as copies and the floor with and
without that rule (``COPY_SCORE`` in ``ruwikibench/aggregation/floors.py``). The sample is found at
``$RUWIKIBENCH_SAMPLE``, else ``../shared/data/ruwiki/`` beside the repository. Set ``RUWIKIBENCH_CACHE`` to
a scratch folder (with ``models/`` linked in) to keep the NER cache out of your own.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.embedders import sample_file
from ruwikibench.aggregation import floors as floor_module
from ruwikibench.aggregation.floors import floors_of_sides
from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.conf.loader import load_config
from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json
from ruwikibench.dataset import Article, Dataset
from ruwikibench.evaluators.similarity import split_sentences
from ruwikibench.models.embeddings import make_embedder
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import BaselineSkipped, Unit
from ruwikibench.stage.metric import RESCALED_SUFFIX, Metric
from ruwikibench.stage.registry import get_stage

JUNK = (
    "Рецепт яблочного пирога",
    "Прогноз погоды на выходные",
    "Правила игры в шахматы",
    "Уход за комнатными растениями",
    "Расписание пригородных электричек",
    "Список покупок на неделю",
    "Ремонт велосипедной цепи",
    "Гороскоп для всех знаков",
    "Вязание тёплого шарфа",
    "Советы по зимней рыбалке",
)
MOVED = 0.01  # a score that moved by a point or more (×100) from the reference's

Planted = list[tuple[Unit, dict[str, Any]]]  # (unit, output) per item of one variant


def outline_output(headings: list[tuple[int, str]]) -> dict[str, Any]:
    return {
        "k": len(headings),
        "k_method": "probe",
        "outline": [{"level": level, "title": title} for level, title in headings],
        "outline_markdown": "\n".join(f"{'#' * level} {title}" for level, title in headings),
        "ended": True,
    }


def reference_outline(article: Article) -> list[tuple[int, str]]:
    return [(s.level, s.title) for s in article.headings(min_level=2)]


def outline_variants(articles: list[Article]) -> dict[str, Callable[[int], list[tuple[int, str]]]]:
    """Per variant: the planted headings of the i-th article."""

    def shuffled(i: int) -> list[tuple[int, str]]:
        headings = reference_outline(articles[i])
        random.Random(articles[i].name).shuffle(headings)
        return headings

    return {
        "reference": lambda i: reference_outline(articles[i]),
        "shuffled": shuffled,
        "flattened": lambda i: [(2, t) for _, t in reference_outline(articles[i])],
        "shuffled + flat": lambda i: [(2, t) for _, t in shuffled(i)],
        "+10 junk": lambda i: reference_outline(articles[i]) + [(2, t) for t in JUNK],
        "one swapped": lambda i: [(2, JUNK[0]), *reference_outline(articles[i])[1:]],
        "lower case": lambda i: [(level, t.lower()) for level, t in reference_outline(articles[i])],
        "other article": lambda i: reference_outline(articles[(i + 1) % len(articles)]),
    }


def outline_probes(dataset: Dataset, context: StageContext, articles: int) -> dict[str, Planted]:
    stage = get_stage("outline")
    chosen = [a for a in dataset.articles if len(reference_outline(a)) >= 2][:articles]
    units = [stage.units(dataset, a, context.config)[0] for a in chosen]
    planted = {
        name: [(unit, outline_output(build(i))) for i, unit in enumerate(units)]
        for name, build in outline_variants(chosen).items()
    }
    return planted | baseline_probes("outline", units, context)


def baseline_probes(stage_name: str, units: list[Unit], context: StageContext) -> dict[str, Planted]:
    """The stage's own no-LLM baselines that need no run output, as more variants."""
    planted: dict[str, Planted] = {}
    for baseline in get_stage(stage_name).baselines:
        if baseline.reads_output:
            continue
        try:
            planted[f"baseline: {baseline.name}"] = [(u, baseline.build(u, {}, context)) for u in units]
        except BaselineSkipped as exc:
            print(f"{stage_name}: baseline {baseline.name} skipped: {exc}")
    return planted


def section_result(spec: dict[str, Any], text: str) -> dict[str, Any]:
    snippets = spec.get("snippets") or []
    return {
        "id": spec["id"],
        "title": spec.get("title", ""),
        "level": spec.get("level", 2),
        "text": text,
        "status": "ok",
        "snippets_total": len(snippets),
        "snippet_ids": [s["id"] for s in snippets],
        "groups": [],
        "calls": 0,
    }


def section_units(dataset: Dataset, context: StageContext, per_article: int) -> list[list[Unit]]:
    """Per article: its first ``per_article`` sections with a cited snippet and a 2+ sentence reference."""
    stage = get_stage("sections")
    chosen = []
    for article in dataset.articles:
        units = [
            u
            for u in stage.units(dataset, article, context.config)
            if u.input["sections"][0].get("snippets")
            and len(split_sentences(u.input["sections"][0].get("reference") or "")) >= 2
        ]
        if units:
            chosen.append(units[:per_article])
    return chosen


def section_probes(dataset: Dataset, context: StageContext, per_article: int) -> dict[str, Planted]:
    by_article = section_units(dataset, context, per_article)

    def other(a: int, s: int) -> str:
        units = by_article[(a + 1) % len(by_article)]
        return str(units[s % len(units)].input["sections"][0]["reference"])

    def swapped(spec: dict[str, Any]) -> str:
        return " ".join([JUNK[0] + ".", *split_sentences(spec["reference"])[1:]])

    variants: dict[str, Callable[[int, int, dict[str, Any]], str]] = {
        "reference": lambda a, s, spec: str(spec["reference"]),
        "reordered": lambda a, s, spec: " ".join(reversed(split_sentences(spec["reference"]))),
        "one swapped": lambda a, s, spec: swapped(spec),
        '"."': lambda a, s, spec: ".",
        "other article": lambda a, s, spec: other(a, s),
    }
    planted: dict[str, Planted] = {}
    for name, text in variants.items():
        planted[name] = []
        for a, units in enumerate(by_article):
            for s, unit in enumerate(units):
                spec = unit.input["sections"][0]
                output = {
                    "article": unit.input["article"],
                    "results": [section_result(spec, text(a, s, spec))],
                }
                planted[name].append((unit, output))
    units = [unit for article in by_article for unit in article]
    return planted | baseline_probes("sections", units, context)


def scored(stage_name: str, planted: Planted, context: StageContext) -> tuple[list[dict[str, Any]], list]:
    """The variant's score records and floor sides, by the stage's own ``score`` and ``floor_sides``."""
    stage = get_stage(stage_name)
    records, sides = [], []
    for unit, output in planted:
        records += [r.model_dump(mode="json") for r in stage.checked_score(unit, output, context).records]
        sides += stage.floor_sides(unit, output, context)
    return records, sides


@contextmanager
def copies_kept() -> Iterator[None]:
    """Floors as they were before copies were left out (no score counts as a copy)."""
    saved = floor_module.COPY_SCORE
    floor_module.COPY_SCORE = float("inf")
    try:
        yield
    finally:
        floor_module.COPY_SCORE = saved


@contextmanager
def pair_scores(stage: Any, key: str) -> Iterator[list[float]]:
    """Every floor pair's ``key`` as the floor scores it (the stage's ``cross_score``, recorded)."""
    seen: list[float] = []
    score = stage.cross_score

    def recorded(generated: Any, reference: Any, context: StageContext) -> dict[str, float]:
        result: dict[str, float] = score(generated, reference, context)
        seen.append(result[key])
        return result

    stage.cross_score = recorded
    try:
        yield seen
    finally:
        del stage.cross_score


def shown(metrics: tuple[Metric, ...]) -> list[tuple[str, str]]:
    """(label, key) of every declared metric that ranks outputs (not counts), a floored one with its rescaled
    twin."""
    rows = []
    for m in metrics:
        if m.direction == "neither":
            continue
        rows.append((m.label, m.key))
        if m.floor:
            rows.append((f"{m.label} rescaled", m.key + RESCALED_SUFFIX))
    return rows


class Measured:
    """One variant: its metrics (aggregated as a run's), per-item scores, and its floor pairs."""

    def __init__(self, stage_name: str, planted: Planted, context: StageContext) -> None:
        stage = get_stage(stage_name)
        self.key = floor_module.copy_key(stage)
        records, sides = scored(stage_name, planted, context)
        with pair_scores(stage, self.key) as pairs:
            floors = floors_of_sides(stage, sides, context)
        self.floors, self.pairs = floors, pairs
        self.metrics = aggregate(records, [], floors).get(stage_name, {}).get("metrics", {})
        self.items = {(r["article"], r["item"]): r["metrics"] for r in records if not r.get("excluded")}
        self.copying = {(r["article"], r["item"]) for r in floors if r.get("copied")}
        self.floor_kept: list[float] = []
        if self.copying:  # the same items' floors had the copies been kept
            with copies_kept():
                kept = floors_of_sides(stage, sides, context)
            self.floor_kept = [
                r["metrics"][self.key] for r in kept if (r["article"], r["item"]) in self.copying
            ]

    def copy_row(self, name: str) -> list[str]:
        own = [m[self.key] for m in self.items.values() if self.key in m]
        left_out = sum(len(r.get("copied") or []) for r in self.floors)
        kept = sorted(self.pairs)[: len(self.pairs) - left_out]  # the pairs left out are the highest
        floors_now = [
            r["metrics"][self.key] for r in self.floors if (r["article"], r["item"]) in self.copying
        ]
        change = f"{mean(self.floor_kept) * 100:.1f} → {mean(floors_now) * 100:.1f}" if self.copying else "—"
        return [
            name,
            f"{min(own) * 100:.1f}–{max(own) * 100:.1f}" if own else "—",
            str(len(self.pairs)),
            str(left_out),
            f"{max(kept) * 100:.1f}" if kept else "—",
            f"{len(self.copying)}: {change}",
        ]


def measure(stage_name: str, probes: dict[str, Planted], context: StageContext) -> None:
    stage = get_stage(stage_name)
    measured = {name: Measured(stage_name, planted, context) for name, planted in probes.items()}
    names = list(probes)
    print(
        f"\n### {stage_name}: {len(probes['reference'])} items, mean ×100 (floored metrics rescaled by the "
        "variant's own floor)\n"
    )
    rows = [[label, *(cell(measured[n].metrics, key) for n in names)] for label, key in shown(stage.metrics)]
    table([["metric", *names], *rows])
    print(f"\n{stage_name}: items whose score moved ≥ 1 point from the verbatim reference's\n")
    base = measured["reference"].items
    rows = [
        [label, *(moved(base, measured[n].items, key) for n in names[1:])]
        for label, key in shown(stage.metrics)
        if not key.endswith(RESCALED_SUFFIX)
    ]
    table([["metric", *names[1:]], *rows])
    key = floor_module.copy_key(stage)
    print(
        f"\n{stage_name}: copies (on {key}, left out of a floor at ≥ {floor_module.COPY_SCORE * 100:.0f}): "
        "the variant against its own reference, its floor pairs\n"
    )
    header = ["variant", "vs own reference", "floor pairs", "left out as copies", "highest pair kept"]
    header.append(f"items with a copy left out: {key} floor kept → left out")
    table([header, *(measured[n].copy_row(n) for n in names)])


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def cell(metrics: dict[str, Any], key: str) -> str:
    value = metrics.get(key, {}).get("failures_excluded", {}).get("mean")
    return "—" if value is None or math.isnan(value) else f"{value * 100:.1f}"


def moved(
    base: dict[tuple[str, str], dict[str, float]], other: dict[tuple[str, str], dict[str, float]], key: str
) -> str:
    shared = [k for k in base if key in base[k] and key in other.get(k, {})]
    if not shared:
        return "—"
    return f"{sum(abs(other[k][key] - base[k][key]) >= MOVED for k in shared)}/{len(shared)}"


def table(rows: list[list[str]]) -> None:
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows[1:]:
        print("| " + " | ".join(row) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(ROOT / "configs" / "local.yaml"))
    parser.add_argument("--articles", type=int, default=8)
    parser.add_argument("--sections", type=int, default=3)
    parser.add_argument("--stage", action="append", choices=["outline", "sections"])
    args = parser.parse_args()
    config = load_config(args.config)
    dataset = import_ruwikibench_json(sample_file()).dataset
    dataset = Dataset(
        articles=dataset.articles[: args.articles], sources=dataset.sources, snippets=dataset.snippets
    )
    context = StageContext(
        config=config,
        llm=None,  # type: ignore[arg-type]
        embedder=make_embedder(config.embedder),
        prompts=PromptLibrary(),
        dataset=dataset,
    )
    wall, cpu = time.perf_counter(), time.process_time()
    print(f"embedder {config.embedder.id}; {len(dataset.articles)} articles of {sample_file()}")
    for stage in args.stage or ["outline", "sections"]:
        probes = (
            outline_probes(dataset, context, args.articles)
            if stage == "outline"
            else section_probes(dataset, context, args.sections)
        )
        measure(stage, probes, context)
    print(f"\n{time.perf_counter() - wall:.0f} s wall, {time.process_time() - cpu:.0f} s CPU")


if __name__ == "__main__":
    main()
