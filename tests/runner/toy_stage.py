"""A tiny real stage (one LLM call per article, scored by word overlap) to test the runner in isolation."""

from __future__ import annotations

from typing import Any, ClassVar, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Unit
from ruwikibench.stage.registry import register_stage


class ToyIn(TypedDict):
    title: str


class ToyState(ToyIn, total=False):
    answer: str


class ToyOut(TypedDict):
    answer: str


async def ask(state: ToyState, runtime: Runtime[StageContext]) -> dict[str, Any]:
    completion = await runtime.context.llm.complete("writer", f"Опиши: {state['title']}")
    if not completion.text:
        raise ValueError("empty answer")
    return {"answer": completion.text}


class ToyStage:
    name = "toy"
    columns: ClassVar[list[tuple[str, str]]] = [("Overlap", "overlap")]

    def build_graph(self) -> StateGraph:
        graph = StateGraph(ToyState, context_schema=StageContext, input_schema=ToyIn, output_schema=ToyOut)
        graph.add_node("ask", ask)
        graph.add_edge(START, "ask")
        graph.add_edge("ask", END)
        return graph

    def units(self, dataset, article, config) -> list[Unit]:
        return [Unit(stage="toy", article=article.name, unit_id="article", input={"title": article.title})]

    def score(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[ScoreRecord]:
        words = set(unit.input["title"].lower().split())
        got = set(output["answer"].lower().split())
        return [
            ScoreRecord(
                stage="toy",
                article=unit.article,
                item="article",
                metrics={"overlap": len(words & got) / len(words)},
            )
        ]

    def texts(self, unit: Unit, output: dict[str, Any]) -> list[GeneratedText]:
        return [
            GeneratedText(
                stage="toy",
                article=unit.article,
                item="article",
                title=unit.input["title"],
                text=output["answer"],
            )
        ]


def install() -> None:
    register_stage(ToyStage)
