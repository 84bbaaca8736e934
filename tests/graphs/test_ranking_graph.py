import asyncio
import json
from pathlib import Path

import pytest

from ruwikibench.conf.builtin_options import RankingConfig
from ruwikibench.evaluators.ranking import ndcg, r_precision
from ruwikibench.graphs.ranking import STAGE, build_ranking_graph
from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.nodes.queries import ReferenceQueriesError, generate_reference_queries
from ruwikibench.nodes.ranking import RerankFailed
from ruwikibench.retrieval.bm25 import BM25Index
from ruwikibench.runner.stage import get_stage
from tests.retrieval.synthetic import article_of_prompt, make_context, make_dataset

DATASET = make_dataset()
ARTICLE = DATASET.articles[0]


def oracle(p_relevant: float = 0.97, p_other: float = 0.03):
    def respond(messages):
        title, article = article_of_prompt(DATASET, messages[-1]["content"])
        return yes_no_completion(p_relevant if DATASET.article(title).name == article else p_other)

    return respond


async def run(context, article=ARTICLE):
    unit = STAGE.units(DATASET, article, context.config)[0]
    output = await build_ranking_graph().compile().ainvoke(unit.input, context=context)
    return unit, output, STAGE.checked_score(unit, output, context).records[0]


def test_stage_contract() -> None:
    assert get_stage("ranking") is STAGE and STAGE.name == "ranking"
    assert [m.key for m in STAGE.metrics] == [
        "bm25_ndcg",
        "bm25_r_precision",
        "rerank_ndcg",
        "rerank_r_precision",
        "pool_recall",
        "bm25_recall_at_r",
        "rerank_recall_at_r",
    ]
    graph = build_ranking_graph()
    assert not getattr(graph, "compiled", False)
    assert set(graph.nodes) == {"expand_query", "retrieve", "rerank", "rank"}
    context = make_context(DATASET, {}, Path("/nonexistent"))
    units = [u for a in DATASET.articles for u in STAGE.units(DATASET, a, context.config)]
    assert len(units) == len(DATASET.articles) and len({u.article for u in units}) == len(units)
    assert units[0].input == {
        "article": ARTICLE.name,
        "title": ARTICLE.title,
        "pool_size": 3 * len(DATASET.snippets_of(ARTICLE.name)),
    }
    assert STAGE.texts(units[0], {}) == []


async def test_oracle_end_to_end_title_mode(tmp_path) -> None:
    fake = ScriptedChat(oracle())
    context = make_context(DATASET, {"ranking": fake}, tmp_path, query_mode="title", snippet_chars=300)
    _, output, record = await run(context)
    json.dumps(output)  # the captured output is JSON-able as is
    relevant_total = len(DATASET.snippets_of(ARTICLE.name))
    assert output["query"] == ARTICLE.title and output["query_mode"] == "title"
    assert output["pool_size"] == 3 * relevant_total
    assert len(fake.calls) == len(output["candidates"]) > 0
    assert all(len(call[-1]["content"]) < 300 + 400 for call in fake.calls)  # snippet cut to snippet_chars
    assert record.metrics["rerank_ndcg"] == 1.0 and record.metrics["rerank_r_precision"] == 1.0
    assert record.metrics["bm25_r_precision"] < 1.0  # the pool mixes relevant and other snippets
    # BM25 baseline metrics = the index's own order scored independently.
    hits = BM25Index.build(DATASET, "lemma").search(ARTICLE.title, output["pool_size"])
    labels = [int(DATASET.snippet(h.snippet_id).article == ARTICLE.name) for h in hits]
    assert [c["snippet_id"] for c in sorted(output["candidates"], key=lambda c: c["bm25_rank"])] == [
        h.snippet_id for h in hits
    ]
    assert record.metrics["bm25_ndcg"] == pytest.approx(ndcg(labels))
    assert record.metrics["bm25_r_precision"] == pytest.approx(r_precision(labels))
    assert record.metrics["pool_recall"] == pytest.approx(sum(labels) / relevant_total)
    assert record.metrics["bm25_recall_at_r"] == pytest.approx(sum(labels[:relevant_total]) / relevant_total)
    assert record.info["judged_logprobs"] == len(hits) and record.info["judged_text"] == 0
    assert [c["rank"] for c in output["candidates"]] == list(range(1, len(hits) + 1))


async def test_reversed_oracle_gives_the_minimum(tmp_path) -> None:
    context = make_context(DATASET, {"ranking": oracle(0.02, 0.98)}, tmp_path, query_mode="title")
    _, output, record = await run(context)
    labels = [int(c["snippet_id"].startswith(ARTICLE.name + "/")) for c in output["candidates"]]
    assert labels == sorted(labels)
    assert record.metrics["rerank_ndcg"] == pytest.approx(ndcg(sorted(labels)))
    assert record.metrics["rerank_ndcg"] < record.metrics["bm25_ndcg"]


