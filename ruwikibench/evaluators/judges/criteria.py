"""Criteria-based LLM judge (POLLUX-style): one call per (text, criterion), rationale + ``[RESULT] n [END]``.

Criteria are data (YAML, see ``criteria/default_ru.yaml``). Verdicts are appended to ``judge_criteria.jsonl``
in the run directory as they arrive; a rerun skips pairs already judged. Aggregates (per criterion, article,
stage and run, normalised by the scale; critical failures apart; unparseable verdicts counted) go to
``judge_criteria.json``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from ruwikibench.contract import GeneratedText
from ruwikibench.evaluators.judges.common import (
    Group,
    JudgedItem,
    JudgeOptions,
    Mode,
    RecordStatus,
    format_sources,
    task_instruction,
)
from ruwikibench.evaluators.judges.criteria_summary import aggregate, unparsed_count
from ruwikibench.evaluators.judges.engine import judge_pending
from ruwikibench.evaluators.judges.parsing import parse_criterion_verdict
from ruwikibench.evaluators.judges.rundir import (
    Run,
    clip,
    latest_verdicts,
    read_models,
    text_sha,
    write_json,
)
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runlock import run_lock

CRITERIA_DIR = Path(__file__).parent / "criteria"
DEFAULT_CRITERIA = CRITERIA_DIR / "default_ru.yaml"
RESULTS_JSONL = "judge_criteria.jsonl"
RESULTS_JSON = "judge_criteria.json"
Material = Literal["sources", "reference"]


class Criterion(BaseModel):
    """One criterion: a scale of integer scores with a rubric text per score."""

    name: str
    title: str
    group: Group
    description: str
    scale: list[int]
    rubric: dict[int, str]
    failure: int | None = Field(default=None, description="critical criteria: the score that means failure")
    requires: list[Material] = Field(default_factory=list)
    stages: list[str] | None = None

    @model_validator(mode="after")
    def _check(self) -> Criterion:
        if not self.scale or sorted(set(self.scale)) != self.scale:
            raise ValueError(f"criterion {self.name!r}: scale must be increasing distinct integers")
        if set(self.rubric) != set(self.scale):
            raise ValueError(
                f"criterion {self.name!r}: rubric scores {sorted(self.rubric)} ≠ scale {self.scale}"
            )
        if self.group == "critical" and self.failure not in self.scale:
            raise ValueError(
                f"criterion {self.name!r}: a critical criterion needs 'failure' (a score of its scale)"
            )
        if self.group != "critical" and self.failure is not None:
            raise ValueError(f"criterion {self.name!r}: only critical criteria have 'failure'")
        return self

    @property
    def max(self) -> int:
        return self.scale[-1]

    def normalize(self, score: int) -> float:
        """Quality in [0, 1], higher is better: (score − min)/(max − min); critical: 0 on failure, else 1."""
        if self.failure is not None:
            return 0.0 if score == self.failure else 1.0
        low, high = self.scale[0], self.scale[-1]
        return (score - low) / (high - low) if high > low else 1.0

    def rubric_text(self) -> str:
        return "\n".join(f"{score}: {self.rubric[score].strip()}" for score in self.scale)

    def missing(self, text: GeneratedText, mode: Mode) -> str | None:
        """Why the criterion does not apply to this text (None if it does)."""
        if self.stages is not None and text.stage not in self.stages:
            return f"criterion applies to stages {self.stages}"
        if "sources" in self.requires and not any(s.strip() for s in text.sources):
            return "no sources"
        if "reference" in self.requires and (mode != "guided" or not text.reference.strip()):
            return "no reference (guided mode only)"
        return None


class CriteriaSet(BaseModel):
    name: str
    path: str
    sha256: str
    criteria: list[Criterion]

    def select(self, names: Iterable[str] | None) -> CriteriaSet:
        """Only the named criteria (all if ``names`` is empty)."""
        wanted = list(names or [])
        if not wanted:
            return self
        known = {c.name: c for c in self.criteria}
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise ValueError(f"{self.path}: unknown criteria {unknown}; known: {sorted(known)}")
        return self.model_copy(update={"criteria": [known[n] for n in wanted]})


def load_criteria(path: str | Path | None = None) -> CriteriaSet:
    """Load a criteria YAML file (``{name, criteria: [...]}`` or a bare list) or a folder of such files."""
    path = Path(path) if path else DEFAULT_CRITERIA
    files = sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")) if path.is_dir() else [path]
    if not files or not all(f.exists() for f in files):
        raise FileNotFoundError(f"{path}: no criteria file")
    criteria: list[Criterion] = []
    digest = hashlib.sha256()
    for file in files:
        raw = file.read_bytes()
        digest.update(raw)
        criteria.extend(_parse_criteria_file(file, raw))
    names = [c.name for c in criteria]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"{path}: duplicate criteria {duplicates}")
    return CriteriaSet(name=path.stem, path=str(path), sha256=digest.hexdigest(), criteria=criteria)


def _parse_criteria_file(file: Path, raw: bytes) -> list[Criterion]:
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except yaml.YAMLError as exc:
        raise ValueError(f"{file}: invalid YAML: {exc}") from exc
    items = data.get("criteria") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise ValueError(f"{file}: expected a list of criteria (or a mapping with 'criteria')")  # noqa: TRY004 — bad file content, reported like other input errors
    out = []
    for index, item in enumerate(items):
        try:
            out.append(Criterion.model_validate(item))
        except ValidationError as exc:
            label = item.get("name", f"#{index}") if isinstance(item, dict) else f"#{index}"
            fields = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'criterion'}: {e['msg']}" for e in exc.errors()
            )
            raise ValueError(f"{file}: criterion {label}: {fields}") from exc
    return out


class CriteriaOptions(JudgeOptions):
    prompt: str = "ru/judge_criteria.txt"
    reference_block: str = "ru/judge_block_reference.txt"
    sources_block: str = "ru/judge_block_sources.txt"


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
    normalised: float | None = None
    rationale: str = ""
    verdict: str = Field(default="", description="the judge's raw answer")
    prompt_sha256: str = ""
    detail: str | None = Field(default=None, description="why not applicable / the error")

    def key(self) -> tuple[str, ...]:
        return (self.stage, self.article, self.item, self.criterion, self.judge, self.mode)


def build_prompt(
    text: GeneratedText, criterion: Criterion, options: CriteriaOptions, prompts: PromptLibrary
) -> str:
    """The judge prompt for one (text, criterion), POLLUX's layout (task, reference, answer, criterion, scale)."""
    context = ""
    if options.mode == "guided" and text.reference.strip():
        block = prompts.get(options.reference_block)
        context += block.format(reference=clip(text.reference.strip(), options.limits.reference_chars))
    if "sources" in criterion.requires:
        block = prompts.get(options.sources_block)
        context += block.format(sources=format_sources(text.sources, options.limits, prompts))
    return prompts.get(options.prompt).format(
        instruction=task_instruction(text, prompts),
        context=context,
        answer=clip(text.text.strip(), options.limits.text_chars) or prompts.fragment("empty_answer"),
        criterion=criterion.title,
        description=criterion.description.strip(),
        rubric=criterion.rubric_text(),
        scale=", ".join(map(str, criterion.scale)),
    )


