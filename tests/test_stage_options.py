"""Stage-owned options and model roles: a stage declares an ``options_model`` and ``roles``; ``stage_options``
in the run config is validated by the model when the config loads, recorded in spec.json, part of the run id
and read by the stage at run time; its roles are configurable under ``models:`` with the usual fallback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar, TypedDict

import pytest
import yaml
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from pydantic import BaseModel, ConfigDict, Field

from ruwikibench.conf.config import ConfigError, RunConfig, prompt_slot
from ruwikibench.conf.loader import load_config
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, build_spec, execute, run_id_for
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.contract import GeneratedText, ScoreRecord, Unit
from ruwikibench.stage.registry import register_stage, stage_options, unregister_stage

NAME = "opt_stage"


class OptOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(default=3, ge=1, description="snippets shown")
    label: str = "итог"
    prompt: str = prompt_slot("ru/query_description_ru.txt", "title")


class In(TypedDict):
    title: str


class Out(TypedDict):
    answer: str


class State(In, Out, total=False):
    pass


async def answer(state: State, runtime: Runtime[StageContext]) -> dict[str, Any]:
    options: OptOptions = runtime.context.stage_options(NAME)
    completion = await runtime.context.llm.complete("opt_role", state["title"])
    return {"answer": f"{options.label} {options.top_k} {completion.text}"}


class OptStage:
    name = NAME
    columns: ClassVar[list[tuple[str, str]]] = [("Words", "words")]
    options_model = OptOptions
    roles = ("opt_role",)

    def build_graph(self) -> StateGraph:
        graph = StateGraph(State, context_schema=StageContext, input_schema=In, output_schema=Out)
        graph.add_node("answer", answer)
        graph.add_edge(START, "answer")
        graph.add_edge("answer", END)
        return graph

    def units(self, dataset: Dataset, article: Article, config: RunConfig) -> list[Unit]:
        return [Unit(stage=NAME, article=article.name, unit_id="article", input={"title": article.title})]

    def score(self, unit: Unit, output: dict[str, Any], context: StageContext) -> list[ScoreRecord]:
        return [
            ScoreRecord(
                stage=NAME,
                article=unit.article,
                item="article",
                metrics={"words": float(len(output["answer"].split()))},
            )
        ]

    def texts(self, unit: Unit, output: dict[str, Any]) -> list[GeneratedText]:
        return []


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    register_stage(OptStage)
    yield
    unregister_stage(NAME)


def _load(tmp_path: Path, **extra: Any) -> RunConfig:
    data = {"name": "o", "models": {"writer": {"name": "w"}}, "stages": [NAME], **extra}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    return load_config(path)


def _dataset() -> Dataset:
    article = Article(title="Кошка", name="Кошка", root=Section(id="s0", level=1, title="Кошка"))
    return Dataset(articles=[article], sources=[], snippets=[])


def test_options_are_validated_when_the_config_loads(tmp_path: Path) -> None:
    config = _load(tmp_path, stage_options={NAME: {"top_k": 5}})
    assert config.stage_options[NAME] == OptOptions(top_k=5) == config.options(OptOptions)
    assert config.model_dump(mode="json")["stage_options"][NAME] == {
        "top_k": 5,
        "label": "итог",
        "prompt": "ru/query_description_ru.txt",
    }
    assert stage_options(config, NAME) == OptOptions(top_k=5)
    with pytest.raises(
        ConfigError, match=rf"stage_options\.{NAME}\.top_k: Input should be greater than or equal"
    ):
        _load(tmp_path, stage_options={NAME: {"top_k": 0}})
    with pytest.raises(ConfigError, match=rf"stage_options\.{NAME}\.topk: Extra inputs are not permitted"):
        _load(tmp_path, stage_options={NAME: {"topk": 2}})
    register_stage(type("BareStage", (OptStage,), {"name": "bare_stage", "options_model": None}))
    try:
        with pytest.raises(
            ConfigError, match=r"stage_options\.bare_stage: stage 'bare_stage' declares no options"
        ):
            _load(tmp_path, stage_options={"bare_stage": {"x": 1}})
    finally:
        unregister_stage("bare_stage")
    with pytest.raises(ConfigError, match=r"stage_options\.ranking\.x: Extra inputs are not permitted"):
        _load(tmp_path, stage_options={"ranking": {"x": 1}})  # a built-in stage's options: the same door
    with pytest.raises(ConfigError, match=r"stage_options\.nostage: unknown stage 'nostage'"):
        _load(tmp_path, stage_options={"nostage": {}})


def test_a_prompt_option_is_checked_like_the_builtin_prompt_fields(tmp_path: Path) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("О {titel}", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"stage_options\.{NAME}\.prompt .*unknown field\(s\) {{titel}}"):
        _load(tmp_path, stage_options={NAME: {"prompt": str(bad)}})


def test_two_option_values_give_two_run_ids_and_the_spec_records_them(tmp_path: Path) -> None:
    dataset, options = _dataset(), RunOptions(stages=[NAME])
    silent = _load(tmp_path)
    default = _load(tmp_path, stage_options={NAME: {"top_k": 3}})
    five = _load(tmp_path, stage_options={NAME: {"top_k": 5}})
    assert run_id_for(silent, dataset, options) == run_id_for(default, dataset, options)  # the same settings
    assert run_id_for(five, dataset, options) != run_id_for(default, dataset, options)
    spec = build_spec("r", five, dataset, "d", options)
    assert spec["stage_identity"][NAME]["options"]["top_k"] == 5
    assert spec["config"]["stage_options"][NAME]["top_k"] == 5
    prompt = PromptLibrary().get("ru/query_description_ru.txt")
    assert spec["stage_identity"][NAME]["prompts"] == {"ru/query_description_ru.txt": prompt.sha256}
    # options of a stage the run does not run leave its id alone
    assert run_id_for(five, dataset, RunOptions(stages=["outline"])) == run_id_for(
        silent, dataset, RunOptions(stages=["outline"])
    )


def test_configs_without_the_new_fields_keep_their_run_ids() -> None:
    """Pinned before stage_options and stage roles existed (tests/runner/test_run_id.py pins more)."""
    from tests.retrieval.synthetic import make_dataset

    config = RunConfig.model_validate(
        {
            "name": "r",
            "models": {"writer": {"name": "fake", "endpoints": ["http://127.0.0.1:8000/v1"]}},
            "ranking": {"query_mode": "title"},
        }
    )
    assert "stage_options" not in config.identity()
    assert run_id_for(config, make_dataset(), RunOptions()) == "r-66468370"


def test_stage_roles_are_configurable_and_fall_back_to_writer(tmp_path: Path) -> None:
    config = _load(tmp_path, models={"writer": {"name": "w"}, "opt_role": {"name": "own"}})
    assert config.model_for("opt_role").name == "own"
    assert _load(tmp_path).model_for("opt_role").name == "w"
    with pytest.raises(
        ConfigError, match=r"models\.nope: not a role; built-in roles: query, .*stage roles: opt_role"
    ):
        _load(tmp_path, models={"writer": {"name": "w"}, "nope": {"name": "x"}})


async def _run(config: RunConfig, tmp_path: Path, backends: dict[str, ScriptedChat]) -> list[str]:
    context = StageContext(
        config=config,
        llm=LLM(dict(backends)),
        embedder=None,  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=_dataset(),
    )
    rundir = await execute(context, "mem", RunOptions(stages=[NAME], out=tmp_path / "runs", progress=False))
    return [o["output"]["answer"] for o in rundir.outputs()]


async def test_the_stage_reads_its_options_and_its_role_at_run_time(tmp_path: Path) -> None:
    writer, own = ScriptedChat(lambda m: "писатель"), ScriptedChat(lambda m: "свой")
    config = _load(
        tmp_path,
        stage_options={NAME: {"top_k": 7, "label": "вывод"}},
        models={"writer": {"name": "w"}, "opt_role": {"name": "own"}},
    )
    assert await _run(config, tmp_path, {"writer": writer, "opt_role": own}) == ["вывод 7 свой"]
    assert len(own.calls) == 1 and not writer.calls
    fallback = _load(tmp_path)  # no options, no model for the role: defaults, and the writer answers
    assert await _run(fallback, tmp_path, {"writer": writer}) == ["итог 3 писатель"]
