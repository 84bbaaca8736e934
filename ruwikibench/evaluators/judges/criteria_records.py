"""The criteria judge's verdict file: one :class:`CriterionRecord` per (text, criterion) in
``judge_criteria.jsonl``; the aggregates go to ``judge_criteria.json``."""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field

from ruwikibench.evaluators.judges.common import Group, JudgedItem, Mode, RecordStatus
from ruwikibench.evaluators.judges.rundir import read_models

RESULTS_JSONL = "judge_criteria.jsonl"
RESULTS_JSON = "judge_criteria.json"


class CriterionRecord(JudgedItem):
    """One line of judge_criteria.jsonl: the verdict on one (text, criterion)."""

    criterion: str
    group: Group
    judge: str
    mode: Mode
    text_sha: str
    status: RecordStatus
    score: int | None = None
    max: int
    normalized: float | None = Field(
        default=None,
        validation_alias=AliasChoices("normalized", "normalised"),  # files written before the rename
        description="the score on 0..1, higher is better (Criterion.normalize)",
    )
    rationale: str = ""
    verdict: str = Field(default="", description="the judge's raw answer")
    prompt_sha256: str = ""
    detail: str | None = Field(default=None, description="why not applicable / the error")

    def key(self) -> tuple[str, ...]:
        return (self.stage, self.article, self.item, self.criterion, self.judge, self.mode)


def read_records(path: Path) -> list[CriterionRecord]:
    """All records of the file, in file order."""
    return read_models(path, CriterionRecord, "criterion verdict")