def _record(
    text: GeneratedText, criterion: Criterion, judge: str, options: CriteriaOptions, **fields: object
):
    return CriterionRecord(
        stage=text.stage,
        article=text.article,
        item=text.item,
        title=text.title,
        category=text.category,
        criterion=criterion.name,
        group=criterion.group,
        judge=judge,
        mode=options.mode,
        text_sha=text_sha(text),
        max=criterion.max,
        **fields,  # type: ignore[arg-type]
    )


async def judge_one(
    llm: LLM,
    text: GeneratedText,
    criterion: Criterion,
    judge: str,
    options: CriteriaOptions,
    prompts: PromptLibrary,
) -> CriterionRecord:
    """Judge one text on one criterion; failures become records (status ``error``), never exceptions."""
    reason = criterion.missing(text, options.mode)
    if reason:
        return _record(text, criterion, judge, options, status="not_applicable", detail=reason)
    prompt = build_prompt(text, criterion, options, prompts)
    prompt_sha = hashlib.sha256(prompt.encode()).hexdigest()[:16]
    try:
        completion = await llm.complete(
            "judge", prompt, max_tokens=options.max_tokens,
            accept=lambda answer: parse_criterion_verdict(answer.text, criterion.scale).status == "ok",
        )
    except Exception as exc:  # noqa: BLE001 — recorded, counted and retried on the next run
        return _record(
            text,
            criterion,
            judge,
            options,
            status="error",
            prompt_sha256=prompt_sha,
            detail=f"{type(exc).__name__}: {exc}",
        )
    verdict = parse_criterion_verdict(completion.text, criterion.scale)
    return _record(
        text,
        criterion,
        judge,
        options,
        status=verdict.status,
        score=verdict.score,
        normalised=criterion.normalize(verdict.score) if verdict.score is not None else None,
        rationale=verdict.rationale,
        verdict=completion.text,
        prompt_sha256=prompt_sha,
    )


def read_records(path: Path) -> list[CriterionRecord]:
    """All records of the file, in file order."""
    return read_models(path, CriterionRecord, "criterion verdict")



