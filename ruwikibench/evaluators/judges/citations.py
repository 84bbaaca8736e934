"""The support judge of citation faithfulness: does a set of cited snippets support a sentence (yes/no)?

Each check (:class:`ruwikibench.evaluators.citations.Check`) is one call of the ``support`` role (falls back
to ``judge``) with ``prompts/ru/citation_support.txt``: the claim and the best-matching window of each cited
snippet. The answer is read by the yes/no logprob scorer (:mod:`ruwikibench.models.yesno`): the probability is
kept (P(yes) normalized over yes + no, or 1/0 from the text when the endpoint gives no logprobs),
``supported`` = probability >= ``citations.threshold``; an answer that is neither yes nor no is counted
unparseable, never guessed.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ruwikibench.conf.config import CitationsConfig, RunConfig
from ruwikibench.evaluators.citations import (
    Check,
    CitationScores,
    CitedSentence,
    SentenceScore,
    Verdict,
    best_window,
    pending_checks,
    score_sentence,
    split_sentences,
    tally,
)
from ruwikibench.evaluators.stats import Estimate
from ruwikibench.models.llm import LLM
from ruwikibench.models.yesno import score_yes_no
from ruwikibench.prompts import PromptLibrary

CheckSource = Literal["logprobs", "text", "unparseable", "error"]
RESULTS_JSONL = "citations.jsonl"
RESULTS_JSON = "citations.json"


class CitedText(BaseModel):
    """A text with ``[n]`` markers and the texts of the sources its numbers stand for."""

    article: str
    item: str = Field(description="'lead' or a section id")
    title: str = Field(description="the article title (shown to the judge)")
    section: str = ""
    text: str
    sources: dict[int, str] = Field(default_factory=dict, description="number -> snippet (source) text")

    @property
    def sha(self) -> str:
        payload = repr((self.text, sorted(self.sources.items())))
        return hashlib.sha1(payload.encode()).hexdigest()[:12]


class CheckRecord(BaseModel):
    """One support check: the judge's answer with its probability (one line of citations.jsonl)."""

    article: str
    item: str
    text_sha: str
    sentence: int
    numbers: list[int]
    claim: str
    judge: str
    prompt_sha256: str = ""
    source: CheckSource
    probability: float | None = Field(default=None, description="P(supported); None = unparseable or error")
    p_yes: float | None = None
    p_no: float | None = None
    answer: str = ""
    error: str | None = None

    def key(self) -> tuple[str, str, str, int, tuple[int, ...], str]:
        return (self.article, self.item, self.text_sha, self.sentence, tuple(self.numbers), self.judge)

    def verdict(self, threshold: float) -> Verdict:
        if self.probability is None:
            return Verdict(supported=None)
        return Verdict(supported=self.probability >= threshold, probability=self.probability)


def passage_for(text: CitedText, claim: str, numbers: Iterable[int], window_chars: int) -> str:
    """What the judge reads for a check: the best-matching window of each cited snippet, numbered."""
    parts = [best_window(text.sources[n].strip(), claim, window_chars).text.strip() for n in numbers]
    if len(parts) == 1:
        return parts[0]
    return "\n\n".join(f"[{i}] {part}" for i, part in enumerate(parts, 1))


def support_prompt(
    prompts: PromptLibrary, options: CitationsConfig, title: str, claim: str, passage: str
) -> str:
    return prompts.get(options.prompt).format(title=title, claim=claim, passage=passage)


async def ask_support(llm: LLM, prompt: str, options: CitationsConfig) -> dict[str, object]:
    """One yes/no call; the fields of a check record (source, probability, answer, error)."""
    try:
        completion = await llm.complete(
            "support",
            prompt,
            max_tokens=options.max_tokens,
            top_logprobs=options.top_logprobs,
            accept=lambda answer: score_yes_no(answer).answer is not None,
        )
    except Exception as exc:  # noqa: BLE001 — recorded, counted and asked again on the next run
        return {"source": "error", "error": f"{type(exc).__name__}: {exc}"}
    scored = score_yes_no(completion)
    if scored.answer is None:
        return {"source": "unparseable", "answer": scored.text}
    probability = scored.p_yes_norm if scored.p_yes_norm is not None else scored.score
    return {
        "source": scored.source,
        "probability": probability,
        "p_yes": scored.p_yes,
        "p_no": scored.p_no,
        "answer": scored.text,
    }


async def judge_check(
    llm: LLM,
    text: CitedText,
    sentence: CitedSentence,
    check: Check,
    *,
    judge: str,
    options: CitationsConfig,
    prompts: PromptLibrary,
) -> CheckRecord:
    passage = passage_for(text, sentence.claim, check.numbers, options.window_chars)
    prompt = support_prompt(prompts, options, text.title, sentence.claim, passage)
    fields = await ask_support(llm, prompt, options)
    return CheckRecord(
        article=text.article,
        item=text.item,
        text_sha=text.sha,
        sentence=check.sentence,
        numbers=list(check.numbers),
        claim=sentence.claim,
        judge=judge,
        prompt_sha256=hashlib.sha256(prompt.encode()).hexdigest()[:16],
        **fields,  # type: ignore[arg-type]
    )


