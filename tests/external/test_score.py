"""Scoring external outputs into a run directory: hand-computed expectations per stage, failures, errors."""

from __future__ import annotations

import math

import pytest

from ruwikibench.conf.builtin_options import SectionsConfig
from ruwikibench.external.article import url_key
from ruwikibench.external.formats import ExternalFormatError
from ruwikibench.external.score import ExternalOptions, score_outputs
from tests.external.conftest import read_jsonl, write_jsonl

MOSCOW = [f"Москва/src{s}#{k}" for s in range(3) for k in range(2)]
OTHER = ["Python/src0#0", "Python/src1#0"]


def _score(context, tmp_path, stage, rows, **kw):
    path = write_jsonl(tmp_path / f"{stage}.jsonl", rows)
    options = ExternalOptions(stage=stage, outputs=path, out=tmp_path / "runs", **kw)
    rundir = score_outputs(context, str(tmp_path / "data"), options)
    results = read_jsonl(rundir.file("results.jsonl"))
    return rundir, results, rundir.read_json("metrics.json")


def _mean(metrics, stage, key, view="failures_excluded"):
    return metrics[stage]["metrics"][key][view]["mean"]


def test_relevant_first_gives_ndcg_1_and_missing_articles_fail(context, tmp_path) -> None:
    rundir, results, metrics = _score(
        context, tmp_path, "ranking", [{"article": "Москва", "ranking": MOSCOW + OTHER}]
    )
    (record,) = results
    assert record["metrics"]["rerank_ndcg"] == pytest.approx(1.0)
    assert record["metrics"]["rerank_r_precision"] == pytest.approx(1.0)
    assert record["metrics"]["pool_recall"] == pytest.approx(1.0)
    assert not [k for k in record["metrics"] if k.startswith("bm25_")]  # no first-stage order was given
    counts = metrics["ranking"]["counts"]
    assert counts["evaluated"] == 1 and counts["failed_units"] == 2  # Python and Сколково have no row
    assert _mean(metrics, "ranking", "rerank_ndcg", "failures_as_zero") == pytest.approx(1 / 3)
    errors = read_jsonl(rundir.file("errors.jsonl"))
    assert {e["article"] for e in errors} == {"Python", "Сколково"}
    assert all(e["reason"].startswith("missing: ranking.jsonl has no row for") for e in errors)
    spec = rundir.read_json("spec.json")
    assert spec["mode"] == "external" and spec["external"]["stage"] == "ranking"
    assert len(spec["external"]["sha256"]) == 64 and rundir.file("external_outputs.jsonl").exists()
    assert "## ranking" in rundir.file("report.md").read_text(encoding="utf-8")


def test_pool_order_scored_as_first_stage(context, tmp_path) -> None:
    row = {"article": "Москва", "ranking": MOSCOW + OTHER, "pool": OTHER + MOSCOW}
    _, (record,), _ = _score(context, tmp_path, "ranking", [row], article_names=["Москва"])
    dcg = sum(1 / math.log2(i + 1) for i in range(3, 9))  # relevant at positions 3..8
    ideal = sum(1 / math.log2(i + 1) for i in range(1, 7))
    assert record["metrics"]["bm25_ndcg"] == pytest.approx(dcg / ideal)
    assert record["metrics"]["bm25_r_precision"] == pytest.approx(4 / 6)  # top 6 of the pool hold 4 relevant
    assert record["metrics"]["rerank_ndcg"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"article": "Марс", "ranking": []}, "field 'article': 'Марс' is not an article of the dataset"),
        (
            {"article": "Москва", "ranking": ["Москва/src9#0"]},
            "field 'ranking': unknown snippet id 'Москва/src9#0'",
        ),
        ({"article": "Москва", "ranking": MOSCOW, "pool": MOSCOW[:2]}, "field 'pool': must hold exactly"),
    ],
)
def test_ranking_errors_name_line_and_field_and_touch_nothing(context, tmp_path, row, message) -> None:
    good = {"article": "Python", "ranking": OTHER}
    with pytest.raises(ExternalFormatError) as err:
        _score(context, tmp_path, "ranking", [good, row], name="r")
    assert "ranking.jsonl:2:" in str(err.value) and message in str(err.value)
    assert not (tmp_path / "runs" / "r").exists()  # checked before the run directory is written


