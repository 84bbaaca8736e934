"""Work a run can do ahead of time: snippet embeddings (``ruwikibench corpus embed``) and the BM25 index.

Both land in the config's cache folder (``<cache_dir>/embeddings.sqlite``, ``<cache_dir>/bm25/``), where runs,
``score``, ``write`` and the judges find them, so a benchmark run starts sending requests within seconds.
"""

from __future__ import annotations

from collections.abc import Callable

from ruwikibench.conf.builtin_options import RankingConfig
from ruwikibench.conf.config import RunConfig
from ruwikibench.dataset import Dataset, Snippet
from ruwikibench.models.embeddings import Embedder


def snippets_to_embed(dataset: Dataset, articles: list[str] | None = None) -> list[Snippet]:
    """The snippets the outline and sections stages embed: those of the articles' own sources (all articles
    when none are named), each once, in dataset order."""
    names = articles if articles is not None else [a.name for a in dataset.articles]
    seen: set[str] = set()
    out: list[Snippet] = []
    for name in names:
        for snippet in dataset.snippets_of(dataset.article(name).name):
            if snippet.id not in seen:
                seen.add(snippet.id)
                out.append(snippet)
    return out


def embed_snippets(
    embedder: Embedder, snippets: list[Snippet], batch: int = 32, advance: Callable[[int], None] | None = None
) -> int:
    """Embed snippet texts as passages (the one mode both stages use) in batches; returns how many texts the
    model actually embedded (the rest came from the disk cache)."""
    before = getattr(embedder, "embedded", 0)
    for start in range(0, len(snippets), batch):
        chunk = snippets[start : start + batch]
        embedder.embed([s.text for s in chunk], "passage")
        if advance is not None:
            advance(len(chunk))
    return int(getattr(embedder, "embedded", 0)) - int(before)


def build_bm25(dataset: Dataset, config: RunConfig) -> int:
    """Build (or load) the dataset's BM25 index into the cache folder; returns the number of documents."""
    from ruwikibench.retrieval.bm25 import get_index

    return len(get_index(dataset, config.options(RankingConfig).normalizer, config.cache_path))
