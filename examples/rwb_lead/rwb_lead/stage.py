"""The ``lead`` stage: pick -> write, scored by ROUGE-L against the reference lead.

Options (``stage_options.lead`` in a run config, validated by :class:`LeadOptions`): how many snippets to
show, how long each may be, the answer cap and the prompt file. Role: ``lead`` (``models.lead``; without it
the writer's model answers).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field

from ruwikibench.plugin import (
    Article,
    Dataset,
    GeneratedText,
    Metric,
    RunConfig,
    ScoreRecord,
    Stage,
    StageContext,
    StageScore,
    Unit,
    ask,
    clean_answer,
    numbered_texts,
    prompt_slot,
    rouge_l,
)

NAME = "lead"


class LeadOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(default=3, ge=1, description="snippets shown to the model")
    snippet_chars: int = Field(default=600, ge=50, description="each snippet cut to this many characters")
    max_tokens: int = Field(default=300, ge=1, description="answer cap")
    prompt: str = prompt_slot("rwb_lead:prompts/lead.txt", "title", "snippets")


class LeadInput(TypedDict):
    title: str
    snippets: list[dict[str, str]]  # {"id", "text"}: the article's source snippets


class LeadOutput(BaseModel):
    """The graph's output, and what ``score()`` receives (validated from the stored JSON)."""

    picked: list[str] = Field(description="ids of the snippets shown to the model")
    lead: str


class LeadState(LeadInput, total=False):
    picked: list[str]
    lead: str


def overlap(title: str, text: str) -> int:
    """How many words of the title occur in the text (lower case)."""
    words = set(text.lower().split())
    return sum(1 for word in title.lower().split() if word in words)


def options_of(context: StageContext) -> LeadOptions:
    options: LeadOptions = context.stage_options(NAME)
    return options


async def pick(state: LeadState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """The ``top_k`` snippets sharing most words with the title (ties: in input order)."""
    top_k = options_of(runtime.context).top_k
    ranked = sorted(state["snippets"], key=lambda s: -overlap(state["title"], s["text"]))
    return {"picked": [s["id"] for s in ranked[:top_k]]}


async def write(state: LeadState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    """One call for the ``lead`` role with the picked snippets, numbered and cut."""
    options = options_of(runtime.context)
    texts = {s["id"]: s["text"] for s in state["snippets"]}
    shown = numbered_texts([texts[i] for i in state["picked"]], options.snippet_chars)
    lead = await ask(
        runtime.context,
        "lead",
        options.prompt,
        max_tokens=options.max_tokens,
        clean=lambda text: clean_answer(text, state["title"]),
        title=state["title"],
        snippets=shown,
    )
    return {"lead": lead}


class LeadStage(Stage[LeadOutput]):
    name = NAME
    description = "the lead written from the snippets that best match the title, ROUGE-L"
    metrics = (
        Metric(
            key="rouge_l",
            label="ROUGE-L F",
            description="longest common word subsequence of the lead and the article's own lead, F",
            kind="lexical",
        ),
        Metric(key="rouge_l_p", label="P", description="ROUGE-L precision of the lead", kind="lexical"),
        Metric(key="rouge_l_r", label="R", description="ROUGE-L recall of the lead", kind="lexical"),
    )
    output_model = LeadOutput
    options_model = LeadOptions
    roles = ("lead",)
    order = 50

    def build_graph(self) -> StateGraph:
        graph = StateGraph(
            LeadState, context_schema=StageContext, input_schema=LeadInput, output_schema=LeadOutput
        )
        graph.add_node("pick", pick)
        graph.add_node("write", write)
        graph.add_edge(START, "pick")
        graph.add_edge("pick", "write")
        graph.add_edge("write", END)
        return graph

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        snippets = [{"id": s.id, "text": s.text} for s in dataset.snippets_of(article.name)]
        return [
            Unit(
                stage=NAME,
                article=article.name,
                unit_id="lead",
                input={"title": article.title, "snippets": snippets},
            )
        ]

    def score(self, unit: Unit, output: LeadOutput, context: StageContext) -> StageScore:
        """ROUGE-L of the lead against the reference lead; the lead as the unit's generated text."""
        assert context.dataset is not None
        reference = context.dataset.article(unit.article).root.text()
        text = GeneratedText(
            stage=NAME,
            article=unit.article,
            item="lead",
            title=unit.input["title"],
            text=output.lead,
            reference=reference,
        )
        record = ScoreRecord(stage=NAME, article=unit.article, item="lead", info={"picked": output.picked})
        if not reference.strip():
            record.excluded = "the reference article has no lead"
        else:
            scores = rouge_l(output.lead, reference)
            record.metrics = {"rouge_l": scores["f"], "rouge_l_p": scores["p"], "rouge_l_r": scores["r"]}
        return StageScore(records=[record], texts=[text])