def test_duplicate_article_row_is_an_error(context, tmp_path) -> None:
    rows = [{"article": "Москва", "outline": "# a"}, {"article": "Москва", "outline": "# b"}]
    with pytest.raises(ExternalFormatError, match="outline.jsonl:2: field 'article': a second row .* line 1"):
        _score(context, tmp_path, "outline", rows)


def test_reference_outline_scores_f1_1(context, dataset, tmp_path) -> None:
    moscow = dataset.article("Москва")
    reference = "\n".join(
        [f"# {moscow.title}", *[f"{'#' * s.level} {s.title}" for s in moscow.sections()[1:]]]
    )
    rows = [
        {"article": "Москва", "outline": reference},
        {"article": "Python", "outline": "# Python\n## Кулинария\n## Футбол\n### Правила"},
    ]
    rundir, results, metrics = _score(context, tmp_path, "outline", rows)
    by_article = {r["article"]: r for r in results}
    assert by_article["Москва"]["metrics"]["f1"] == pytest.approx(1.0)
    assert by_article["Москва"]["metrics"]["gen_headings"] == 4  # as native: every line, the title too
    assert by_article["Москва"]["metrics"]["ref_headings"] == 4
    assert by_article["Python"]["metrics"]["f1"] < 0.9
    assert by_article["Python"]["metrics"]["gen_max_depth"] == 3  # levels as written, title counted as 1
    assert metrics["outline"]["counts"]["failed_units"] == 1  # Сколково
    assert "f1_floor" in metrics["outline"]["metrics"] and "f1_rescaled" in metrics["outline"]["metrics"]
    assert rundir.file("floors.jsonl").exists()  # the permutation floor, as for native runs
    generated = read_jsonl(rundir.file("generated.jsonl"))
    assert any("## ЗОЛОТО история" in g["text"] for g in generated)


def test_sections_by_id_and_heading_missing_section_fails(context, dataset, tmp_path) -> None:
    moscow = dataset.article("Москва")
    rows = [
        {"article": "Москва", "section": "s1", "text": moscow.section("s1").text()},
        {"article": "Москва", "section": "ЗОЛОТО география", "text": moscow.section("s2").text()},
        {"article": "Москва", "section": "s0", "text": "Преамбула без источников."},
    ]
    rundir, results, metrics = _score(context, tmp_path, "sections", rows)
    scored = {r["item"]: r for r in results if r["article"] == "Москва"}
    for item in ("s1", "s2"):
        assert scored[item]["metrics"]["f1"] == pytest.approx(1.0)
        assert scored[item]["metrics"]["rouge_l"] == pytest.approx(1.0)
        assert scored[item]["metrics"]["bleu"] == pytest.approx(1.0)
    assert scored["s0"]["excluded"] == "no source snippet"  # the lead cites no source: the paper excludes it
    counts = metrics["sections"]["counts"]
    assert counts["evaluated"] == 2
    assert counts["failed_units"] == 5  # Москва s3, and the two cited sections of each other article
    errors = read_jsonl(rundir.file("errors.jsonl"))
    assert any(e["article"] == "Москва" and e["unit"] == "s3" and "section s3" in e["reason"] for e in errors)


def test_unknown_section_is_an_error(context, tmp_path) -> None:
    rows = [{"article": "Москва", "section": "Климат", "text": "т"}]
    with pytest.raises(ExternalFormatError, match="sections.jsonl:1: field 'section': 'Климат' is neither"):
        _score(context, tmp_path, "sections", rows)


def _reference_markdown(article) -> str:
    parts = [f"# {article.title}", article.root.text() + " [1]"]
    for number, section in enumerate(article.sections()[1:], start=1):
        parts += [f"## {section.title}", f"{section.text()} [{min(number, 3)}]"]
    parts[-1] += "[4][5]"
    return "\n\n".join(parts)


