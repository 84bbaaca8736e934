from langgraph.types import Send

from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.nodes.ranking import Hit, judge, order_candidates, route_candidates
from tests.retrieval.synthetic import make_context, make_dataset

DATASET = make_dataset()


def judgement(snippet_id: str, score: float | None, source: str = "logprobs") -> dict:
    return {
        "snippet_id": snippet_id,
        "llm_score": score,
        "p_yes": None,
        "p_no": None,
        "p_yes_norm": None,
        "answer": None,
        "source": source,
        "reply": "",
        "error": None,
    }


def test_order_by_score_ties_keep_bm25_order_unscored_last() -> None:
    hits = [Hit(snippet_id=f"s{i}", bm25_rank=i, bm25_score=10.0 - i) for i in range(1, 6)]
    judgements = [
        judgement("s4", 0.9),
        judgement("s2", None, "unparseable"),
        judgement("s1", 0.5),
        judgement("s5", 0.9),
        judgement("s3", 0.0),
    ]
    ordered = order_candidates(hits, judgements)
    assert [c["snippet_id"] for c in ordered] == ["s4", "s5", "s1", "s3", "s2"]
    assert [c["rank"] for c in ordered] == [1, 2, 3, 4, 5]
    assert ordered[0]["bm25_score"] == 6.0 and ordered[-1]["source"] == "unparseable"


def test_route_fans_out_one_send_per_candidate() -> None:
    hits = [Hit(snippet_id=f"s{i}", bm25_rank=i, bm25_score=1.0) for i in range(1, 4)]
    sends = route_candidates({"hits": hits, "title": "T", "query": "q"})  # type: ignore[arg-type]
    assert isinstance(sends, list) and all(isinstance(s, Send) and s.node == "rerank" for s in sends)
    assert [s.arg["hit"]["snippet_id"] for s in sends] == ["s1", "s2", "s3"]
    assert route_candidates({"hits": [], "title": "T", "query": "q"}) == "rank"  # type: ignore[arg-type]


async def test_judge_prompt_and_generation_settings(tmp_path) -> None:
    seen: dict = {}

    class Recorder(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            seen.update(max_tokens=max_tokens, top_logprobs=top_logprobs)
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    backend = Recorder(lambda m: yes_no_completion(0.8))
    context = make_context(
        DATASET, {"ranking": backend}, tmp_path, snippet_chars=40, top_logprobs=15, judge_max_tokens=6
    )
    snippet = DATASET.snippets[5]
    result = await judge(context, "Python", "q", Hit(snippet_id=snippet.id, bm25_rank=1, bm25_score=1.0))
    prompt = backend.calls[0][-1]["content"]
    assert "«Python»" in prompt and snippet.text[:40] in prompt and snippet.text[:41] not in prompt
    assert seen == {"max_tokens": 6, "top_logprobs": 15}
    assert result["source"] == "logprobs" and abs(result["llm_score"] - 0.8) < 1e-9
    assert abs(result["p_yes_norm"] - 0.8) < 1e-9 and result["answer"] == "yes"


def test_spread_sample_keeps_ends_and_order() -> None:
    from ruwikibench.nodes.ranking import spread_sample

    assert spread_sample(list(range(10)), 4) == [0, 3, 6, 9]
    assert spread_sample(list(range(3)), 5) == [0, 1, 2]
    assert spread_sample(list(range(10)), None) == list(range(10))
