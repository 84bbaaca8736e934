"""Pictures of the stage graphs drawn from the code (Mermaid), and the docs blocks that show them.

Each stage page under ``docs/`` holds its graph between ``<!-- graph:NAME -->`` and ``<!-- /graph:NAME -->``;
``ruwikibench graph --update-docs`` rewrites those blocks from the compiled graphs, and a test fails when a
block is not what the code draws, so the pictures cannot drift from the graphs.
"""

from __future__ import annotations

import re
from pathlib import Path

from ruwikibench.runner.overrides import Override, stage_graph
from ruwikibench.stage.registry import get_stage, known_stages


def doc_pages() -> dict[str, str]:
    """Stage -> the docs page showing its graph (the stages that declare a ``doc_page``)."""
    return {name: stage.doc_page for name, stage in known_stages().items() if stage.doc_page}


def mermaid(stage: str, xray: int = 1, overrides: dict[str, Override] | None = None) -> str:
    """The Mermaid flowchart of a registered stage's compiled graph (subgraphs drawn ``xray`` levels deep),
    with ``overrides`` (:func:`ruwikibench.runner.overrides.check_overrides` of a run config) applied."""
    graph = stage_graph(get_stage(stage), overrides or {}).compile()
    return graph.get_graph(xray=xray).draw_mermaid().strip()


def block(stage: str, picture: str) -> str:
    return (
        f"<!-- graph:{stage} (drawn by `ruwikibench graph {stage}`; do not edit by hand) -->\n"
        f"```mermaid\n{picture}\n```\n<!-- /graph:{stage} -->"
    )


def _pattern(stage: str) -> re.Pattern[str]:
    return re.compile(rf"<!-- graph:{re.escape(stage)}\b.*?<!-- /graph:{re.escape(stage)} -->", re.DOTALL)


def shown(docs: Path, stage: str) -> str | None:
    """The block a stage's page holds now (None when the page has none)."""
    match = _pattern(stage).search((docs / doc_pages()[stage]).read_text(encoding="utf-8"))
    return match.group(0) if match else None


def update_docs(docs: Path) -> list[str]:
    """Rewrite every stage page's block from the code; returns the pages that changed."""
    changed = []
    for stage, page in doc_pages().items():
        path = docs / page
        text = path.read_text(encoding="utf-8")
        current = shown(docs, stage)
        if current is None:
            raise ValueError(f"{path}: no <!-- graph:{stage} --> block to update")
        fresh = block(stage, mermaid(stage))
        if current != fresh:
            path.write_text(text.replace(current, fresh), encoding="utf-8")
            changed.append(str(path))
    return changed
