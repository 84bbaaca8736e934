"""Parsing judge verdicts: ``… [RESULT] 2 [END]`` (criteria) and ``[[7 9]]`` (pairwise).

The parsers never guess: a verdict without the expected block, with two different scores, or with a score
outside the scale gets a status other than ``ok`` and no score, and is counted as such by the aggregations.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel

Status = Literal["ok", "unparseable", "ambiguous", "out_of_range"]

_NUMBER = r"(\d+(?:[.,]\d+)?)"
# "[RESULT] 2", "**[RESULT]** 2", "[RESULT]: 2", "[RESULT] (2)", "[RESULT] <2>", "[RESULT] 2/2",
# "[RESULT]\n`2`"
_RESULT = re.compile(r"\[\s*RESULT\s*\][\s*_`:=\-–—(«<\"]*" + _NUMBER + r"(?:\s*/\s*\d+)?", re.IGNORECASE)
_RESULT_MARK = re.compile(r"\[\s*RESULT\s*\]", re.IGNORECASE)
_FEEDBACK_MARK = re.compile(r"\[\s*FEEDBACK\s*\]\s*:?", re.IGNORECASE)
_END_MARK = re.compile(r"\[\s*END\s*\]", re.IGNORECASE)
_LABEL = r"(?:(?:A|B|А|В)\s*[:=\-–—]?\s*)?"
# "[[7 9]]", "[[7, 9]]", "[[A: 7, B: 9]]", "[[7/10 9/10]]"
_PAIR = re.compile(
    r"\[\[\s*"
    + _LABEL
    + _NUMBER
    + r"(?:\s*/\s*10)?\s*[,;/|\s]\s*"
    + _LABEL
    + _NUMBER
    + r"(?:\s*/\s*10)?\s*\]\]",
    re.IGNORECASE,
)
_MARKDOWN = re.compile(r"[*_`]+")


class CriterionVerdict(BaseModel):
    status: Status
    score: int | None = None
    rationale: str = ""


class PairVerdict(BaseModel):
    status: Status
    score_a: float | None = None
    score_b: float | None = None
    rationale: str = ""


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def _rationale(text: str, marker: re.Pattern[str]) -> str:
    """The text before the (last) verdict marker, without the [FEEDBACK] label and markdown emphasis."""
    matches = list(marker.finditer(text))
    head = text[: matches[-1].start()] if matches else text
    head = _FEEDBACK_MARK.sub("", head)
    head = _END_MARK.sub("", head)
    return _MARKDOWN.sub("", head).strip()


def parse_criterion_verdict(text: str, scale: list[int]) -> CriterionVerdict:
    """Parse ``[RESULT] n`` from a judge answer; ``scale`` is the list of allowed integer scores."""
    values = {_number(m.group(1)) for m in _RESULT.finditer(text)}
    rationale = _rationale(text, _RESULT_MARK)
    if not values:
        return CriterionVerdict(status="unparseable", rationale=rationale)
    if len(values) > 1:
        return CriterionVerdict(status="ambiguous", rationale=rationale)
    value = values.pop()
    if not value.is_integer() or int(value) not in scale:
        return CriterionVerdict(status="out_of_range", rationale=rationale)
    return CriterionVerdict(status="ok", score=int(value), rationale=rationale)


def parse_pair_verdict(text: str, low: float = 1, high: float = 10) -> PairVerdict:
    """Parse the final ``[[A B]]`` block of a pairwise verdict (scores for the answers as shown: first,
    second)."""
    pairs = {(_number(m.group(1)), _number(m.group(2))) for m in _PAIR.finditer(text)}
    rationale = _rationale(text, re.compile(r"\[\["))
    if not pairs:
        return PairVerdict(status="unparseable", rationale=rationale)
    if len(pairs) > 1:
        return PairVerdict(status="ambiguous", rationale=rationale)
    first, second = pairs.pop()
    if not (low <= first <= high and low <= second <= high):
        return PairVerdict(status="out_of_range", rationale=rationale)
    return PairVerdict(status="ok", score_a=first, score_b=second, rationale=rationale)
