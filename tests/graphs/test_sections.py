import asyncio
import hashlib
import re

import numpy as np
import pytest

from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.dataset import Article, Dataset, Paragraph, Section, Snippet, Source
from ruwikibench.graphs.sections import STAGE, SectionsStage, build_section_graph, build_sections_graph
from ruwikibench.models.embeddings import normalize
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.stage import Unit, get_stage
from ruwikibench.stage.context import StageContext


class HashEmbedder:
    """Deterministic bag-of-words vectors (md5 buckets), L2-normalized."""

    id = "hash"

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        out = np.zeros((len(texts), 256), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % 256] += 1
        return normalize(out)


def kind(prompt: str) -> str:
    if "Дополни описание" in prompt:
        return "extend"
    if "Кратко опиши" in prompt:
        return "describe"
    return "write"


def writer(section_texts: dict[str, str] | None = None):
    """Fake writer: descriptions are 'описание N', section text is the scripted text for the section title."""

    def respond(messages):
        prompt = messages[-1]["content"]
        if kind(prompt) != "write":
            return f"описание {prompt.count('[')}"
        title = re.search(r"раздела «(.+?)»", prompt)
        return (section_texts or {}).get(title.group(1) if title else "", "Сгенерированный текст раздела.")

    return respond


def make_context(
    responder, dataset: Dataset | None = None, **sections: object
) -> tuple[StageContext, ScriptedChat]:
    chat = ScriptedChat(responder)
    config = RunConfig(models={"writer": ModelConfig(name="fake")}, sections=sections)
    context = StageContext(
        config=config,
        llm=LLM({"writer": chat}),
        embedder=HashEmbedder(),
        prompts=PromptLibrary(),
        dataset=dataset,
    )
    return context, chat


def run(graph, payload, context):
    return asyncio.run(graph.compile().ainvoke(payload, context=context))


def kinds(chat: ScriptedChat) -> list[str]:
    return [kind(m[-1]["content"]) for m in chat.calls]


RAW = "Вулкан извергался в 1902 году и разрушил город Сен-Пьер на острове Мартиника."


def test_one_group_still_calls_the_writer_and_never_returns_raw_text() -> None:
    context, chat = make_context(writer())
    section = {"id": "s1", "title": "История", "snippets": [{"id": "a#0", "text": RAW}]}
    out = run(build_section_graph(), {"article": "Мон-Пеле", "section": section}, context)
    result = out["done"][0]
    assert kinds(chat) == ["describe", "write"]
    assert result["text"] == "Сгенерированный текст раздела." != RAW
    assert result["status"] == "ok" and result["calls"] == 2 and result["write_calls"] == 1
    assert result["groups"] == [{"index": 0, "snippet_ids": ["a#0"], "description": "описание 1", "calls": 1}]


def test_article_graph_groups_compresses_and_keeps_section_order() -> None:
    context, chat = make_context(writer({"Б": "Текст Б."}), chunk_size=2)
    sections = [
        {
            "id": "s2",
            "title": "Б",
            "snippets": [
                {"id": "x1", "text": "альфа альфа альфа", "source_id": "x"},
                {"id": "x2", "text": "альфа альфа бета", "source_id": "x"},  # cos 0.89 to x1: same group
                {"id": "y1", "text": "гамма дельта", "source_id": "y"},  # its own group
                {"id": "x3", "text": "альфа альфа альфа бета", "source_id": "x"},
            ],
        },
        {"id": "s1", "title": "А", "level": 3, "snippets": []},
    ]
    out = run(build_sections_graph(), {"article": "Статья", "sections": sections}, context)
    assert out["article"] == "Статья" and [r["id"] for r in out["results"]] == ["s2", "s1"]
    b, a = out["results"]
    assert [g["snippet_ids"] for g in b["groups"]] == [["x1", "x2", "x3"], ["y1"]]
    # group of 3 with chunk_size 2: describe + extend; singleton: describe; then one write
    assert [g["calls"] for g in b["groups"]] == [2, 1] and b["write_calls"] == 1 and b["text"] == "Текст Б."
    assert a["status"] == "no_snippets" and a["text"] == "" and a["calls"] == 0 and a["level"] == 3
    assert sorted(kinds(chat)) == ["describe", "describe", "extend", "write"]
    assert context.llm.usage.by_role["sections"].calls == 4 == b["calls"]  # billed to its own role


