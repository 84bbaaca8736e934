"""A plug-in stage whose ``score()`` returns the wrong type, through the CLI: every unit fails with one line
naming the stage and the method (errors.jsonl, the console), the run exits non-zero; once the stage is fixed
the same command resumes the run, scores the kept outputs and exits 0. An older plug-in (a plain object with
``texts()``, no :class:`Stage` base class) still runs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.corpus_builder.store import save_dataset
from ruwikibench.plugin import (
    Article,
    Dataset,
    GeneratedText,
    RunConfig,
    ScoreRecord,
    Stage,
    StageContext,
    StageReturnError,
    StageScore,
    Unit,
    register_stage,
)
from ruwikibench.stage.registry import unregister_stage
from tests.cli.test_input_errors import refused_url, write_config
from tests.graphs.writer_fixture import HashEmbedder, make_dataset

runner = CliRunner()
EXPECTED = "stage 'echo_title': score() returned ScoreRecord, expected StageScore or list[ScoreRecord]"


class EchoIn(TypedDict):
    title: str


class EchoOut(BaseModel):
    echo: str


def echo(state: EchoIn) -> dict[str, Any]:
    return {"echo": state["title"].upper()}


def echo_graph() -> StateGraph:
    graph = StateGraph(EchoIn, context_schema=StageContext, input_schema=EchoIn, output_schema=EchoOut)
    graph.add_node("echo", echo)
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    return graph


def title_units(name: str, article: Article) -> list[Unit]:
    return [Unit(stage=name, article=article.name, unit_id="article", input={"title": article.title})]


class EchoStage(Stage[EchoOut]):
    """Upper-cases the title (no LLM call); ``fixed`` False: score() returns one record instead of a
    StageScore."""

    name = "echo_title"
    columns: ClassVar[list[tuple[str, str]]] = [("Length", "length")]
    output_model = EchoOut
    fixed: ClassVar[bool] = False

    def build_graph(self) -> StateGraph:
        return echo_graph()

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        return title_units(self.name, article)

    def score(self, unit: Unit, output: EchoOut, context: StageContext) -> StageScore:
        record = ScoreRecord(
            stage=self.name, article=unit.article, item="article", metrics={"length": float(len(output.echo))}
        )
        if not EchoStage.fixed:
            return record  # type: ignore[return-value]  # the mistake under test
        text = GeneratedText(
            stage=self.name, article=unit.article, item="article", title=output.echo, text=output.echo
        )
        return StageScore(records=[record], texts=[text])


class OldStyleStage:
    """An older plug-in: no base class, score() takes the stored dict and returns a list, texts() apart."""

    name = "old_echo"
    columns: ClassVar[list[tuple[str, str]]] = [("Length", "length")]

    def build_graph(self) -> StateGraph:
        return echo_graph()

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        return title_units(self.name, article)

    def score(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[ScoreRecord]:
        return [
            ScoreRecord(
                stage=self.name,
                article=unit.article,
                item="article",
                metrics={"length": float(len(output["echo"]))},
            )
        ]

    def texts(self, unit: Unit, output: dict[str, Any]) -> list[GeneratedText]:
        return [
            GeneratedText(
                stage=self.name,
                article=unit.article,
                item="article",
                title=output["echo"],
                text=output["echo"],
            )
        ]


@pytest.fixture()
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.setattr("ruwikibench.runner.setup.make_embedder", lambda config, *_: HashEmbedder())
    register_stage(EchoStage)
    register_stage(OldStyleStage)
    save_dataset(make_dataset(), tmp_path / "data")
    try:
        yield tmp_path
    finally:
        EchoStage.fixed = False
        unregister_stage("echo_title")
        unregister_stage("old_echo")


def lines(path: Path) -> list[dict[str, Any]]:
    """The records of a run file (none when the run never wrote it)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def run_stage(tmp: Path, name: str) -> Any:
    return runner.invoke(
        app,
        [
            "run",
            "stage",
            name,
            "--dataset",
            str(tmp / "data"),
            "--config",
            str(write_config(tmp, refused_url())),
            "--out",
            str(tmp / "runs"),
            "--run-id",
            name,
        ],
    )


