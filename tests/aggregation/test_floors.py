"""The run's permutation floor end to end on a hand-computed case: stage scores, floors.jsonl rows,
metrics.json keys, report columns; and the failures-as-zero view zeroing only what failed."""

import numpy as np
import pytest

from ruwikibench.aggregation.derived import compute_floors
from ruwikibench.aggregation.floors import stage_floors
from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.conf.config import RunConfig
from ruwikibench.prompts import PromptLibrary
from ruwikibench.reporting.tables import stage_table
from ruwikibench.runner.stage import Unit, get_stage
from ruwikibench.stage.context import StageContext
from ruwikibench.storage.results import StageMetrics
from ruwikibench.storage.rundir import RunDir

# one sentence per text; the vectors make every cosine a round number
VECTORS = {"Икс.": (1.0, 0.0), "Игрек.": (0.8, 0.6), "Зет.": (0.0, 1.0), "Дубль.": (0.6, 0.8)}


class TableEmbedder:
    id = "table"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        self.calls += texts
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def _context(embedder: TableEmbedder) -> StageContext:
    config = RunConfig(name="t", models={"writer": {"name": "fake"}})
    return StageContext(config=config, llm=None, embedder=embedder, prompts=PromptLibrary())  # type: ignore[arg-type]


def _saved(article: str, section: str, text: str, reference: str) -> dict:
    spec = {
        "id": section,
        "title": section,
        "level": 2,
        "snippets": [{"id": "x", "text": "t", "source_id": "s"}],
        "reference": reference,
    }
    result = {
        "id": section,
        "title": section,
        "level": 2,
        "text": text,
        "status": "ok",
        "snippets_total": 1,
        "snippet_ids": ["x"],
        "groups": [],
        "calls": 1,
    }
    return {
        "stage": "sections",
        "article": article,
        "unit": section,
        "input": {"article": article, "sections": [spec]},
        "output": {"article": article, "results": [result]},
    }


SAVED = [_saved("A", "s1", "Икс.", "Игрек."), _saved("B", "t1", "Зет.", "Дубль.")]


def _scores(context: StageContext) -> list[dict]:
    stage = get_stage("sections")
    records = []
    for saved in SAVED:
        unit = Unit(stage="sections", article=saved["article"], unit_id=saved["unit"], input=saved["input"])
        records += [
            r.model_dump(mode="json") for r in stage.checked_score(unit, saved["output"], context).records
        ]
    return records


def test_sections_floor_and_rescaled_by_hand(tmp_path) -> None:
    context = _context(TableEmbedder())
    records = _scores(context)
    assert [r["metrics"]["f1"] for r in records] == pytest.approx(
        [0.8, 0.8]
    )  # cos(Икс, Игрек), cos(Зет, Дубль)
    rows = stage_floors(get_stage("sections"), SAVED, context)
    # A's text against B's reference: cos(Икс, Дубль) = 0.6; B's text against A's: cos(Зет, Игрек) = 0.6
    assert [(r["article"], r["against"]) for r in rows] == [("A", ["B/t1"]), ("B", ["A/s1"])]
    assert [r["metrics"]["f1"] for r in rows] == pytest.approx([0.6, 0.6])
    metrics = aggregate(records, [], rows)["sections"]
    assert metrics["metrics"]["f1_floor"]["failures_excluded"]["mean"] == pytest.approx(0.6)
    assert metrics["metrics"]["f1_rescaled"]["failures_excluded"]["mean"] == pytest.approx((0.8 - 0.6) / 0.4)
    assert metrics["floor"]["pairs"] == 2 and metrics["floor"]["seed"] == 0
    # a failed section: raw 0 in the failures-as-zero view, rescaled accordingly, the floor untouched
    failed = aggregate(
        records, [{"stage": "sections", "article": "B", "unit": "t2", "reason": "Boom: x"}], rows
    )
    view = failed["sections"]["metrics"]
    assert view["f1"]["failures_as_zero"]["mean"] == pytest.approx(1.6 / 3)
    assert view["f1_rescaled"]["failures_as_zero"]["mean"] == pytest.approx((1.6 / 3 - 0.6) / 0.4)
    assert view["f1_floor"]["failures_as_zero"]["mean"] == pytest.approx(0.6)

    table = stage_table("sections", [("run", StageMetrics.model_validate(metrics))])
    header = table[0]
    assert header[1:4] == ["Mean F1", "Mean F1 floor", "Mean F1 rescaled"]
    assert table[1][1:4] == ["80.00 [80.00, 80.00]", "60.00 [60.00, 60.00]", "50.00 [50.00, 50.00]"]
    assert header[-3:] == ["scored", "excluded", "failed"]

    rundir = RunDir(tmp_path)
    rundir.create()
    for saved in SAVED:
        rundir.append("outputs.jsonl", saved)
    assert compute_floors(rundir, context) == rows and list(rundir.read("floors.jsonl")) == rows


