"""corpus_builder: saved article HTML -> Article, RuWikiBench JSON import/export, filters, snippets, store, stats."""

from ruwikibench.corpus_builder.filters import MIN_SOURCE_CHARS, FilterReport, filter_article, filter_sources
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
