"""The real local model: LLM.from_config starts llama.cpp's server with Qwen2.5-Coder-1.5B on a free port.

Checks a Russian answer, the max_tokens limit, yes/no log-probabilities on two clear pairs, the response
cache, one server shared by two roles, and that closing the client stops the server.
"""

from __future__ import annotations

import math

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.models.llm import LLM
from ruwikibench.models.local_assets import is_verified, model_path
from ruwikibench.models.local_server import llama_cpp_available
from ruwikibench.models.types import Completion

pytestmark = pytest.mark.local_model

MODEL = "qwen2.5-coder-1.5b"

# The wording matters for this small coder model: asked "does the fragment relate to the query?" it
# still answers «Да» for an unrelated text with P ≈ 0.68; asked "is this text about the topic?" 0.34.
PROMPT = "Тема: {query}\n\nТекст: {snippet}\n\nЭтот текст о теме «{query}»? Ответь только Да или Нет."
RELEVANT = (
    "Московский метрополитен",
    (
        "Московский метрополитен — система линий метро в Москве. Первая линия от станции «Сокольники» до "
        "«Парка культуры» открылась 15 мая 1935 года. Сегодня метро перевозит миллионы пассажиров в день."
    ),
)
IRRELEVANT = (
    "Московский метрополитен",
    (
        "Фотосинтез — процесс, при котором зелёные растения на свету образуют органические вещества из "
        "углекислого газа и воды и выделяют кислород. Он идёт в хлоропластах листьев."
    ),
)


def p_yes_normalized(completion: Completion) -> float:
    """P(yes)/(P(yes)+P(no)) from the first answer token's top logprobs. The test's own small scorer:
    Qwen splits «Да» into «Д»+«а», so a token counts when it is a non-empty prefix of a variant."""
    tokens = completion.answer_logprobs()
    assert tokens, "the server returned no logprobs"
    first = next(t for t in tokens if t.token.strip())
    p_yes = p_no = 0.0
    for alternative in first.top:
        word = alternative.token.strip().strip("*\"'«»").lower()
        if word and any(v.startswith(word) for v in ("да", "yes")):
            p_yes += math.exp(alternative.logprob)
        elif word and any(v.startswith(word) for v in ("нет", "no")):
            p_no += math.exp(alternative.logprob)
    assert p_yes + p_no > 0.5, f"yes/no variants hold little mass: {first.top}"
    return p_yes / (p_yes + p_no)


@pytest.fixture(scope="module")
def llm(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    if not llama_cpp_available():
        pytest.skip("llama-cpp-python[server] is not installed (pip install '.[local]')")
    if not is_verified(MODEL):
        pytest.skip(f"{model_path(MODEL)} is absent: run python -m ruwikibench.models.local_assets --fetch")
    config = RunConfig.model_validate(
        {
            "models": {
                "ranking": {"name": MODEL, "local": MODEL, "max_tokens": 5},
                "writer": {"name": MODEL, "local": MODEL, "max_tokens": 24},
            },
            "cache_dir": str(tmp_path_factory.mktemp("cache")),
        }
    )
    client = LLM.from_config(config)
    yield client
    server = client.servers[0]
    client.close()
    assert not server.running  # closing the client stopped the server it started


def test_one_server_shared_by_roles(llm: LLM) -> None:
    assert len(llm.servers) == 1
    endpoints = {backend.config.endpoints[0] for backend in llm.backends.values()}  # type: ignore[attr-defined]
    assert endpoints == {llm.servers[0].base_url}


async def test_russian_answer(llm: LLM) -> None:
    completion = await llm.complete(
        "writer", "Какой город — столица России? Ответь одним словом.", max_tokens=8
    )
    assert "москв" in completion.text.lower()
    assert completion.completion_tokens <= 8 and completion.prompt_tokens > 10


async def test_yes_no_logprobs_separate_clear_pairs(llm: LLM) -> None:
    relevant = await llm.complete(
        "ranking", PROMPT.format(query=RELEVANT[0], snippet=RELEVANT[1]), max_tokens=2, top_logprobs=10
    )
    irrelevant = await llm.complete(
        "ranking", PROMPT.format(query=IRRELEVANT[0], snippet=IRRELEVANT[1]), max_tokens=2, top_logprobs=10
    )
    assert relevant.completion_tokens <= 2  # the limit reaches llama.cpp (it ignores max_completion_tokens)
    relevant_p, irrelevant_p = p_yes_normalized(relevant), p_yes_normalized(irrelevant)
    assert relevant_p > 0.8 and irrelevant_p < 0.5 and relevant_p - irrelevant_p > 0.4

    again = await llm.complete(
        "ranking", PROMPT.format(query=RELEVANT[0], snippet=RELEVANT[1]), max_tokens=2, top_logprobs=10
    )
    assert again.cached and again.logprobs == relevant.logprobs
    assert llm.usage.as_dict()["ranking"]["cache_hits"] == 1
