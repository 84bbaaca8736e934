"""A hand-made STORM output directory (the layout of knowledge-storm's STORMWikiRunner) with Russian text."""

from __future__ import annotations

import json
from pathlib import Path

from ruwikibench.dataset import Dataset
from tests.graphs.writer_fixture import make_dataset

LONG_TITLE = "Инновационный центр Сколково"

OUTLINE = "# История\n## Основание\n# География\n# Экономика"
POLISHED = """# summary

Москва — столица России, крупнейший город страны.[1][2]

# История

Москва впервые упомянута в летописи в 1147 году.[1]

## Основание

Основание Москвы связывают с князем Юрием Долгоруким.[1][3]

# География

Москва стоит на реке Москве, климат умеренно континентальный.[2]"""
MOSCOW_DRAFT = POLISHED.split("\n\n", 2)[
    2
]  # the draft: the polished body before the lead was added (same numbers)
DRAFT = """# Центр

Сколково — инновационный центр под Москвой, где работают стартапы.[1]

# Экономика

Экономика центра держится на венчурных инвестициях.[2]"""


def storm_dataset() -> Dataset:
    """The writer fixture's dataset with one title of several words (STORM folders replace spaces by '_')."""
    dataset = make_dataset()
    dataset.articles[2].title = LONG_TITLE
    return dataset


def _info(urls: list[str]) -> dict:
    return {
        "url_to_unified_index": {url: n for n, url in enumerate(urls, start=1)},
        "url_to_info": {
            url: {
                "url": url,
                "description": "",
                "snippets": ["фрагмент"],
                "title": "Страница",
                "meta": {"query": "запрос"},
                "citation_uuid": -1,
            }
            for url in urls
        },
    }


def make_storm_dir(root: Path) -> Path:
    moscow = root / "Москва"
    moscow.mkdir(parents=True)
    (moscow / "storm_gen_outline.txt").write_text(OUTLINE, encoding="utf-8")
    (moscow / "direct_gen_outline.txt").write_text("# История", encoding="utf-8")
    (moscow / "storm_gen_article.txt").write_text(MOSCOW_DRAFT, encoding="utf-8")
    (moscow / "storm_gen_article_polished.txt").write_text(POLISHED, encoding="utf-8")
    urls = ["https://example.org/0/0", "https://www.example.org/0/1/", "https://ru.wikipedia.org/wiki/Москва"]
    (moscow / "url_to_info.json").write_text(json.dumps(_info(urls), ensure_ascii=False, indent=2), "utf-8")
    skolkovo = root / LONG_TITLE.replace(" ", "_")
    skolkovo.mkdir()
    (skolkovo / "storm_gen_outline.txt").write_text("# Центр\n# Экономика", encoding="utf-8")
    (skolkovo / "storm_gen_article.txt").write_text(DRAFT, encoding="utf-8")
    (skolkovo / "url_to_info.json").write_text(
        json.dumps(_info(["https://example.org/2/0", "http://example.org/2/1"])), encoding="utf-8"
    )
    return root