def test_reference_article_scores_1_and_sources_are_matched(context, dataset, tmp_path) -> None:
    moscow = dataset.article("Москва")
    sources = {
        "1": "HTTPS://www.Example.org/0/0/",
        "2": "http://example.org/0/1#part",
        "3": "Москва/src2",
        "4": "https://unknown.example.com/статья",
        "5": "https://example.org/1/0",
    }
    rows = [{"article": "Москва", "markdown": _reference_markdown(moscow), "sources": sources}]
    rundir, results, metrics = _score(context, tmp_path, "article", rows)  # the earlier name of writer
    article = next(r for r in results if r["stage"] == "writer" and r["article"] == "Москва")
    m = article["metrics"]
    assert m["f1"] == pytest.approx(1.0) and m["rouge_l"] == pytest.approx(1.0)
    assert m["cited_own_share"] == pytest.approx(3 / 5)  # 1-3 are Москва's sources, 4 unknown, 5 Python's
    assert m["source_recall"] == pytest.approx(1.0)  # every Москва snippet belongs to a cited source
    assert m["source_precision"] == pytest.approx(6 / 8)  # + the two snippets of Python's source
    assert m["sources_unmatched"] == 1 and m["markers_unresolved"] == 0
    assert article["info"]["unmatched_sources"] == ["https://unknown.example.com/статья"]
    assert article["info"]["matched_by"] == {
        "1": "url",
        "2": "url",
        "3": "source_id",
        "4": "unmatched",
        "5": "url",
    }
    outline = next(r for r in results if r["stage"] == "outline" and r["article"] == "Москва")
    assert outline["metrics"]["f1"] == pytest.approx(1.0)
    sections = [
        r for r in results if r["stage"] == "sections" and r["article"] == "Москва" and not r["excluded"]
    ]
    assert len(sections) == 4 and all(r["metrics"]["f1"] == pytest.approx(1.0) for r in sections)
    for stage in ("outline", "sections", "writer"):
        assert metrics[stage]["counts"]["failed_units"] == 2  # Python and Сколково have no row
    report = rundir.file("report.md").read_text(encoding="utf-8")
    assert report.count("\n## writer (whole article, not in the paper; ×100, mean [95% CI])\n") == 1
    assert report.count("\n## writer") == 1 and "()" not in report and "(;" not in report


def test_writer_outline_and_sections_get_floor_columns(context, dataset, tmp_path) -> None:
    """The written article's outline and section metrics have a permutation floor and rescaled scores, as the
    stage tables do; the whole-article table has none (no floor is measured for it)."""
    rows = [
        {
            "article": title,
            "markdown": _reference_markdown(dataset.article(title)),
            "sources": {"1": "Москва/src0"},
        }
        for title in ("Москва", "Python")
    ]
    rundir, _, metrics = _score(context, tmp_path, "writer", rows)
    for stage in ("outline", "sections"):
        keys = metrics[stage]["metrics"]
        assert {"f1_floor", "f1_rescaled"} <= set(keys), stage
        floor = keys["f1_floor"]["failures_excluded"]["mean"]
        assert 0.0 < floor < 1.0
    floors = read_jsonl(rundir.file("floors.jsonl"))
    assert {r["stage"] for r in floors} == {"outline", "sections"}
    assert all(not r["against"][0].startswith(r["article"] + "/") for r in floors if r["stage"] == "outline")
    assert "f1_floor" not in metrics["writer"]["metrics"]
    report = rundir.file("report.md").read_text(encoding="utf-8")
    outline_table = report.split("## outline", 1)[1].split("\n## ", 1)[0]
    assert "Mean F1 floor" in outline_table and "Mean F1 rescaled" in outline_table


def test_rerun_same_file_rewrites_other_file_refused(context, tmp_path) -> None:
    rows = [{"article": "Москва", "ranking": MOSCOW}]
    rundir, first, _ = _score(context, tmp_path, "ranking", rows, name="same")
    _, again, _ = _score(context, tmp_path, "ranking", rows, name="same")
    assert again == first and len(read_jsonl(rundir.file("outputs.jsonl"))) == 1  # rewritten, not appended
    with pytest.raises(ExternalFormatError, match="holds another run"):
        _score(context, tmp_path, "ranking", [{"article": "Python", "ranking": OTHER}], name="same")


def test_normalize_url() -> None:
    assert url_key("HTTPS://www.Example.org/а/") == url_key("http://example.org/%D0%B0#x")
    assert url_key("https://example.org/a?b=1") != url_key("https://example.org/a?b=2")
    assert url_key("https://example.org:8080/a") != url_key("https://example.org/a")


