"""bench/metric_probes.py on the real sample with a bag-of-words embedder: every declared metric of both
stages gets a row, the planted variants land where they must (an order-blind metric scores the shuffled,
flattened outline and the reversed section exactly as the reference), and the copies leave their floors."""

from __future__ import annotations

import pytest

from bench.metric_probes import Measured, outline_probes, section_probes, shown
from ruwikibench.conf.config import RunConfig
from ruwikibench.prompts import PromptLibrary
from ruwikibench.stage.context import StageContext
from ruwikibench.stage.registry import get_stage
from tests.graphs.writer_fixture import HashEmbedder
from tests.sample import sample_dataset_or_skip


@pytest.fixture(scope="module")
def context() -> StageContext:
    return StageContext(
        config=RunConfig(models={}),
        llm=None,  # type: ignore[arg-type]
        embedder=HashEmbedder(),  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=sample_dataset_or_skip(),
    )


def _mean(measured: Measured, key: str) -> float:
    return float(measured.metrics[key]["failures_excluded"]["mean"])


def test_outline_probes(context: StageContext, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path))
    assert context.dataset is not None
    probes = outline_probes(context.dataset, context, 8)
    assert {"reference", "shuffled + flat", "+10 junk", "other article", "baseline: template"} <= set(probes)
    measured = {name: Measured("outline", probes[name], context) for name in probes}
    declared = {key for _, key in shown(get_stage("outline").metrics)}
    assert declared <= set(measured["reference"].metrics)  # every ranking metric, floored ones rescaled too
    flat = measured["shuffled + flat"]
    assert _mean(flat, "f1") == pytest.approx(_mean(measured["reference"], "f1"))
    junk = measured["+10 junk"]
    assert _mean(junk, "precision") < _mean(junk, "recall") == pytest.approx(1.0)
    copy = measured["other article"]
    assert len(copy.copying) == len(probes["other article"])  # every copy left its own floor
    assert all(
        row[3] == "0" for name, m in measured.items() if name != "other article" for row in [m.copy_row(name)]
    )


def test_section_probes(context: StageContext, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RUWIKIBENCH_CACHE", str(tmp_path))
    assert context.dataset is not None
    probes = section_probes(context.dataset, context, 1)
    measured = {
        name: Measured("sections", probes[name], context) for name in ("reference", "reordered", '"."')
    }
    declared = {key for _, key in shown(get_stage("sections").metrics)}
    assert declared - {"entity_precision"} <= set(measured["reference"].metrics)
    reordered, reference = measured["reordered"], measured["reference"]
    assert _mean(reordered, "f1") == pytest.approx(_mean(reference, "f1"))  # embedding F1 is order-blind
    assert _mean(reordered, "rouge_l") < _mean(reference, "rouge_l")  # ROUGE-L is not
    assert _mean(measured['"."'], "bleu") == pytest.approx(0.0, abs=1e-9)
