"""Content-free and one-word sections never sit above a real section of the wrong article on the metrics the
vs-baseline verdict reads (F1, rescaled F1, ROUGE-L, BLEU, entity recall): planted on the 8 real sample
articles, scored with e5-int8 (``configs/local.yaml``'s embedder) as a run is (``rescore``: records, floors,
baselines, metrics).

Before the fix a section "." scored F1 80.0, rescaled −0.1 (its floor was "." against other references: the
same chance level), above the wrong article's rescaled −4.4; one word (the article title's first) scored F1
82.6, rescaled +16.1 and entity recall 4.8 — above the wrong article on F1, rescaled F1 and entity recall."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from ruwikibench.conf.config import EmbedderConfig, RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.rescore import rescore
from ruwikibench.runner.stage import get_stage
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.rundir import RunDir
from tests.e5_int8 import require_e5_int8
from tests.sample import sample_dataset_or_skip

VERDICT_METRICS = ("f1", "f1_rescaled", "rouge_l", "bleu", "entity_recall")


@lru_cache(maxsize=1)
def _context() -> StageContext:
    from ruwikibench.models.embeddings import make_embedder

    config = RunConfig(
        name="planted",
        models={"writer": {"name": "fake"}},
        embedder=EmbedderConfig(kind="e5-int8", max_tokens=512),
    )
    return StageContext(
        config=config,
        llm=None,
        embedder=make_embedder(config.embedder),  # in memory: shared by the planted runs
        prompts=PromptLibrary(),
        dataset=sample_dataset_or_skip(),
    )


def _wrong_texts(dataset: Dataset) -> dict[tuple[str, str], str]:
    """Each section's planted wrong answer: a section text of the next article (by position)."""
    texts = [[s.text() for s in a.sections() if s.text().strip()] for a in dataset.articles]
    wrong = {}
    for index, article in enumerate(dataset.articles):
        other = texts[(index + 1) % len(texts)]
        for position, section in enumerate(article.sections()):
            wrong[(article.name, section.id)] = other[position % len(other)]
    return wrong


def _planted(tmp_path: Any, name: str, text_of: Any) -> dict[str, float]:
    """The planted run's failures-excluded means, by metric key (absent: the run has no such estimate)."""
    context = _context()
    dataset = context.dataset
    assert dataset is not None
    stage = get_stage("sections")
    rundir = RunDir(tmp_path / name)
    rundir.create()
    for article in dataset.articles:
        for unit in stage.units(dataset, article, context.config):
            results = [
                {
                    "id": spec["id"],
                    "title": spec["title"],
                    "level": spec["level"],
                    "text": text_of(unit.article, spec["id"]),
                    "status": "ok" if spec["snippets"] else "no_snippets",
                    "snippets_total": len(spec["snippets"]),
                    "snippet_ids": [s["id"] for s in spec["snippets"]],
                    "groups": [],
                    "calls": 0,
                }
                for spec in unit.input["sections"]
            ]
            rundir.append(
                "outputs.jsonl",
                {
                    "stage": "sections",
                    "article": unit.article,
                    "unit": unit.unit_id,
                    "input": unit.input,
                    "output": {"article": unit.input["article"], "results": results},
                },
            )
    metrics = rescore(rundir, context)["sections"]["metrics"]
    means = {key: metrics[key]["failures_excluded"]["mean"] for key in VERDICT_METRICS if key in metrics}
    return {key: value for key, value in means.items() if not math.isnan(value)}


def test_dot_empty_and_one_word_sections_sit_below_a_wrong_article_section(tmp_path: Any) -> None:
    require_e5_int8()
    dataset = _context().dataset
    assert dataset is not None
    wrong_texts = _wrong_texts(dataset)
    titles = {a.name: a.title.split()[0].strip("(),") for a in dataset.articles}
    wrong = _planted(tmp_path, "wrong", lambda article, item: wrong_texts[(article, item)])
    assert set(wrong) == set(VERDICT_METRICS)
    planted = {
        "dot": _planted(tmp_path, "dot", lambda article, item: "."),
        "empty": _planted(tmp_path, "empty", lambda article, item: ""),
        "one word": _planted(tmp_path, "word", lambda article, item: f"{titles[article]}."),
    }
    for name, means in planted.items():
        print(name, {k: round(100 * v, 2) for k, v in means.items()}, "wrong", wrong)
        above = {k: (v, wrong[k]) for k, v in means.items() if v >= wrong[k]}
        assert not above, f"{name} sits at or above the wrong article: {above}"
    # "." scores as empty: raw 0 and no floor of its own, hence no rescaled figure to stand above anything
    assert (
        planted["dot"] == planted["empty"] == {"f1": 0.0, "rouge_l": 0.0, "bleu": 0.0, "entity_recall": 0.0}
    )
    assert planted["one word"]["f1_rescaled"] < -1.0  # far below chance, near the empty output's −b/(1−b)