def test_empty_article_and_capped_snippets() -> None:
    context, _ = make_context(writer(), max_snippets=2)
    assert run(build_sections_graph(), {"article": "Пусто", "sections": []}, context) == {
        "article": "Пусто",
        "results": [],
    }
    snippets = [{"id": f"s{i}", "text": f"слово{i}", "source_id": f"src{i % 2}"} for i in range(6)]
    out = run(
        build_section_graph(),
        {"article": "Т", "section": {"id": "a", "title": "Т", "snippets": snippets}},
        context,
    )
    result = out["done"][0]
    assert result["snippets_total"] == 6 and result["snippet_ids"] == ["s0", "s1"]


def test_writer_mode_resolves_snippet_ids_through_the_dataset() -> None:
    dataset = Dataset(
        articles=[],
        sources=[],
        snippets=[
            Snippet(id="w/1#0", article="w", source_id="w/1", index=0, text=RAW, word_start=0, word_end=12)
        ],
    )
    context, chat = make_context(writer(), dataset=dataset)
    section = {"id": "h1", "title": "История", "level": 2, "snippet_ids": ["w/1#0"]}
    out = run(build_sections_graph(), {"article": "Мон-Пеле", "sections": [section]}, context)
    assert out["results"][0]["snippet_ids"] == ["w/1#0"] and out["results"][0]["status"] == "ok"
    assert RAW in chat.calls[0][-1]["content"]
    context, _ = make_context(writer())
    with pytest.raises(ValueError, match="'Мон-Пеле', section 'h1'.*no dataset"):
        run(build_sections_graph(), {"article": "Мон-Пеле", "sections": [section]}, context)


def test_bad_section_input_names_article_and_section() -> None:
    context, _ = make_context(writer())
    with pytest.raises(ValueError, match=r"article 'Т', section 'q'.*snipets"):
        run(
            build_sections_graph(),
            {"article": "Т", "sections": [{"id": "q", "title": "x", "snipets": []}]},
            context,
        )


def test_oracle_filter_is_optional_and_labelled() -> None:
    snippets = [
        {"id": "near", "text": "кубит квантовый компьютер"},
        {"id": "far", "text": "борщ свёкла капуста"},
    ]
    section = {
        "id": "s1",
        "title": "Кубиты",
        "snippets": snippets,
        "reference": "Квантовый компьютер и кубит.",
    }
    context, _ = make_context(writer())
    plain = run(build_section_graph(), {"article": "КК", "section": section}, context)["done"][0]
    assert plain["oracle_filter"] is None and plain["snippet_ids"] == ["near", "far"]
    context, _ = make_context(writer(), oracle_filter=0.6)
    oracle = run(build_section_graph(), {"article": "КК", "section": section}, context)["done"][0]
    assert (
        oracle["oracle_filter"] == 0.6
        and oracle["snippet_ids"] == ["near"]
        and oracle["oracle_dropped"] == ["far"]
    )
    empty = run(
        build_section_graph(), {"article": "КК", "section": {**section, "snippets": snippets[1:]}}, context
    )["done"][0]
    assert empty["status"] == "oracle_empty" and empty["calls"] == 0
    for reference in (None, "", "  "):  # no gold text: excluded with its reason and counted, never a failure
        result = run(
            build_section_graph(), {"article": "КК", "section": {**section, "reference": reference}}, context
        )["done"][0]
        assert result["status"] == "no_reference" and result["calls"] == 0 and result["text"] == ""
        unit = Unit(
            stage="sections",
            article="КК",
            unit_id=section["id"],
            input={"article": "КК", "sections": [{**section, "reference": reference}]},
        )
        [record] = SectionsStage().checked_score(unit, {"results": [result]}, context).records
        assert record.excluded == "no reference text" and not record.metrics
        assert aggregate([record.model_dump(mode="json")], [])["sections"]["excluded_reasons"] == {
            "no reference text": 1
        }


# --------------------------------------------------------------------------- the benchmark STAGE


def sample_dataset() -> Dataset:
    cite = lambda text, *ids: Paragraph(text=text, citations=list(ids))
    root = Section(
        id="s0",
        level=1,
        title="Мон-Пеле",
        paragraphs=[cite("Мон-Пеле — вулкан на Мартинике.", "c1")],
        children=[
            Section(
                id="s1", level=2, title="История", paragraphs=[cite("В 1902 году вулкан извергался.", "c2")]
            ),
            Section(
                id="s2", level=2, title="Без источников", paragraphs=[cite("Текст без источника.", "c9")]
            ),
            Section(
                id="s3",
                level=2,
                title="Пустой",
                children=[
                    Section(
                        id="s4", level=3, title="Подраздел", paragraphs=[cite("Вулкан активен.", "c1", "c2")]
                    )
                ],
            ),
        ],
    )
    article = Article(title="Мон-Пеле", name="Мон-Пеле", root=root, source_ids=["m/1", "m/2"])
    sources = [
        Source(id="m/1", article="Мон-Пеле", footnote_id="c1", text="вулкан Мартиника " * 5),
        Source(id="m/2", article="Мон-Пеле", footnote_id="c2", text="извержение 1902 " * 5),
    ]
    snippets = [
        Snippet(
            id=f"{s.id}#0",
            article="Мон-Пеле",
            source_id=s.id,
            index=0,
            text=s.text,
            word_start=0,
            word_end=10,
        )
        for s in sources
    ]
    return Dataset(articles=[article], sources=sources, snippets=snippets)


