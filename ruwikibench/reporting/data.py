"""The runs as the HTML report reads them: per-article indexes of each run's big files (outputs, node
traces), the small files (results, generated texts, open errors) in memory, and the run's dataset when it
loads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ruwikibench.dataset import Dataset
from ruwikibench.reporting.jsonl_index import JsonlIndex
from ruwikibench.storage.results import ResultRow, StageMetrics, result_rows
from ruwikibench.storage.rundir import RunDir
from ruwikibench.storage.runspec import spec_record

Run = tuple[str, dict[str, StageMetrics], RunDir]


@dataclass
class RunData:
    """One run as the report reads it: per-article indexes of the big files, the small files in memory."""

    name: str
    metrics: dict[str, StageMetrics]
    rundir: RunDir
    spec: dict[str, Any]
    results: dict[tuple[str, str], list[ResultRow]] = field(default_factory=dict)
    texts: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[dict[str, Any]] = field(default_factory=list)
    outputs: JsonlIndex | None = None
    nodes: JsonlIndex | None = None
    dataset: Dataset | None = None
    dataset_note: str = ""

    @classmethod
    def load(cls, run: Run, datasets: dict[str, tuple[Dataset | None, str]]) -> RunData:
        from ruwikibench.storage.rundir import open_errors

        name, metrics, rundir = run
        spec = spec_record(rundir)
        data = cls(name, metrics, rundir, spec)
        results = rundir.results()
        for record in result_rows(results, str(rundir.file("results.jsonl"))):
            data.results.setdefault((record.stage, record.article), []).append(record)
        for text in rundir.generated():
            data.texts.setdefault((text["stage"], text["article"]), []).append(text)
        data.outputs = JsonlIndex(rundir.file("outputs.jsonl"))
        data.nodes = JsonlIndex(rundir.file("nodes.jsonl"))
        data.errors = open_errors(list(rundir.read("errors.jsonl")), data.outputs.units(), results)
        data.dataset, data.dataset_note = _dataset_of(spec, datasets)
        return data

    def articles(self) -> set[str]:
        names = {article for _, article in self.results} | {e["article"] for e in self.errors}
        return names | set(self.outputs.articles() if self.outputs else [])

    def article_value(self, stage: str, article: str, key: str) -> float | None:
        """Mean of ``key`` over the article's scored items of the stage (sections: its sections)."""
        values = [
            value
            for r in self.results.get((stage, article), [])
            if not r.excluded and (value := r.metrics.get(key)) is not None
        ]
        return sum(values) / len(values) if values else None

    def failed(self, stage: str, article: str) -> list[dict[str, Any]]:
        return [e for e in self.errors if e["stage"] == stage and e["article"] == article]


def _dataset_of(
    spec: dict[str, Any], cache: dict[str, tuple[Dataset | None, str]]
) -> tuple[Dataset | None, str]:
    """The run's dataset (reference outlines, snippet relevance), loaded once per path; a note when
    unavailable."""
    path = str(spec.get("dataset", {}).get("path") or "")
    if path not in cache:
        from ruwikibench.corpus_builder.dataset_files import resolve_dataset

        try:
            cache[path] = (resolve_dataset(path)[0], "") if path else (None, "the run names no dataset")
        except Exception as exc:  # noqa: BLE001 - the report still shows what the run captured
            note = (
                f"dataset {path} not available ({type(exc).__name__}): reference outlines show the unit's H2 "
                "headings, candidates are not marked relevant"
            )
            cache[path] = (None, note)
    return cache[path]
