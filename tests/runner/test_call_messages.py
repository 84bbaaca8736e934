"""Every LLM call's messages as sent and its answer are kept per node call in the run directory
(``messages/<stage>/<article>.jsonl.gz``), answers from the response cache included, appended by a resumed
run, and shown on the article page behind a toggle, the rendered prompt beside its template's name and hash;
a run directory made before messages were kept still renders and says so."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

from ruwikibench.conf.config import ModelConfig, RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.cache import ResponseCache
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.reporting.call_views import NOT_RECORDED
from ruwikibench.reporting.compare import compare_runs
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.call_log import MESSAGES_DIR, CallLog, shard_path
from tests.graphs.writer_fixture import TITLE, FakeWriterModel, HashEmbedder, make_dataset

from .toy_stage import install  # type: ignore[import-not-found]

install()


def _toy_context(titles: list[str], cache: Path | None = None) -> tuple[StageContext, ScriptedChat]:
    articles = [Article(title=t, name=t, root=Section(id="s0", level=1, title=t)) for t in titles]
    dataset = Dataset(articles=articles, sources=[], snippets=[])
    chat = ScriptedChat(lambda m: "" if "Плохая" in m[-1]["content"] else m[-1]["content"] + " — ответ")
    llm = LLM({"writer": chat}, cache=ResponseCache(cache) if cache else None)
    config = RunConfig(name="toy", models={"writer": {"name": "fake"}})
    context = StageContext(config=config, llm=llm, embedder=None, prompts=PromptLibrary(), dataset=dataset)
    return context, chat


def _calls(rundir: Path, stage: str, article: str) -> list[dict]:
    return CallLog(rundir / MESSAGES_DIR).calls(stage, article)


async def test_calls_are_kept_per_node_call_and_a_resumed_run_appends(tmp_path: Path) -> None:
    context, _ = _toy_context(["Кошка", "Плохая статья"])
    options = RunOptions(stages=["toy"], out=tmp_path / "runs", run_id="r", progress=False, retries=1)
    rundir = (await execute(context, "mem", options)).path
    [cat] = _calls(rundir, "toy", "Кошка")
    assert cat["messages"] == [{"role": "user", "content": "Опиши: Кошка"}]
    assert cat["answer"] == "Опиши: Кошка — ответ" and cat["node"] == "ask" and not cat["cached"]
    node = next(n for n in (rundir / "nodes.jsonl").read_text().splitlines() if '"Кошка"' in n)
    assert f'"task_id": "{cat["task_id"]}"' in node  # the call names the node record it belongs to
    failed = _calls(rundir, "toy", "Плохая статья")
    assert len(failed) == 2 and all(c["error"].startswith("EmptyAnswer") for c in failed)  # both attempts
    path = shard_path(rundir / MESSAGES_DIR, "toy", "Плохая статья")
    assert gzip.decompress(path.read_bytes()).decode().count("Опиши: Плохая статья") == 1  # stored once
    await execute(
        _toy_context(["Кошка", "Плохая статья"])[0], "mem", options
    )  # resumes: the failed one again
    assert len(_calls(rundir, "toy", "Плохая статья")) == 4 and len(_calls(rundir, "toy", "Кошка")) == 1
    assert gzip.decompress(path.read_bytes()).decode().count("Опиши: Плохая статья") == 1


async def test_answers_from_the_response_cache_are_recorded_with_their_messages(tmp_path: Path) -> None:
    first, chat = _toy_context(["Кошка"], cache=tmp_path / "llm.sqlite")
    await execute(first, "mem", RunOptions(stages=["toy"], out=tmp_path / "runs", run_id="a", progress=False))
    first.llm.close()
    second, chat2 = _toy_context(["Кошка"], cache=tmp_path / "llm.sqlite")
    await execute(
        second, "mem", RunOptions(stages=["toy"], out=tmp_path / "runs", run_id="b", progress=False)
    )
    second.llm.close()
    assert len(chat.calls) == 1 and not chat2.calls  # the second run was answered from the cache
    [call] = _calls(tmp_path / "runs" / "b", "toy", "Кошка")
    assert call["cached"] and call["messages"][0]["content"] == "Опиши: Кошка"
    assert call["answer"] == "Опиши: Кошка — ответ"


def _outline_context(tmp_path: Path) -> StageContext:
    dataset = make_dataset()
    chat = ScriptedChat(FakeWriterModel(dataset))
    config = RunConfig(
        name="outline", models={"outline": ModelConfig(name="fake")}, cache_dir=str(tmp_path / "cache")
    )
    llm = LLM({"outline": chat}, max_concurrency=4)
    return StageContext(
        config=config, llm=llm, embedder=HashEmbedder(), prompts=PromptLibrary(), dataset=dataset
    )


async def test_the_rendered_prompt_is_in_the_run_directory_and_on_the_article_page(tmp_path: Path) -> None:
    options = RunOptions(stages=["outline"], out=tmp_path / "runs", run_id="o", progress=False, articles=1)
    rundir = (await execute(_outline_context(tmp_path), "fixture", options)).path
    calls = _calls(rundir, "outline", TITLE)
    library = PromptLibrary()
    merge = [c for c in calls if any(t["name"].endswith("outline_merge.txt") for t in c["templates"])]
    assert merge, [c["templates"] for c in calls]
    template = next(t for t in merge[0]["templates"] if t["name"].endswith("outline_merge.txt"))
    assert library.get(template["name"]).sha256.startswith(template["sha256"])
    prompt = merge[0]["messages"][-1]["content"]
    head = library.get(template["name"]).text.split("{")[0].strip()
    assert (
        head and prompt.startswith(head) and "{" not in prompt[: len(head) + 1]
    )  # rendered, not the template
    assert len(calls) == sum(n.get("llm_calls", 0) for n in _nodes(rundir))  # every call of every node

    compare_runs([rundir], tmp_path / "report")
    page = next((tmp_path / "report" / "articles").glob("a*.html")).read_text(encoding="utf-8")
    assert _escaped(prompt) in page and '<details class="call">' in page  # the whole prompt, as sent
    block = page.split(_escaped(prompt))[0].rsplit('<details class="call">', 1)[1]
    assert template["name"] in block and template["sha256"] in block  # the template beside its rendering
    assert NOT_RECORDED not in page

    shutil.rmtree(rundir / MESSAGES_DIR)  # a run directory from before messages were kept
    compare_runs([rundir], tmp_path / "old")
    old = next((tmp_path / "old" / "articles").glob("a*.html")).read_text(encoding="utf-8")
    assert NOT_RECORDED in old and '<details class="call">' not in old
    assert "answer" in old  # the answers of nodes.jsonl are still shown


def _nodes(rundir: Path) -> list[dict]:
    import json

    return [json.loads(line) for line in (rundir / "nodes.jsonl").read_text().splitlines()]


def _escaped(text: str) -> str:
    from markupsafe import escape

    return str(escape(text))


async def test_each_call_names_the_templates_its_own_task_was_served() -> None:
    """Concurrent calls of one node each name their own template; a template served once and sent twice
    names it on both calls; a call after another template names only that one."""
    import asyncio

    from ruwikibench.runner.call_capture import capturing_calls
    from ruwikibench.runner.capture import NodeCapture

    context, _ = _toy_context(["Кошка"])
    library = context.prompts

    async def ask(name: str, times: int = 1) -> None:
        text = library.get(name).text
        await asyncio.sleep(0)  # the other task is served its template meanwhile
        for _ in range(times):
            await context.llm.complete("writer", text)

    capture = NodeCapture("s", "Кошка", "u")
    with capture.active(), capturing_calls(context, capture) as calls:
        await asyncio.gather(ask("ru/query_description_ru.txt"), ask("ru/query_description_en.txt", times=2))
        await ask("ru/relevance.txt")
    sent = {
        (
            c["messages"][0]["content"] == library.get(c["templates"][0]["name"]).text,
            c["templates"][0]["name"],
        )
        for c in calls.calls
    }
    assert len(calls.calls) == 4 and all(len(c["templates"]) == 1 for c in calls.calls)
    assert sent == {
        (True, "ru/query_description_ru.txt"),
        (True, "ru/query_description_en.txt"),
        (True, "ru/relevance.txt"),
    }
    await context.llm.complete("writer", "вне блока")
    assert len(calls.calls) == 4  # the capture records nothing once its block has ended
