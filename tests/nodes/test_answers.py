"""Cleaning prose answers and the shared ask helper (a scripted model)."""

from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.nodes.answers import ask, clean_answer, flatten_headings
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext


def test_clean_answer_strips_wrappers_title_and_label() -> None:
    assert clean_answer("## История\n\nТекст раздела.", "История") == "Текст раздела."
    assert clean_answer("**История**\nТекст.", "История") == "Текст."
    assert clean_answer("Описание: факты о городе.") == "факты о городе."
    assert clean_answer("```\nТекст.\n```") == "Текст."
    assert clean_answer("Введение\nТекст.", "T", also_drop=["введение"]) == "Текст."
    assert clean_answer("Описание: x", label=False) == "Описание: x"


def test_flatten_headings() -> None:
    assert flatten_headings("## A\n\nтекст #1 [2]\n\n\n### Б ###\nещё") == "A\n\nтекст #1 [2]\n\nБ\n\nещё"


async def test_ask_formats_the_prompt_file_sends_it_for_the_role_and_cleans() -> None:
    seen: list[str] = []

    def answer(messages: list[dict]) -> str:
        seen.append(messages[-1]["content"])
        return "  ## Python\nОтвет.  "

    llm = LLM({"outline": ScriptedChat(answer)})
    context = StageContext(
        config=RunConfig(models={"outline": ModelConfig(name="fake")}),
        llm=llm,
        embedder=None,
        prompts=PromptLibrary(),
    )  # type: ignore[arg-type]
    text = await ask(
        context,
        "outline",
        "ru/outline_describe.txt",
        title="Python",
        texts="[1] о языке",
        clean=lambda t: clean_answer(t, "Python"),
    )
    assert text == "Ответ."
    assert "Python" in seen[0] and "[1] о языке" in seen[0]
    assert llm.usage.as_dict()["outline"]["calls"] == 1