def test_sections_with_article_units(context, dataset, tmp_path) -> None:
    context.config.options(
        SectionsConfig
    ).unit = "article"  # one unit per article: a missing section fails the whole unit
    moscow = dataset.article("Москва")
    rows = [{"article": "Москва", "section": s, "text": moscow.section(s).text()} for s in ("s1", "s2", "s3")]
    rows.append({"article": "Python", "section": "s1", "text": "Python — язык программирования."})
    rundir, results, metrics = _score(context, tmp_path, "sections", rows)
    assert {r["item"] for r in results if r["article"] == "Москва" and not r["excluded"]} == {
        "s1",
        "s2",
        "s3",
    }
    assert (
        metrics["sections"]["counts"]["failed_units"] == 2
    )  # Python (s2 missing) and Сколково, one unit each
    assert _mean(metrics, "sections", "f1") == pytest.approx(1.0)
    errors = read_jsonl(rundir.file("errors.jsonl"))
    assert any(
        e["article"] == "Python" and e["unit"] == "article" and "section s2" in e["reason"] for e in errors
    )


def test_article_sources_by_snippet_id_and_unresolved_markers(context, tmp_path) -> None:
    markdown = (
        "Москва — столица.[1]\n\n# История\n\nМосква упомянута в 1147 году.[2][7]\n\n## Основание\n\n"
        "Юрий Долгорукий.[1]"
    )  # '#' sections (as STORM writes them): levels shifted to 2 and 3
    rows = [
        {"article": "Москва", "markdown": markdown, "sources": {"1": "Москва/src0#1", "2": "Москва/src1"}}
    ]
    rundir, results, _ = _score(context, tmp_path, "writer", rows, article_names=["Москва"])
    article = next(r for r in results if r["stage"] == "writer")
    assert article["info"]["matched_by"] == {"1": "snippet_id", "2": "source_id"}
    assert article["metrics"]["markers_unresolved"] == 1  # [7] is not in the sources map
    assert article["metrics"]["cited_own_share"] == pytest.approx(1.0)
    assert article["metrics"]["source_recall"] == pytest.approx(3 / 6)  # one snippet + the two of src1
    outputs = read_jsonl(rundir.file("outputs.jsonl"))
    written = outputs[0]["output"]["written"]
    assert written["lead"] == "Москва — столица.[1]"
    assert [(s["level"], s["title"]) for s in written["sections"]] == [(2, "История"), (3, "Основание")]


def test_a_scoring_error_fails_the_article_and_the_run_goes_on(context, tmp_path) -> None:
    class Broken:
        id = "broken"

        def embed(self, texts, use="symmetric"):
            raise RuntimeError("embedder down")

    context.embedder = Broken()
    rows = [{"article": "Москва", "markdown": "# Москва\n\nТекст.[1]", "sources": {"1": "Москва/src0"}}]
    rundir, results, metrics = _score(context, tmp_path, "writer", rows, article_names=["Москва"])
    errors = read_jsonl(rundir.file("errors.jsonl"))
    assert [(e["stage"], e["reason"]) for e in errors] == [
        (stage, "score: RuntimeError: embedder down") for stage in ("outline", "sections", "writer")
    ]
    assert results == [] and metrics["writer"]["counts"]["failed_units"] == 1


def test_an_external_run_without_format_version_scores_again(context, tmp_path) -> None:
    """spec.json of an external run written before format_version existed: re-scored from its copy of the
    outputs and scored again from the same file (the check against the old spec passes)."""
    import json

    from ruwikibench.external.score import rescore_external

    rows = [{"article": "Москва", "ranking": MOSCOW}]
    rundir, first, metrics = _score(context, tmp_path, "ranking", rows, name="old")
    old = {k: v for k, v in rundir.read_json("spec.json").items() if k != "format_version"}
    rundir.file("spec.json").write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    rescore_external(rundir, context, str(tmp_path / "data"))
    assert read_jsonl(rundir.file("results.jsonl")) == first and rundir.read_json("metrics.json") == metrics
    assert rundir.read_json("spec.json")["format_version"] == 1  # scoring again writes the current format
    rundir.file("spec.json").write_text(json.dumps(old, ensure_ascii=False), encoding="utf-8")
    _, again, _ = _score(context, tmp_path, "ranking", rows, name="old")
    assert again == first