def _done(records: Iterable[CriterionRecord], retry_unparseable: bool) -> set[tuple[str, ...]]:
    settled = (
        {"ok", "not_applicable"}
        if retry_unparseable
        else {"ok", "not_applicable", "unparseable", "ambiguous", "out_of_range"}
    )
    return {(*r.key(), r.text_sha) for r in records if r.status in settled}


async def judge_run(
    run: Run,
    llm: LLM,
    criteria: CriteriaSet,
    *,
    judge: str,
    options: CriteriaOptions | None = None,
    prompts: PromptLibrary | None = None,
    progress: bool = True,
) -> dict[str, object]:
    """Judge every (text, criterion) of a run not judged yet; append verdicts as they arrive; write aggregates
    (holding the run directory's lock)."""
    with run_lock(run.path):
        return await _judge_run(run, llm, criteria, judge=judge, options=options, prompts=prompts, progress=progress)


async def _judge_run(
    run: Run,
    llm: LLM,
    criteria: CriteriaSet,
    *,
    judge: str,
    options: CriteriaOptions | None,
    prompts: PromptLibrary | None,
    progress: bool,
) -> dict[str, object]:
    options = options or CriteriaOptions()
    prompts = prompts or PromptLibrary(run.config.prompts_dir if run.config else None)
    path = run.path / RESULTS_JSONL
    done = _done(latest_verdicts(read_records(path)), options.retry_unparseable)
    pending = [
        (text, criterion)
        for text in run.texts
        for criterion in criteria.criteria
        if (text.stage, text.article, text.item, criterion.name, judge, options.mode, text_sha(text))
        not in done
    ]
    await judge_pending(path, [judge_one(llm, t, c, judge, options, prompts) for t, c in pending],
                        "judge criteria", progress=progress)
    summary = write_summary(run.path, criteria, prompts=prompts, options=options, usage=llm.usage.as_dict())
    summary["judged_now"] = len(pending)
    return summary


def write_summary(
    run_dir: Path,
    criteria: CriteriaSet | None = None,
    *,
    prompts: PromptLibrary | None = None,
    options: CriteriaOptions | None = None,
    usage: dict[str, dict[str, int]] | None = None,
) -> dict[str, object]:
    """Aggregate judge_criteria.jsonl into judge_criteria.json (one summary per judge model and mode)."""
    records = latest_verdicts(read_records(run_dir / RESULTS_JSONL))
    data: dict[str, object] = {
        "criteria_set": criteria.name if criteria else None,
        "criteria_sha256": criteria.sha256 if criteria else None,
        "criteria": {c.name: c.model_dump() for c in criteria.criteria} if criteria else {},
        "options": options.model_dump() if options else None,
        "prompt_sha256": prompts.hashes() if prompts else {},
        "usage": usage or {},
        "summaries": [s.model_dump() for s in aggregate(records)],
    }
    write_json(run_dir / RESULTS_JSON, data)
    return data


def summarize_judgements(run_dir: str | Path) -> list[dict[str, str]]:
    """Table rows for reports: per judge and mode, one row per criterion and an overall row.

    Columns: judge, mode, group, criterion, n (verdicts parsed), score (mean / max, or critical failures),
    normalised (mean [95% CI], higher is better), unparsed (unparseable + ambiguous + out of range), errors.
    Empty when the run has not been judged.
    """
    path = Path(run_dir) / RESULTS_JSONL
    if not path.exists():
        return []
    rows: list[dict[str, str]] = []
    for summary in aggregate(latest_verdicts(read_records(path))):
        base = {"judge": summary.judge, "mode": summary.mode}
        for c in summary.per_criterion:
            score = (
                f"failures {c.failures}/{c.normalised.n}"
                if c.group == "critical"
                else (f"{c.mean_score:.2f} / {c.max}" if c.mean_score is not None else "—")
            )
            rows.append(
                {
                    **base,
                    "group": c.group,
                    "criterion": c.criterion,
                    "n": str(c.normalised.n),
                    "score": score,
                    "normalised": c.normalised.fmt(),
                    "unparsed": str(unparsed_count(c.statuses)),
                    "errors": str(c.statuses.get("error", 0)),
                }
            )
        rows.append(
            {
                **base,
                "group": "all",
                "criterion": "overall (per-text mean)",
                "n": str(summary.overall.n),
                "score": f"critical failures: {summary.texts_with_critical_failure} texts",
                "normalised": summary.overall.fmt(),
                "unparsed": str(unparsed_count(summary.statuses)),
                "errors": str(summary.statuses.get("error", 0)),
            }
        )
    return rows
