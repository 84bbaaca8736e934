import asyncio

from ruwikibench.models.fake import ScriptedChat, yes_no_completion
from ruwikibench.models.llm import LLM, strip_thinking


def test_strip_thinking_removes_block_and_content() -> None:
    assert strip_thinking("<think>долго думаю</think>\nДа") == "Да"
    assert strip_thinking("<think>не закончил") == ""


async def test_global_limit_and_usage() -> None:
    running = 0
    peak = 0

    class Slow(ScriptedChat):
        async def generate(self, messages, *, max_tokens, top_logprobs):  # type: ignore[override]
            nonlocal running, peak
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.01)
            running -= 1
            return await super().generate(messages, max_tokens=max_tokens, top_logprobs=top_logprobs)

    llm = LLM({"writer": Slow(lambda m: "ok")}, max_concurrency=2)
    await asyncio.gather(*(llm.complete("judge", "привет") for _ in range(7)))
    assert peak == 2
    assert llm.usage.as_dict()["judge"]["calls"] == 7


async def test_fake_logprobs() -> None:
    llm = LLM({"ranking": ScriptedChat(lambda m: yes_no_completion(0.9))})
    completion = await llm.complete("ranking", "?", top_logprobs=5)
    assert completion.text == "Да" and completion.logprobs and completion.logprobs[0].top[0].token == "Да"