class TextScore(BaseModel):
    """One text's sentences scored, its counts, and the best passage of each cited snippet per sentence."""

    article: str
    item: str
    section: str = ""
    text_sha: str
    sentences: list[SentenceScore]
    spans: list[tuple[int, int]] = Field(description="offset of each sentence in the text")
    passages: dict[int, dict[int, str]] = Field(
        default_factory=dict, description="sentence -> number -> window"
    )
    probabilities: dict[int, float | None] = Field(default_factory=dict, description="sentence -> P(union)")
    counts: CitationScores


def verdict_map(
    text: CitedText, records: Iterable[CheckRecord], judge: str, threshold: float
) -> dict[Check, Verdict]:
    """The verdicts of one text's checks (errors are not verdicts: they are asked again)."""
    out: dict[Check, Verdict] = {}
    for r in records:
        if (r.article, r.item, r.text_sha, r.judge) == (
            text.article,
            text.item,
            text.sha,
            judge,
        ) and r.source != "error":
            out[Check(r.sentence, tuple(r.numbers))] = r.verdict(threshold)
    return out


def text_pending(text: CitedText, verdicts: dict[Check, Verdict]) -> list[tuple[CitedSentence, Check]]:
    """Checks of a text still to ask, with their sentence."""
    available = {n for n, body in text.sources.items() if body.strip()}
    return [(s, c) for s in split_sentences(text.text) for c in pending_checks(s, available, verdicts)]


def score_cited_text(text: CitedText, verdicts: dict[Check, Verdict], options: CitationsConfig) -> TextScore:
    """Score a text whose checks all have verdicts (a check still failing with an error = unjudged
    sentence)."""
    available = {n for n, body in text.sources.items() if body.strip()}
    sentences = split_sentences(text.text)
    scored, passages, probabilities = [], {}, {}
    for sentence in sentences:
        known = dict(verdicts)
        for check in pending_checks(sentence, available, known):  # failed calls: no verdict -> unjudged
            known[check] = Verdict(supported=None)
        while more := pending_checks(sentence, available, known):
            known.update({c: Verdict(supported=None) for c in more})
        scored.append(score_sentence(sentence, available, known, options.min_claim_words))
        valid = tuple(sorted(n for n in sentence.numbers if n in available))
        if valid:
            passages[sentence.index] = {
                n: best_window(text.sources[n].strip(), sentence.claim, options.window_chars).text
                for n in valid
            }
            probabilities[sentence.index] = known[Check(sentence.index, valid)].probability
    return TextScore(
        article=text.article,
        item=text.item,
        section=text.section,
        text_sha=text.sha,
        sentences=scored,
        spans=[(s.start, s.end) for s in sentences],
        passages=passages,
        probabilities=probabilities,
        counts=tally(scored),
    )


async def judge_texts(
    texts: list[CitedText],
    llm: LLM,
    *,
    judge: str,
    options: CitationsConfig,
    prompts: PromptLibrary,
    known: list[CheckRecord],
    on_record=None,
) -> list[CheckRecord]:
    """Ask every check the texts still need, round by round (union, then singles, then leave-one-out), with
    ``known`` records reused; every new record is passed to ``on_record`` as it arrives. Returns the new
    ones."""
    new: list[CheckRecord] = []
    asked: set[tuple[str, str, Check]] = set()
    while True:
        records = known + new
        round_: list[tuple[CitedText, CitedSentence, Check]] = []
        for text in texts:
            verdicts = verdict_map(text, records, judge, options.threshold)
            for sentence, check in text_pending(text, verdicts):
                if (text.article, text.item, check) not in asked:  # an error is asked once per session
                    round_.append((text, sentence, check))
        if not round_:
            return new
        asked.update((t.article, t.item, c) for t, _, c in round_)
        tasks = [
            asyncio.ensure_future(judge_check(llm, t, s, c, judge=judge, options=options, prompts=prompts))
            for t, s, c in round_
        ]
        for future in asyncio.as_completed(tasks):
            record = await future
            new.append(record)
            if on_record is not None:
                on_record(record)


def support_llm(config: RunConfig) -> tuple[LLM, str]:
    """An LLM client holding only the ``support`` role (its model, else the judge's) and the model name."""
    model = config.model_for("support")
    only = config.model_copy(update={"models": {"support": model}})
    return LLM.from_config(only), model.name


def summarize_citations(run_dir: str | Path) -> list[dict[str, str]]:
    """Report rows (one per run): judge, sentences, citation recall / precision / unsupported share ×100 with
    95% CIs, unjudged sentences, markers with no source. Empty when the run has not been judged."""
    path = Path(run_dir) / RESULTS_JSON
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    counts, est = data["overall"]["counts"], data["overall"]["estimates"]
    return [
        {
            "judge": data["judge"],
            "threshold": f"{data['options']['threshold']:g}",
            "sentences": str(counts["sentences"]),
            "cited": str(counts["cited"]),
            "citation recall": Estimate(**est["citation_recall"]).fmt(100),
            "citation precision": Estimate(**est["citation_precision"]).fmt(100),
            "unsupported share": Estimate(**est["unsupported_share"]).fmt(100),
            "unjudged": str(counts["unjudged"]),
            "no source": str(counts["missing_citations"]),
        }
    ]
