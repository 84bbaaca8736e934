"""`judge citations RUN` end to end: a hand-made written article in a batch-style run directory, a fake
OpenAI-compatible support model on 127.0.0.1, hand-computed figures, resume, marked HTML, report table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from typer.testing import CliRunner

from ruwikibench.cli import app
from ruwikibench.models.fake import yes_no_completion
from ruwikibench.nodes.citations import Citation
from ruwikibench.reporting.compare import compare_runs
from ruwikibench.writer.export import write_exports
from ruwikibench.writer.models import WrittenArticle, WrittenSection
from tests.fake_openai import fake_openai_server

KEYS = ("язык программирования", "Россум", "1991")


def responder(messages):  # type: ignore[no-untyped-def]
    """'Да' when a key fact of the claim is in the passage shown, else 'Нет' (both with logprobs)."""
    prompt = messages[-1]["content"]
    passage, claim = prompt.split('"""')[1], prompt.split('"""')[3]
    return yes_no_completion(0.9 if any(k in claim and k in passage for k in KEYS) else 0.2)


def article() -> WrittenArticle:
    return WrittenArticle(
        title="Python",
        lead="Python — язык программирования [1]. Его создал Гвидо ван Россум [1][2].",
        sections=[
            WrittenSection(
                id="s1",
                level=2,
                title="История",
                text=(
                    "Первая версия вышла в 1991 году [2]. Язык назван в честь шоу [7].\n\n"
                    "Сегодня Python используют NASA и Google."
                ),
            )
        ],
        references=[
            Citation(
                n=1, snippet_id="py#0", source_id="py", text="Python — высокоуровневый язык программирования."
            ),
            Citation(
                n=2,
                snippet_id="gv#0",
                source_id="gv",
                text="Гвидо ван Россум выпустил первую версию в 1991 году.",
            ),
        ],
    )


def make_run(tmp_path: Path, url: str) -> Path:
    run = tmp_path / "run"
    config = {
        "name": "t",
        "cache_dir": str(tmp_path / "cache"),
        "models": {
            "writer": {"name": "w", "endpoints": ["http://127.0.0.1:9/v1"]},
            "judge": {"name": "served-judge", "endpoints": [url], "max_retries": 0},
        },
    }
    run.mkdir()
    (run / "spec.json").write_text(json.dumps({"run_id": "run", "config": config}), encoding="utf-8")
    (run / "metrics.json").write_text("{}", encoding="utf-8")
    write_exports(article(), run / "articles" / "Python", extra={"sources": []})
    return run


def test_judge_citations_command(tmp_path: Path) -> None:
    runner = CliRunner()
    with fake_openai_server(responder) as url:
        run = make_run(tmp_path, url)
        result = runner.invoke(app, ["judge", "citations", str(run)])
        assert result.exit_code == 0, result.output
        records = [
            json.loads(line) for line in (run / "citations.jsonl").read_text(encoding="utf-8").splitlines()
        ]
        # lead: s0 (1); s1 union (1,2), then (1) and (2) alone; section: s0 (2); [7] has no source: never
        # asked
        assert sorted((r["item"], r["sentence"], tuple(r["numbers"])) for r in records) == [
            ("lead", 0, (1,)),
            ("lead", 1, (1,)),
            ("lead", 1, (1, 2)),
            ("lead", 1, (2,)),
            ("s1", 0, (2,)),
        ]
        assert {r["judge"] for r in records} == {"served-judge"}
        summary = json.loads((run / "citations.json").read_text(encoding="utf-8"))
        counts = summary["overall"]["counts"]
        assert (counts["sentences"], counts["cited"], counts["supported"], counts["unsupported"]) == (
            5,
            4,
            3,
            1,
        )
        assert (counts["citations"], counts["precise_citations"], counts["unsupported_claims"]) == (5, 3, 1)
        metrics = summary["overall"]["metrics"]
        assert (metrics["citation_recall"], metrics["citation_precision"], metrics["unsupported_share"]) == (
            0.75,
            0.6,
            0.2,
        )
        assert summary["overall"]["estimates"]["citation_recall"]["mean"] == pytest.approx(0.75)
        assert "75.00 [" in result.output and "60.00 [" in result.output

        page = (run / "articles" / "Python" / "article.html").read_text(encoding="utf-8")
        assert (
            page.count("class='sent supported' tabindex") == 3
            and page.count("class='sent unsupported' tabindex") == 1
        )
        assert "class='sent uncited claim'" in page and "нет такого источника" in page
        assert "Гвидо ван Россум выпустил первую версию в 1991 году." in page.split("class='why'")[2]

        again = runner.invoke(app, ["judge", "citations", str(run)])
        assert again.exit_code == 0 and "support checks asked now: 0" in again.output
        strict = runner.invoke(app, ["judge", "citations", str(run), "--threshold", "0.95"])
        assert strict.exit_code == 0 and "0.00 [0.00, 0.00]" in strict.output  # same records, no support

    report = compare_runs([run], tmp_path / "cmp")
    assert "## Citation faithfulness" in report.read_text(encoding="utf-8")
    page = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    text = BeautifulSoup(page, "html.parser").get_text()  # the page puts each CI under its mean, in a span
    assert "Citation faithfulness" in text and "0.00 [0.00, 0.00]" in text


def test_judge_citations_on_a_folder_without_articles_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "spec.json").write_text(
        json.dumps(
            {
                "run_id": "x",
                "config": {"models": {"writer": {"name": "w", "endpoints": ["http://127.0.0.1:9/v1"]}}},
            }
        ),
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["judge", "citations", str(tmp_path)])
    assert (
        result.exit_code == 2 and "no written article" in result.output and "Traceback" not in result.output
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    result = CliRunner().invoke(app, ["judge", "citations", str(empty)])
    assert result.exit_code == 2 and "pass --judge-config" in result.output


def test_single_write_folder_and_external_article_rows(tmp_path: Path) -> None:
    from ruwikibench.evaluators.judges.citations_run import cited_texts, load_articles

    folder = tmp_path / "qc"
    write_exports(article(), folder, extra={"sources": [], "config": {"models": {}}})
    [single] = load_articles(folder)
    assert single.name == "Python" and single.folder == folder
    assert [t.item for t in cited_texts(single)] == ["lead", "s1"]

    external = tmp_path / "ext"
    external.mkdir()
    written = article().model_copy(
        update={"references": [Citation(n=1, snippet_id="", source_id="", url="https://example.org/a")]}
    )  # not in the dataset: no text
    row = {
        "stage": "writer",
        "article": "Python",
        "unit": "article",
        "output": {"written": written.model_dump(mode="json")},
    }
    (external / "outputs.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    [loaded] = load_articles(external)
    assert loaded.folder is None
    lead = cited_texts(loaded)[0]
    assert lead.sources == {1: ""}  # a source with no text counts as no source: never asked
