"""The pairwise judge's options and its verdict file's records: one :class:`PairRecord` per (item,
presentation order) in ``judge_pairwise_<A>_vs_<B>.jsonl``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ruwikibench.evaluators.judges.common import JudgedItem, JudgeOptions, Mode, Order, ShownOrder

PairStatus = Literal["ok", "unparseable", "ambiguous", "out_of_range", "error"]


class PairwiseOptions(JudgeOptions):
    order: Order = Field(default="random", description="random order per item (seeded), or both orders")
    seed: int = 0
    resamples: int = 2000
    prompt: str = "ru/judge_pairwise.txt"
    prompt_guided: str = "ru/judge_pairwise_guided.txt"


class PairRecord(JudgedItem):
    """One line of judge_pairwise_<A>_vs_<B>.jsonl: one judge call on one item in one presentation order."""

    reference_run: str
    candidate_run: str
    shown: ShownOrder
    judge: str
    mode: Mode
    sha_reference: str
    sha_candidate: str
    status: PairStatus
    score_reference: float | None = None
    score_candidate: float | None = None
    words_reference: int
    words_candidate: int
    rationale: str = ""
    verdict: str = ""
    prompt_sha256: str = ""
    detail: str | None = None

    def key(self) -> tuple[str, ...]:
        return (self.stage, self.article, self.item, self.shown, self.judge, self.mode)

    @property
    def delta(self) -> float | None:
        if self.score_reference is None or self.score_candidate is None:
            return None
        return self.score_candidate - self.score_reference
