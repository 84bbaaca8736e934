"""What both judges share: the task instruction shown to the judge, material caps, the judge model."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ruwikibench.conf.config import RunConfig
from ruwikibench.evaluators.judges.rundir import clip
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.contract import GeneratedText

Mode = Literal["free", "guided"]
"""``free``: reference-free (the judge sees the task, the text and, where a criterion needs them, the
sources); ``guided``: reference-guided (the judge also sees the human-written reference text)."""
Group = Literal["general", "critical", "encyclopedic"]
RecordStatus = Literal["ok", "unparseable", "ambiguous", "out_of_range", "not_applicable", "error"]
Order = Literal["random", "both"]
ShownOrder = Literal["reference_first", "candidate_first"]  # which text the pairwise judge saw as A


class JudgedItem(BaseModel):
    """What every verdict record names first: the judged item and its title / category."""

    stage: str
    article: str
    item: str
    title: str = ""
    category: str | None = None


TASK_PROMPTS = {
    "sections": "ru/judge_task_sections.txt",
    "lead": "ru/judge_task_lead.txt",
    "outline": "ru/judge_task_outline.txt",
}
DEFAULT_TASK_PROMPT = "ru/judge_task_default.txt"


class Limits(BaseModel):
    """Character caps for what goes into a judge prompt (small local models have small contexts)."""

    text_chars: int = Field(default=6000, description="generated text")
    reference_chars: int = Field(default=4000, description="reference text (guided mode)")
    source_chars: int = Field(default=1500, description="each source")
    sources_chars: int = Field(default=6000, description="all sources together")


class JudgeOptions(BaseModel):
    """What every judge's options hold; the criteria and pairwise judges add their prompts and settings."""

    mode: Mode = "free"
    limits: Limits = Field(default_factory=Limits)
    max_tokens: int | None = Field(default=None, description="judge answer cap; None = the model config's")
    retry_unparseable: bool = Field(default=False, description="judge unparseable verdicts again on a rerun")


def task_prompt_name(text: GeneratedText) -> str:
    """The instruction template for a text: a section, the lead (section titled like the article), an
    outline…"""
    if text.stage == "sections" and text.title.strip().casefold() == text.article.strip().casefold():
        return TASK_PROMPTS["lead"]
    return TASK_PROMPTS.get(text.stage, DEFAULT_TASK_PROMPT)


def task_instruction(text: GeneratedText, prompts: PromptLibrary) -> str:
    """The task the generated text answered, as the judge reads it."""
    return prompts.get(task_prompt_name(text)).format(title=text.title, article=text.article).strip()


def format_sources(sources: list[str], limits: Limits, prompts: PromptLibrary) -> str:
    """Numbered sources, each and all together cut to the limits."""
    parts: list[str] = []
    used = 0
    for number, source in enumerate(sources, 1):
        room = limits.sources_chars - used
        if room <= 0:
            parts.append(prompts.fragment("more_sources", count=len(sources) - number + 1))
            break
        body = clip(source.strip(), min(limits.source_chars, room))
        used += len(body)
        parts.append(f"[{number}] {body}")
    return "\n\n".join(parts)


def words(text: str) -> int:
    return len(text.split())


def judge_llm(config: RunConfig) -> tuple[LLM, str]:
    """An LLM client holding only the ``judge`` role (other roles' endpoints are not needed) and its model
    name."""
    model = config.model_for("judge")
    only_judge = config.model_copy(update={"models": {"judge": model}})
    return LLM.from_config(only_judge), model.name