def test_stage_contract_and_units() -> None:
    assert get_stage("sections") is STAGE and STAGE.name == "sections"
    assert [(m.label, m.key) for m in STAGE.metrics[:3]] == [
        ("Mean F1", "f1"),
        ("Mean ROUGE-L", "rouge_l"),
        ("Mean BLEU", "bleu"),
    ]
    graph = STAGE.build_graph()
    assert graph.context_schema is StageContext
    dataset = sample_dataset()
    article = dataset.articles[0]
    context, _ = make_context(writer())
    units = STAGE.units(dataset, article, context.config)
    assert [u.unit_id for u in units] == ["s0", "s1", "s2", "s3", "s4"]
    assert all(
        u.stage == "sections" and u.article == "Мон-Пеле" and len(u.input["sections"]) == 1 for u in units
    )
    by_id = {u.unit_id: u.input["sections"][0] for u in units}
    assert [s["id"] for s in by_id["s4"]["snippets"]] == ["m/1#0", "m/2#0"]
    assert by_id["s2"]["snippets"] == [] and by_id["s3"]["reference"] == ""
    context.config.options(SectionsConfig).unit = "article"
    (whole,) = STAGE.units(dataset, article, context.config)
    assert whole.unit_id == "article" and [s["id"] for s in whole.input["sections"]] == [
        "s0",
        "s1",
        "s2",
        "s3",
        "s4",
    ]


def test_scores_exclusions_and_texts_through_the_compiled_graph() -> None:
    dataset = sample_dataset()
    article = dataset.articles[0]
    # the fake writer reproduces the gold text of "История" exactly, writes something else for the lead
    context, _ = make_context(writer({"История": "В 1902 году вулкан извергался."}), rouge_lemmatize=True)
    (unit,) = STAGE.units(
        dataset,
        article,
        context.config.with_options(
            context.config.options(SectionsConfig).model_copy(update={"unit": "article"})
        ),
    )
    output = run(STAGE.build_graph(), unit.input, context)
    records = {r.item: r for r in STAGE.checked_score(unit, output, context).records}
    assert list(records) == ["s0", "s1", "s2", "s3", "s4"]
    assert records["s1"].metrics["f1"] == pytest.approx(1.0) and records["s1"].metrics[
        "rouge_l"
    ] == pytest.approx(1.0)
    assert (
        records["s1"].metrics["bleu"] == pytest.approx(1.0) and records["s1"].metrics["rouge_l_lemma"] == 1.0
    )
    assert 0 <= records["s0"].metrics["f1"] < 1 and records["s0"].excluded is None
    assert records["s2"].excluded == "no source snippet" and records["s2"].metrics == {}
    assert records["s3"].excluded == "no reference text"
    assert records["s1"].info["oracle"] is False and records["s1"].info["bleu_tokenize"] == "intl"
    texts = STAGE.texts(unit, STAGE.parse_output(output))
    assert [t.item for t in texts] == ["s0", "s1", "s4"]
    assert texts[1].reference == "В 1902 году вулкан извергался." and texts[1].sources == [
        "извержение 1902 " * 5
    ]


def test_authors_prompt_adds_the_authors_sentence_scores() -> None:
    """With embedder.authors_prompt the records carry p/r/f1_authors (sentences encoded "Classification" +
    text)."""
    from ruwikibench.evaluators.similarity import sentence_prf

    dataset = sample_dataset()
    context, _ = make_context(writer({"История": "Вулкан извергался в 1902 году."}))  # gold: "В 1902 году …"
    units = STAGE.units(dataset, dataset.articles[0], context.config)
    (unit,) = [u for u in units if u.input["sections"][0]["title"] == "История"]
    output = run(STAGE.build_graph(), unit.input, context)
    (plain,) = STAGE.checked_score(unit, output, context).records
    embedder = context.config.embedder.model_copy(update={"kind": "use", "authors_prompt": "Classification"})
    context.config = context.config.model_copy(update={"embedder": embedder})
    (record,) = STAGE.checked_score(unit, output, context).records
    assert not any(key.endswith("_authors") for key in plain.metrics)
    assert {k: v for k, v in record.metrics.items() if not k.endswith("_authors")} == plain.metrics
    text, reference = output["results"][0]["text"], unit.input["sections"][0]["reference"]
    authors = sentence_prf(text, reference, context.embedder, "Classification")
    # the same words: 1 without the prompt; glued to the first word the prompt makes the bags differ
    assert record.metrics["f1"] == pytest.approx(1.0) and authors["f1"] < 0.9
    assert {k: record.metrics[f"{k}_authors"] for k in ("p", "r", "f1")} == authors


