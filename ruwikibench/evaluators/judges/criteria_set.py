"""The criteria the criteria judge scores on: data files (YAML, see ``criteria/default_ru.yaml``) read into a
:class:`CriteriaSet`, each :class:`Criterion` a scale with a rubric per score, its group and the material it
needs."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from ruwikibench.evaluators.judges.common import Group, Mode
from ruwikibench.stage.contract import GeneratedText

CRITERIA_DIR = Path(__file__).parent / "criteria"
DEFAULT_CRITERIA = CRITERIA_DIR / "default_ru.yaml"
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