async def test_equal_scores_keep_bm25_order(tmp_path) -> None:
    context = make_context(
        DATASET, {"ranking": lambda m: yes_no_completion(0.7)}, tmp_path, query_mode="title"
    )
    _, output, record = await run(context)
    assert [c["bm25_rank"] for c in output["candidates"]] == list(range(1, len(output["candidates"]) + 1))
    assert record.metrics["rerank_ndcg"] == record.metrics["bm25_ndcg"]


async def test_fallbacks_and_failures_are_counted_and_ranked_last(tmp_path) -> None:
    answers = iter(["Да", "**Нет**", "Не могу сказать", RuntimeError("503 from endpoint")] * 100)

    def respond(messages):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    context = make_context(DATASET, {"ranking": respond}, tmp_path, query_mode="title", max_candidates=8)
    _, output, record = await run(context)
    assert output["pool_size"] == 18 and len(output["candidates"]) == 8  # thinned evenly, pool size kept
    counts = {"judged_text": 4, "judged_unparseable": 2, "judged_error": 2, "judged_logprobs": 0}
    assert {key: record.info[key] for key in counts} == counts
    sources = [c["source"] for c in output["candidates"]]
    assert sources[:2] == ["text", "text"] and set(sources[4:]) == {"unparseable", "error"}
    assert [c["llm_score"] for c in output["candidates"][:4]] == [1.0, 1.0, 0.0, 0.0]
    errors = [c for c in output["candidates"] if c["source"] == "error"]
    assert all("503" in c["error"] for c in errors) and all(c["llm_score"] is None for c in errors)
    unscored = [c["bm25_rank"] for c in output["candidates"][4:]]
    assert unscored == sorted(unscored)


async def test_generated_mode_writes_ru_and_en_concurrently(tmp_path) -> None:
    running, peak = 0, 0

    class Describer(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.02)
            running -= 1
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    def describe(messages):
        prompt = messages[-1]["content"]
        return (
            "About qubits and quantum computing."
            if "English" in prompt
            else "Статья о кубитах и квантовых компьютерах."
        )

    query_model = Describer(describe)
    context = make_context(
        DATASET, {"query": query_model, "ranking": oracle()}, tmp_path, query_mode="generated"
    )
    _, output, record = await run(context)
    assert peak == 2 and len(query_model.calls) == 2
    assert output["query"] == "Статья о кубитах и квантовых компьютерах.\nAbout qubits and quantum computing."
    assert output["query_mode"] == "generated"
    assert all(ARTICLE.title in call[-1]["content"] for call in query_model.calls)
    assert record.metrics["rerank_ndcg"] == 1.0 and record.metrics["pool_recall"] > 0


async def test_reference_mode_needs_stored_queries_then_uses_them(tmp_path) -> None:
    seen: list[str] = []

    def reference(messages):
        seen.append(messages[-1]["content"])
        prompt = messages[-1]["content"]
        lang = "en" if "English" in prompt else "ru"
        title = prompt.split("«", 1)[1].split("»", 1)[0] if lang == "ru" else prompt.split('"', 2)[1]
        return f"{lang}: описание {title}"

    context = make_context(
        DATASET, {"reference": reference, "ranking": oracle()}, tmp_path, query_mode="reference"
    )
    with pytest.raises(ReferenceQueriesError, match="ruwikibench ranking reference-queries"):
        await run(context)
    path = await generate_reference_queries(tmp_path, context, progress=False)
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["model"] == "fake-reference" and stored["dataset_id"] == DATASET.dataset_id
    assert set(stored["prompts"]) == {"ru/reference_query.txt", "ru/reference_query_en.txt"}
    assert set(stored["queries"]) == {a.name for a in DATASET.articles} and len(seen) == 2 * len(
        DATASET.articles
    )
    assert any(all(h in prompt for h in ARTICLE.h2_titles()) for prompt in seen)  # H2 headings in the prompt
    _, output, record = await run(context)
    assert output["query"] == f"ru: описание {ARTICLE.title}\nen: описание {ARTICLE.title}"
    assert output["query_mode"] == "reference" and record.metrics["rerank_ndcg"] == 1.0
    # Resumable: nothing left to write, no new calls.
    await generate_reference_queries(tmp_path, context, progress=False)
    assert len(seen) == 2 * len(DATASET.articles)


async def test_reference_queries_from_another_model_are_refused(tmp_path) -> None:
    first = make_context(DATASET, {"reference": lambda m: "описание"}, tmp_path)
    await generate_reference_queries(tmp_path, first, progress=False)
    other = make_context(DATASET, {"writer": lambda m: "другое"}, tmp_path)
    with pytest.raises(ReferenceQueriesError, match="overwrite=True"):
        await generate_reference_queries(tmp_path, other, progress=False)
    path = await generate_reference_queries(tmp_path, other, progress=False, overwrite=True)
    assert json.loads(path.read_text(encoding="utf-8"))["model"] == "fake-writer"