def test_floor_reuses_the_embeddings_of_the_metric() -> None:
    from ruwikibench.models.cache import EmbeddingCache
    from ruwikibench.models.embeddings import CachedEmbedder

    inner = TableEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(None))
    context = _context(cached)  # type: ignore[arg-type]
    _scores(context)
    embedded = len(inner.calls)
    stage_floors(get_stage("sections"), SAVED, context)
    assert embedded == 4 and len(inner.calls) == embedded  # every floor pair is answered from the cache


def test_failures_as_zero_zeroes_only_what_failed() -> None:
    ok = {
        "stage": "ranking",
        "article": "A",
        "item": "article",
        "metrics": {
            "bm25_ndcg": 0.5,
            "bm25_r_precision": 0.5,
            "pool_recall": 0.4,
            "rerank_ndcg": 0.9,
            "rerank_r_precision": 1.0,
        },
    }
    rerank = {"stage": "ranking", "article": "B", "unit": "article", "reason": "RerankFailed: all 3 failed"}
    other = {"stage": "ranking", "article": "C", "unit": "article", "reason": "TimeoutError: x"}
    metrics = aggregate([ok], [rerank, other])["ranking"]
    zero = {k: v["failures_as_zero"] for k, v in metrics["metrics"].items()}
    assert zero["rerank_ndcg"]["mean"] == pytest.approx(0.3) and zero["rerank_ndcg"]["n"] == 3
    assert zero["bm25_ndcg"]["mean"] == pytest.approx(0.25) and zero["bm25_ndcg"]["n"] == 2
    assert zero["pool_recall"]["n"] == 2
    assert metrics["counts"]["zeroed"] == {
        "bm25_ndcg": 1,
        "bm25_r_precision": 1,
        "pool_recall": 1,
        "rerank_ndcg": 2,
        "rerank_r_precision": 2,
    }
    assert metrics["counts"]["evaluated"] == 1 and metrics["counts"]["failed_units"] == 2
    rows = stage_table("ranking", [("run", StageMetrics.model_validate(metrics))], "failures_as_zero")
    assert rows[0][-4:] == ["scored", "excluded", "failed", "zeroed"]
    zeroed = "1 in BM25 NDCG, 1 in BM25 R-Pr, 2 in Rerank NDCG, 2 in Rerank R-Pr, 1 in Pool recall"
    assert rows[1][-4:] == ["1", "0", "2", zeroed]


class HashEmbedder:
    """A vector per text from its hash: every pair has its own cosine (so a changed draw shows in the
    floor)."""

    id = "hash"

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        rows = [np.random.default_rng(abs(hash(t)) % 2**32).normal(size=16) for t in texts]
        return np.array([r / np.linalg.norm(r) for r in rows], dtype=np.float32)


def _many(articles: list[str]) -> list[dict]:
    return [_saved(a, f"{a}-s{i}", f"Текст {a} {i}.", f"Эталон {a} {i}.") for a in articles for i in range(4)]


def _item_floors(tmp_path, name: str, saved: list[dict]) -> dict[str, tuple[float, list[str]]]:
    rundir = RunDir(tmp_path / name)
    rundir.create()
    for record in saved:
        rundir.append("outputs.jsonl", record)
    rows = compute_floors(rundir, _context(HashEmbedder()))  # type: ignore[arg-type]
    return {f"{r['article']}/{r['item']}": (r["metrics"]["f1"], r["against"]) for r in rows}


def test_item_floors_ignore_finishing_order_and_unrelated_articles(tmp_path) -> None:
    """outputs.jsonl reversed gives the same item floors; with an article added, every item keeps its floor
    unless the new article's sections rank into its draw (then only those references change)."""
    saved = _many(list("ABCDEFGHIJ"))  # 40 sections, 36 candidates of other articles each, 8 drawn
    first = _item_floors(tmp_path, "first", saved)
    assert _item_floors(tmp_path, "reversed", list(reversed(saved))) == first
    grown = _item_floors(tmp_path, "grown", saved + _many(["NEW"]))
    kept = [
        key
        for key, (_, against) in grown.items()
        if not key.startswith("NEW/") and not any(a.startswith("NEW/") for a in against)
    ]
    assert kept and all(grown[key] == first[key] for key in kept)
    assert len(kept) < len(first)  # the new article did enter some draws: the test is not vacuous