def test_empty_answer_fails_the_unit_and_empty_text_scores_zero() -> None:
    from ruwikibench.models.llm import EmptyAnswer

    dataset = sample_dataset()
    context, _ = make_context(lambda m: "" if kind(m[-1]["content"]) == "write" else "описание")
    unit = STAGE.units(dataset, dataset.articles[0], context.config)[1]
    with pytest.raises(EmptyAnswer, match="empty answer"):  # an empty reply is a failed request, not a text
        run(STAGE.build_graph(), unit.input, context)
    context, _ = make_context(lambda m: "текст" if kind(m[-1]["content"]) == "write" else "описание")
    output = run(STAGE.build_graph(), unit.input, context)
    output["results"][0] |= {"text": "", "status": "empty_output"}  # a text that cleaning left empty
    (record,) = STAGE.checked_score(unit, output, context).records
    assert record.excluded is None and record.metrics["f1"] == 0.0 and record.info["empty_output"] is True
    assert STAGE.texts(unit, STAGE.parse_output(output)) == []


def test_a_text_with_no_word_scores_and_floors_as_an_empty_one() -> None:
    """A section that is "." used to be embedded and floored (rescaled F1 at chance, above a real section of
    the wrong article): now it scores 0, is marked empty, adds no floor and is no text for the judges."""
    dataset = sample_dataset()
    context, _ = make_context(lambda m: "текст" if kind(m[-1]["content"]) == "write" else "описание")
    unit = STAGE.units(dataset, dataset.articles[0], context.config)[1]
    output = run(STAGE.build_graph(), unit.input, context)
    output["results"][0] |= {"text": " . "}
    (record,) = STAGE.checked_score(unit, output, context).records
    assert record.excluded is None and record.info["empty_output"] is True
    assert {k: record.metrics[k] for k in ("p", "r", "f1", "rouge_l", "bleu")} == dict.fromkeys(
        ("p", "r", "f1", "rouge_l", "bleu"), 0.0
    )
    assert STAGE.floor_sides(unit, output, context) == []
    assert STAGE.texts(unit, STAGE.parse_output(output)) == []


def test_a_short_text_keeps_the_share_of_recall_its_length_allows() -> None:
    """One word of the reference against its sentence: recall scaled by its coverage (written in info), the
    floor side kept (its floor is the similarity's chance level)."""
    from ruwikibench.evaluators.coverage import coverage
    from ruwikibench.evaluators.similarity import sentence_prf

    dataset = sample_dataset()
    context, _ = make_context(lambda m: "текст" if kind(m[-1]["content"]) == "write" else "описание")
    (unit,) = [u for u in STAGE.units(dataset, dataset.articles[0], context.config) if u.unit_id == "s1"]
    output = run(STAGE.build_graph(), unit.input, context)
    output["results"][0] |= {"text": "Вулкан."}
    reference = unit.input["sections"][0]["reference"]
    (record,) = STAGE.checked_score(unit, output, context).records
    share = coverage("Вулкан.", reference)
    raw = sentence_prf("Вулкан.", reference, context.embedder)
    assert share < 1 and record.info["coverage"] == round(share, 4)
    assert record.metrics["r"] == pytest.approx(raw["r"] * share) and record.metrics["p"] == raw["p"]
    (side,) = STAGE.floor_sides(unit, output, context)
    assert STAGE.cross_score(side.generated, reference, context) == raw


def test_runs_under_a_checkpointer_and_the_output_is_json() -> None:
    import json

    from langgraph.checkpoint.memory import InMemorySaver

    context, _ = make_context(writer())
    section = {
        "id": "s1",
        "title": "История",
        "snippets": [{"id": "a#0", "text": RAW}, {"id": "b#0", "text": "гамма"}],
    }
    graph = build_sections_graph().compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    out = asyncio.run(graph.ainvoke({"article": "Мон-Пеле", "sections": [section]}, config, context=context))
    assert json.loads(json.dumps(out, ensure_ascii=False)) == out
    assert out["results"][0]["status"] == "ok" and len(out["results"][0]["groups"]) == 2
