"""corpus_builder: saved article HTML -> Article, RuWikiBench JSON import/export, filters, snippets, store,
stats.

The names below are imported from their modules on first use (PEP 562): reading a processed dataset
(:mod:`~ruwikibench.corpus_builder.store`, what every run does before its first request) loads neither lxml
nor the import and statistics code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ruwikibench.corpus_builder.filters import (
        MIN_SOURCE_CHARS,
        FilterReport,
        filter_article,
        filter_sources,
    )
    from ruwikibench.corpus_builder.html_parser import NoArticleBody, decode_gateway_href, parse_article_html
    from ruwikibench.corpus_builder.ruwikibench_json import (
        CorpusError,
        ImportParams,
        ImportResult,
        export_ruwikibench_json,
        import_records,
        import_ruwikibench_json,
    )
    from ruwikibench.corpus_builder.snippets import make_snippets
    from ruwikibench.corpus_builder.stats import DatasetStats, dataset_stats
    from ruwikibench.corpus_builder.store import DatasetStoreError, load_dataset, save_dataset

_MODULES = {
    "filters": ("MIN_SOURCE_CHARS", "FilterReport", "filter_article", "filter_sources"),
    "html_parser": ("NoArticleBody", "decode_gateway_href", "parse_article_html"),
    "ruwikibench_json": (
        "CorpusError",
        "ImportParams",
        "ImportResult",
        "export_ruwikibench_json",
        "import_records",
        "import_ruwikibench_json",
    ),
    "snippets": ("make_snippets",),
    "stats": ("DatasetStats", "dataset_stats"),
    "store": ("DatasetStoreError", "load_dataset", "save_dataset"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "MIN_SOURCE_CHARS",
    "CorpusError",
    "DatasetStats",
    "DatasetStoreError",
    "FilterReport",
    "ImportParams",
    "ImportResult",
    "NoArticleBody",
    "dataset_stats",
    "decode_gateway_href",
    "export_ruwikibench_json",
    "filter_article",
    "filter_sources",
    "import_records",
    "import_ruwikibench_json",
    "load_dataset",
    "make_snippets",
    "parse_article_html",
    "save_dataset",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
