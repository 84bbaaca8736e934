"""BM25 on the real 8-article sample (skipped when the sample is absent)."""

import pytest

from ruwikibench.conf.config import RunConfig
from ruwikibench.evaluators.ranking import ranking_metrics
from ruwikibench.graphs.ranking import pool_size
from ruwikibench.retrieval import BM25Index
from tests.sample import sample_dataset_or_skip


@pytest.fixture(scope="module")
def dataset():
    return sample_dataset_or_skip()


def test_title_queries_find_each_articles_own_snippets(dataset) -> None:
    """With the bare title, every article's own snippets dominate the top of its pool (stems: fast build)."""
    index = BM25Index.build(dataset, "stem")
    config = RunConfig(models={})
    for article in dataset.articles:
        hits = index.search(article.title, pool_size(dataset, article, config))
        assert 0 < len(hits) <= min(len(dataset.snippets), 3 * len(dataset.snippets_of(article.name)))
        labels = [int(dataset.snippet(h.snippet_id).article == article.name) for h in hits]
        metrics = ranking_metrics(labels, None, len(dataset.snippets_of(article.name)))
        assert metrics["bm25_r_precision"] >= 0.7, article.name
        assert metrics["bm25_ndcg"] >= 0.9, article.name
