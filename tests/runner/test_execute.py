import json
from pathlib import Path

from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.models.fake import ScriptedChat
from ruwikibench.models.llm import LLM
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.execute import RunOptions, execute
from ruwikibench.runner.rescore import rescore
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.rundir import RunDir

from .toy_stage import install  # type: ignore[import-not-found]

install()


def _dataset(titles: list[str]) -> Dataset:
    articles = [Article(title=t, name=t, root=Section(id="s0", level=1, title=t)) for t in titles]
    return Dataset(articles=articles, sources=[], snippets=[])


def _context(dataset: Dataset, responder) -> tuple[StageContext, ScriptedChat]:
    chat = ScriptedChat(responder)
    config = RunConfig(name="toy", models={"writer": {"name": "fake"}})
    return StageContext(
        config=config, llm=LLM({"writer": chat}), embedder=None, prompts=PromptLibrary(), dataset=dataset
    ), chat  # type: ignore[arg-type]


def _answer(messages) -> str:
    title = messages[-1]["content"].split(": ", 1)[1]
    return "" if title == "Плохая статья" else f"{title} это статья"


async def test_run_resume_failures_and_rescore(tmp_path: Path) -> None:
    dataset = _dataset(["Кошка", "Собака дом", "Плохая статья"])
    context, chat = _context(dataset, _answer)
    options = RunOptions(stages=["toy"], out=tmp_path, progress=False, retries=1)
    rundir = await execute(context, "mem", options)

    results = list(rundir.read("results.jsonl"))
    assert {r["article"] for r in results} == {"Кошка", "Собака дом"}
    errors = list(rundir.read("errors.jsonl"))
    assert len(errors) == 1 and "EmptyAnswer" in errors[0]["reason"] and errors[0]["attempts"] == 2
    assert len(chat.calls) == 2 + 2  # two good articles, the bad one tried twice
    metrics = json.loads(rundir.file("metrics.json").read_text())["toy"]
    assert metrics["metrics"]["overlap"]["failures_excluded"]["mean"] == 1.0
    assert abs(metrics["metrics"]["overlap"]["failures_as_zero"]["mean"] - 2 / 3) < 1e-9
    assert metrics["counts"] == {
        "evaluated": 2,
        "excluded": 0,
        "failed_units": 1,
        "articles": 3,
        "zeroed": {"overlap": 1},
    }
    nodes = list(rundir.read("nodes.jsonl"))
    assert {n["node"] for n in nodes} == {"ask"} and all(n["llm_calls"] == 1 for n in nodes if not n["error"])

    # resume: finished units are not rerun; only the failed one is tried again
    context2, chat2 = _context(dataset, _answer)
    await execute(context2, "mem", options)
    assert len(chat2.calls) == 2

    # re-score without any LLM: the context has no backend at all
    context3, _ = _context(dataset, _answer)
    context3.llm.backends.clear()
    rescored = rescore(RunDir(rundir.path), context3)
    assert rescored["toy"]["metrics"]["overlap"]["failures_excluded"]["mean"] == 1.0
    assert (rundir.path / "report.md").read_text().count("Overlap") >= 2


async def test_report_compares_runs(tmp_path: Path) -> None:
    from ruwikibench.reporting.compare import compare_runs

    dataset = _dataset(["Кошка", "Собака дом"])
    dirs = []
    for name, responder in (("good", _answer), ("weak", lambda m: "нечто")):
        context, _ = _context(dataset, responder)
        rundir = await execute(
            context, "mem", RunOptions(stages=["toy"], out=tmp_path, run_id=name, progress=False)
        )
        dirs.append(rundir.path)
    md = compare_runs(dirs, tmp_path / "cmp").read_text()
    assert "| good | 100.00" in md and "| weak | 0.00" in md
    page = (tmp_path / "cmp" / "report.html").read_text()
    losses = page.split("biggest losses (2)")[1].split("</table>")[0]  # both articles lost 100 points
    assert losses.count("−100.00") + losses.count("-100.00") == 2 and "biggest wins (0)" in page
    assert "dataset mem not available" in page  # no dataset behind the toy runs: said once per run
    articles = sorted((tmp_path / "cmp" / "articles").glob("a*.html"))
    assert len(articles) == 2
    cat = articles[0].read_text()  # a0001: Кошка (articles sorted by name)
    assert "Кошка это статья" in cat and "нечто" in cat  # both runs' texts on the article's page


async def test_node_records_of_a_unit_are_appended_in_one_write(tmp_path: Path, monkeypatch) -> None:
    """One fsync per unit, not per node (on the event loop), failed attempts' nodes kept."""
    writes: list[tuple[str, int]] = []
    original = RunDir.append_many

    def counted(rundir: RunDir, name: str, records: list) -> None:
        writes.append((name, len(records)))
        original(rundir, name, records)

    monkeypatch.setattr(RunDir, "append_many", counted)
    dataset = _dataset(["Кошка", "Собака дом", "Плохая статья"])
    context, _ = _context(dataset, _answer)
    rundir = await execute(
        context, "mem", RunOptions(stages=["toy"], out=tmp_path, progress=False, retries=1)
    )
    node_writes = [n for name, n in writes if name == "nodes.jsonl"]
    assert len(node_writes) == 2 + 2  # one per attempt: two good units, the bad one tried twice
    assert sum(node_writes) == len(list(rundir.read("nodes.jsonl")))