def test_a_wrong_score_return_fails_every_unit_loudly_and_the_fixed_stage_resumes(tmp: Path) -> None:
    articles = len(make_dataset().articles)
    broken = run_stage(tmp, "echo_title")
    output = " ".join(broken.output.split())
    assert broken.exit_code == 1, output + repr(
        broken.exception
    )  # nothing succeeded (no unit asks the endpoint)
    assert f"error: {articles} of {articles} units failed" in output and EXPECTED in output
    assert "Traceback" not in output
    run = tmp / "runs" / "echo_title"
    assert [e["reason"] for e in lines(run / "errors.jsonl")] == [f"score: {EXPECTED}"] * articles
    assert len(lines(run / "outputs.jsonl")) == articles and lines(run / "results.jsonl") == []
    counts = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["echo_title"]["counts"]
    assert counts["failed_units"] == articles and counts["evaluated"] == 0  # the run's status counts them

    EchoStage.fixed = True
    resumed = run_stage(tmp, "echo_title")
    assert resumed.exit_code == 0, resumed.output + repr(resumed.exception)
    assert "Traceback" not in resumed.output and "error:" not in resumed.output
    assert len(lines(run / "outputs.jsonl")) == articles  # the outputs were kept: scored again, not run again
    assert len(lines(run / "results.jsonl")) == articles and len(lines(run / "generated.jsonl")) == articles
    counts = json.loads((run / "metrics.json").read_text(encoding="utf-8"))["echo_title"]["counts"]
    assert counts["evaluated"] == articles and counts["failed_units"] == 0


def test_an_old_style_plugin_object_still_runs(tmp: Path) -> None:
    result = run_stage(tmp, "old_echo")
    assert result.exit_code == 0, result.output + repr(result.exception)
    run = tmp / "runs" / "old_echo"
    titles = sorted(a.title.upper() for a in make_dataset().articles)
    assert sorted(t["text"] for t in lines(run / "generated.jsonl")) == titles  # from its texts()
    assert sorted(r["metrics"]["length"] for r in lines(run / "results.jsonl")) == sorted(
        len(t) for t in titles
    )


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        ({"length": 1.0}, "score() returned dict, expected StageScore or list[ScoreRecord]"),
        ([{"length": 1.0}], "score() returned a list holding dict, expected StageScore or list[ScoreRecord]"),
        (None, "score() returned NoneType, expected StageScore or list[ScoreRecord]"),
    ],
)
def test_wrong_returns_name_the_stage_and_the_method(returned: object, expected: str) -> None:
    class Wrong(OldStyleStage):
        def score(self, unit: Unit, output: dict[str, Any], context: StageContext) -> Any:
            return returned

    from ruwikibench.stage.contract import as_stage

    unit = Unit(stage="old_echo", article="a", unit_id="article", input={})
    with pytest.raises(StageReturnError) as error:
        as_stage(Wrong()).checked_score(unit, {"echo": "X"}, None)  # type: ignore[arg-type]
    assert str(error.value) == f"stage 'old_echo': {expected}"


def test_old_style_texts_of_the_wrong_type_are_named_too() -> None:
    class WrongTexts(OldStyleStage):
        def texts(self, unit: Unit, output: dict[str, Any]) -> Any:
            return ["a text"]

    from ruwikibench.stage.contract import as_stage

    unit = Unit(stage="old_echo", article="a", unit_id="article", input={})
    with pytest.raises(StageReturnError, match=r"stage 'old_echo': texts\(\) returned str in its list"):
        as_stage(WrongTexts()).checked_score(unit, {"echo": "X"}, None)  # type: ignore[arg-type]


def test_an_output_that_does_not_fit_the_output_model_names_the_stage() -> None:
    from ruwikibench.plugin import StageOutputError

    unit = Unit(stage="echo_title", article="a", unit_id="article", input={})
    with pytest.raises(
        StageOutputError, match=r"stage 'echo_title': the output does not fit EchoOut: echo: Field"
    ):
        EchoStage().checked_score(unit, {"other": 1}, None)  # type: ignore[arg-type]


def doc_stage_source() -> str:
    """The Python block under '### A complete minimal stage' in docs/plugins.md."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text(encoding="utf-8")
    section = text.split("### A complete minimal stage", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_minimal_stage_of_the_docs_runs(tmp: Path) -> None:
    namespace: dict[str, Any] = {"__name__": "docs_minimal_stage"}
    exec(compile(doc_stage_source(), "docs/plugins.md", "exec"), namespace)  # noqa: S102 - the docs' example, run to keep it true
    try:
        result = run_stage(tmp, "restate")
    finally:
        unregister_stage("restate")
    assert result.exit_code == 0, result.output + repr(result.exception)
    run = tmp / "runs" / "restate"
    records = lines(run / "results.jsonl")
    assert len(records) == len(make_dataset().articles) and all(
        0 <= r["metrics"]["rouge_l"] <= 1 for r in records
    )
    assert all(t["text"].endswith("статья энциклопедии.") for t in lines(run / "generated.jsonl"))