async def test_reference_queries_of_another_dataset_are_refused(tmp_path) -> None:
    context = make_context(make_dataset(seed=99), {"reference": lambda m: "описание"}, tmp_path)
    await generate_reference_queries(tmp_path, context, progress=False)
    mine = make_context(DATASET, {"ranking": oracle()}, tmp_path, query_mode="reference")
    with pytest.raises(ReferenceQueriesError, match="written for dataset"):
        await run(mine)


async def test_empty_pool_is_a_record_with_a_reason(tmp_path) -> None:
    context = make_context(DATASET, {"ranking": oracle()}, tmp_path, query_mode="title")
    unit = STAGE.units(DATASET, ARTICLE, context.config)[0]
    unit.input["query"] = "и в на the and"  # stopwords only
    output = await build_ranking_graph().compile().ainvoke(unit.input, context=context)
    record = STAGE.checked_score(unit, output, context).records[0]
    assert output["candidates"] == [] and output["query_mode"] == "given"
    assert record.excluded is None and record.info["reason"].startswith("BM25 found no snippet")
    assert record.metrics["rerank_ndcg"] == 0.0 and record.metrics["pool_recall"] == 0.0


async def test_article_without_snippets_is_excluded_not_dropped(tmp_path) -> None:
    dataset = make_dataset()
    dataset.snippets = [s for s in dataset.snippets if s.article != ARTICLE.name]
    context = make_context(dataset, {"ranking": oracle()}, tmp_path, query_mode="title")
    unit = STAGE.units(dataset, ARTICLE, context.config)[0]
    assert unit.input["pool_size"] == 0
    output = await build_ranking_graph().compile().ainvoke(unit.input, context=context)
    record = STAGE.checked_score(unit, output, context).records[0]
    assert record.excluded and "no snippets" in record.excluded and record.metrics == {}


async def test_all_requests_failing_fails_the_article(tmp_path) -> None:
    def down(messages):
        raise ConnectionError("connection refused")

    context = make_context(DATASET, {"ranking": down}, tmp_path, query_mode="title", max_candidates=3)
    with pytest.raises(RerankFailed, match="all 3 relevance requests failed.*connection refused"):
        await run(context)


def test_a_unit_declares_its_fan_out_the_candidates_judged_at_once() -> None:
    context = make_context(DATASET, {}, Path("/nonexistent"))
    (unit,) = STAGE.units(DATASET, ARTICLE, context.config)
    assert unit.fan_out == unit.input["pool_size"] > 1
    thinned = context.config.with_options(
        context.config.options(RankingConfig).model_copy(update={"max_candidates": 2})
    )
    assert STAGE.units(DATASET, ARTICLE, thinned)[0].fan_out == 2


def test_a_small_perfect_pool_has_r_precision_100_but_a_lower_r_recall() -> None:
    """Planted through the stage's score(): a pool holding 4 of the article's 6 snippets, all ranked first,
    scores R-Precision 1.0 (R counted in its pool); a pool holding all 6 with one other snippet among the
    first 6 scores less on R-Precision but more on R-recall, which divides by the article's 6."""
    context = make_context(DATASET, {}, Path("/nonexistent"))
    unit = STAGE.units(DATASET, ARTICLE, context.config)[0]
    own = [s.id for s in DATASET.snippets_of(ARTICLE.name)]
    other = [s.id for s in DATASET.snippets if s.article != ARTICLE.name]
    assert len(own) == 6

    def record(ids: list[str]):
        candidates = [
            {"snippet_id": i, "bm25_rank": n, "rank": n, "source": "logprobs"} for n, i in enumerate(ids, 1)
        ]
        output = {"query_mode": "title", "pool_size": 18, "candidates": candidates}
        return STAGE.checked_score(unit, output, context).records[0]

    def scored(ids: list[str]) -> dict[str, float]:
        return record(ids).metrics

    small = scored(own[:4] + other[:2])
    full = scored(own[:5] + other[:1] + own[5:] + other[1:12])
    assert small["rerank_r_precision"] == 1.0 and full["rerank_r_precision"] == pytest.approx(5 / 6)
    assert small["rerank_recall_at_r"] == pytest.approx(4 / 6)  # by hand: 4 of the 6 in the first 6
    assert full["rerank_recall_at_r"] == pytest.approx(5 / 6)
    assert full["rerank_recall_at_r"] > small["rerank_recall_at_r"]
    assert small["pool_recall"] == pytest.approx(4 / 6) and full["pool_recall"] == 1.0
    # the pool's digest (paired comparisons pair NDCG and R-Pr on equal pools only): order does not matter
    pool = own[:4] + other[:2]
    assert record(pool).info["pool"] == record(list(reversed(pool))).info["pool"]
    assert record(pool).info["pool"] != record(own[:5] + other[:1]).info["pool"]
    assert {m.key for m in STAGE.metrics if m.paired_when_equal == "pool"} == {
        "bm25_ndcg",
        "bm25_r_precision",
        "rerank_ndcg",
        "rerank_r_precision",
    }
