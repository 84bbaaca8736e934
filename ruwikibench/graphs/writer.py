"""The STORM-like writer: the three stage graphs composed as subgraphs into one article graph.

ranking* → select_sources → outline* → review_outline → assign → sections* → cite → write_lead → assemble
(the picture: ``ruwikibench graph article``). ``*`` = a stage graph (:func:`build_ranking_graph`,
:func:`build_outline_graph`, :func:`build_sections_graph`), compiled once here and run by the node of that
name, which maps the writer state into the stage's input schema and the stage's output back. Their nodes run
unchanged under the node's checkpoint namespace, so a checkpointer given to the writer also checkpoints them
and ``stream(..., subgraphs=True)`` shows every one.

``review_outline`` calls LangGraph ``interrupt`` when the input asks for review (or ``writer.review_outline``
is set): compile with a checkpointer and resume with ``Command(resume=edited_outline)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from langgraph.graph import END, START, StateGraph

from ruwikibench.nodes import writer as nodes
from ruwikibench.nodes.writer import WriterInput, WriterOutput, WriterState
from ruwikibench.stage.context import StageContext


def build_writer_graph(
    stage_graphs: Mapping[str, StateGraph] | None = None,
) -> StateGraph[WriterState, StageContext, WriterInput, WriterOutput]:
    """The uncompiled writer graph (input :class:`WriterInput`, output :class:`WriterOutput`).

    ``stage_graphs`` replaces the built-in ranking / outline / sections graphs used as subgraphs (the run
    config's overrides, applied by :func:`ruwikibench.runner.overrides.stage_graph`)."""
    from ruwikibench.graphs.outline import build_outline_graph
    from ruwikibench.graphs.ranking import build_ranking_graph
    from ruwikibench.graphs.sections import build_sections_graph

    given = dict(stage_graphs or {})
    ranking = given.get("ranking") or build_ranking_graph()
    outline = given.get("outline") or build_outline_graph()
    sections = given.get("sections") or build_sections_graph()

    graph = StateGraph(
        WriterState, context_schema=StageContext, input_schema=WriterInput, output_schema=WriterOutput
    )
    graph.add_node("ranking", partial(nodes.ranking, graph=ranking.compile()))
    graph.add_node("select_sources", nodes.select_sources)
    graph.add_node("outline", partial(nodes.outline, graph=outline.compile()))
    graph.add_node("review_outline", nodes.review_outline)
    graph.add_node("assign", nodes.assign)
    graph.add_node("sections", partial(nodes.sections, graph=sections.compile()))
    graph.add_node("cite", nodes.cite)
    graph.add_node("write_lead", nodes.write_lead)
    graph.add_node("assemble", nodes.assemble)
    graph.add_edge(START, "ranking")
    graph.add_edge("ranking", "select_sources")
    graph.add_conditional_edges("select_sources", nodes.route_outline, ["outline", "review_outline"])
    graph.add_edge("outline", "review_outline")
    graph.add_edge("review_outline", "assign")
    graph.add_edge("assign", "sections")
    graph.add_edge("sections", "cite")
    graph.add_edge("cite", "write_lead")
    graph.add_edge("write_lead", "assemble")
    graph.add_edge("assemble", END)
    return graph


__all__ = ["build_writer_graph"]
