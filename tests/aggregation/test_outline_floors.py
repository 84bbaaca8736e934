"""The outline floor sees exactly the headings the scorer keeps: an outline whose only heading repeats the
article title is scored as empty (title echoes are dropped), so it must be floored as empty too."""

import hashlib

import numpy as np
import pytest

from ruwikibench.aggregation.floors import stage_floors
from ruwikibench.aggregation.metrics import aggregate
from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Article, Dataset, Section
from ruwikibench.prompts import PromptLibrary
from ruwikibench.runner.stage import Unit, get_stage
from ruwikibench.stage.context import StageContext

OUTLINES = {
    "Альфа": ["История", "Устройство", "Применение"],
    "Бета": ["Биография", "Творчество", "Память"],
    "Гамма": ["География", "Климат", "Население"],
}


class DigestEmbedder:
    """A fixed pseudo-random unit vector per text (its digest seeds the generator)."""

    id = "digest"

    def embed(self, texts: list[str], use: str = "symmetric") -> np.ndarray:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            row = np.random.default_rng(seed).normal(size=16)
            rows.append(row / np.linalg.norm(row))
        return np.array(rows, dtype=np.float32).reshape(len(texts), 16)


def _article(title: str, headings: list[str]) -> Article:
    children = [Section(id=f"{title}{i}", level=2, title=h) for i, h in enumerate(headings)]
    return Article(title=title, name=title, root=Section(id=title, level=1, title=title, children=children))


def _context() -> StageContext:
    dataset = Dataset(articles=[_article(t, h) for t, h in OUTLINES.items()], sources=[], snippets=[])
    return StageContext(
        config=RunConfig(models={}),
        llm=None,  # type: ignore[arg-type]
        embedder=DigestEmbedder(),  # type: ignore[arg-type]
        prompts=PromptLibrary(),
        dataset=dataset,
    )


def _saved(title: str, headings: list[str]) -> dict:
    snippet = {"id": f"{title}/s#0", "source_id": f"{title}/s", "index": 0, "text": "текст"}
    return {
        "stage": "outline",
        "article": title,
        "unit": "article",
        "input": {"title": title, "snippets": [snippet], "headings": OUTLINES[title]},
        "output": {"outline": [{"level": 2, "title": h} for h in headings]},
    }


def _metrics(planted: list[str]) -> tuple[list[dict], dict]:
    """Floor rows and aggregated outline metrics of a run whose Гамма outline is ``planted``."""
    context = _context()
    stage = get_stage("outline")
    saved = [
        _saved("Альфа", ["История", "Устройство"]),
        _saved("Бета", ["Биография", "Наследие", "Критика"]),
        _saved("Гамма", planted),
    ]
    records = []
    for row in saved:
        unit = Unit(stage="outline", article=row["article"], unit_id=row["unit"], input=row["input"])
        records += [
            r.model_dump(mode="json") for r in stage.checked_score(unit, row["output"], context).records
        ]
    floors = stage_floors(stage, saved, context)
    return floors, aggregate(records, [], floors)["outline"]["metrics"]


def test_title_echo_outline_is_floored_as_empty() -> None:
    echo_floors, echo = _metrics(["Гамма", "  гамма "])
    empty_floors, empty = _metrics([])
    assert [r["article"] for r in echo_floors] == [r["article"] for r in empty_floors] == ["Альфа", "Бета"]
    for key in ("f1", "f1_floor", "f1_rescaled", "recall_rescaled", "soft_recall_rescaled"):
        view = "failures_excluded"
        assert echo[key][view]["mean"] == pytest.approx(empty[key][view]["mean"]), key


def test_floor_side_carries_the_levels_structure_f1_reads() -> None:
    """The floor scores an outline with its levels as written (structure F1 reads them); a side without
    levels is scored as one flat level, as the written outline of a writer run is parsed back from '#'s."""
    from ruwikibench.evaluators.outline import outline_similarity
    from ruwikibench.writer.floors import outline_side

    context, stage = _context(), get_stage("outline")
    saved = _saved("Альфа", ["История", "Устройство"])
    saved["output"]["outline"] = [{"level": 1, "title": "История"}, {"level": 2, "title": "Устройство"}]
    unit = Unit(stage="outline", article="Альфа", unit_id="article", input=saved["input"])
    [side] = stage.floor_sides(unit, saved["output"], context)
    assert side.generated == ("Альфа", ["История", "Устройство"], [1, 2])
    assert context.dataset is not None
    nested = stage.cross_score(side.generated, "Альфа", context)
    flat = stage.cross_score(side.generated[:2], "Альфа", context)
    embedder, reference = context.embedder, context.dataset.article("Альфа")
    expected = outline_similarity(["История", "Устройство"], "Альфа", reference, embedder, levels=[1, 2])
    assert nested["structure_f1"] == pytest.approx(expected.metrics["structure_f1"])
    # the reference is flat: «Устройство» one level down is misplaced, both flat are in place (2·2 / 5)
    assert (nested["structure_f1"], flat["structure_f1"]) == pytest.approx((2 / 5, 4 / 5))
    written = {"article": "Альфа", "item": "article", "text": "# Альфа\n\n## История\n### Устройство\n"}
    written_side = outline_side(written, context)
    assert written_side is not None
    assert written_side.generated == ("Альфа", ["История", "Устройство"], [2, 3])


def test_a_written_outline_of_title_echoes_has_no_floor_side() -> None:
    """A writer run's outline whose only heading repeats the title is floored as empty, like the stage's."""
    from ruwikibench.writer.floors import outline_side

    context = _context()
    echo = {"article": "Гамма", "item": "article", "text": "# Гамма\n\n## Гамма\n##  гамма \n"}
    assert outline_side(echo, context) is None
    kept = {"article": "Гамма", "item": "article", "text": "# Гамма\n\n## Гамма\n## Климат\n"}
    side = outline_side(kept, context)
    assert side is not None and side.generated == ("Гамма", ["Гамма", "Климат"], [2, 2])
