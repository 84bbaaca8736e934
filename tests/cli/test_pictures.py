"""The graph pictures in the docs are the ones the code draws; `ruwikibench graph` prints and updates them."""

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.cli.pictures import block, doc_pages, mermaid, shown, update_docs

ROOT_DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("stage", ["outline", "ranking", "sections", "writer"])
def test_each_stage_page_shows_the_graph_the_code_draws(stage: str) -> None:
    assert shown(ROOT_DOCS, stage) == block(stage, mermaid(stage)), (
        f"docs/{doc_pages()[stage]}: the graph picture is stale; run `ruwikibench graph --update-docs`"
    )


def test_pictures_name_every_node_and_the_sections_subgraph() -> None:
    picture = mermaid("ranking")
    for node in ("expand_query", "retrieve", "rerank", "rank"):
        assert f"{node}({node})" in picture
    assert "subgraph section" in mermaid("sections") and "collect" in mermaid("sections")


def test_update_docs_rewrites_a_stale_block_and_leaves_current_ones(tmp_path: Path) -> None:
    for stage, page in doc_pages().items():
        (tmp_path / page).write_text(f"# page\n\n{block(stage, mermaid(stage))}\n\ntext\n", encoding="utf-8")
    stale = tmp_path / doc_pages()["outline"]
    stale.write_text(stale.read_text(encoding="utf-8").replace("mini_outline", "old_node"), encoding="utf-8")
    assert update_docs(tmp_path) == [str(stale)]
    assert "old_node" not in stale.read_text(encoding="utf-8") and stale.read_text(encoding="utf-8").endswith(
        "text\n"
    )
    assert update_docs(tmp_path) == []


def test_a_page_without_a_block_is_named(tmp_path: Path) -> None:
    for page in doc_pages().values():
        (tmp_path / page).write_text("# no picture\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no <!-- graph:"):
        update_docs(tmp_path)


def test_graph_command_prints_mermaid_and_names_an_unknown_stage() -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["graph", "outline"])
    assert result.exit_code == 0 and result.output.strip() == mermaid("outline")
    bad = runner.invoke(app, ["graph", "nosuch"])
    assert bad.exit_code == 2 and "unknown stage 'nosuch'" in bad.output


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rwb_plugins"


def test_graph_command_draws_the_graph_with_the_configs_overrides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`graph STAGE --config CFG`: the one-call outline graph replaces the built-in one; a node override of
    the writer's ranking subgraph keeps the node's place; a config with a bad override is one line, exit 2."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    runner, config = CliRunner(), str(EXAMPLE / "configs" / "plugins.yaml")
    outline = runner.invoke(app, ["graph", "outline", "--config", config])
    assert outline.exit_code == 0, outline.output
    assert "outline_in_one_call" in outline.output and "mini_outline" not in outline.output
    assert "mini_outline" in mermaid("outline")  # without a config: the built-in graph
    ranking = runner.invoke(app, ["graph", "ranking", "--config", config])
    assert ranking.exit_code == 0 and ranking.output.strip() == mermaid("ranking")  # same nodes, same edges
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "models: {writer: {name: m}}\noverrides: {outline: no_such_module_x:build}\n", encoding="utf-8"
    )
    broken = runner.invoke(app, ["graph", "outline", "--config", str(bad)])
    assert broken.exit_code == 2 and "overrides.outline: cannot import 'no_such_module_x'" in broken.output
