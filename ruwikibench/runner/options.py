"""A run's options (``ruwikibench run``'s flags) and the articles they select."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field

from ruwikibench.conf.config import RunInputError
from ruwikibench.dataset import Article, Dataset
from ruwikibench.runner.score_process import ScoreIn
from ruwikibench.runner.shard import Shard
from ruwikibench.stage.contract import current_stage_name
from ruwikibench.stage.registry import default_stage_names


class RunOptions(BaseModel):
    stages: list[Annotated[str, AfterValidator(current_stage_name)]] = Field(
        default_factory=default_stage_names
    )
    articles: int | None = Field(default=None, description="first N articles of the dataset")
    article_names: list[str] | None = None
    out: Path = Path("runs")
    run_id: str | None = None
    retries: int = Field(default=1, description="extra attempts for a failed unit")
    unit_timeout: float | None = Field(default=None, description="seconds per unit attempt")
    progress: bool = True
    shard: Shard | None = Field(
        default=None, description="run only this share of the articles (not in the run id)"
    )
    score_in: ScoreIn = Field(
        default="auto",
        description="where units are scored: 'process' (a process of its own, "
        "on another core), 'thread' (this process), 'auto' (a process when the run has "
        "enough units and the machine two cores; runner/score_process.py)",
    )


class UnknownArticle(RunInputError, KeyError):
    """--article names an article the dataset does not hold."""

    __str__ = BaseException.__str__  # one plain line, not KeyError's quoted repr


def select_articles(dataset: Dataset, options: RunOptions) -> list[Article]:
    """The articles a run covers (``--article`` names, then the first ``--articles`` N); bad values are
    :class:`RunInputError`."""
    if options.articles is not None and options.articles < 1:
        raise RunInputError(f"--articles {options.articles}: the number of articles must be at least 1")
    articles = dataset.articles
    if options.article_names:
        known = {a.name for a in articles} | {a.title for a in articles}
        for name in options.article_names:
            if name not in known:
                sample = ", ".join(repr(a.title) for a in articles[:5])
                raise UnknownArticle(
                    f"--article {name!r}: no such article (name or title) in the dataset "
                    f"({len(articles)} articles, e.g. {sample})"
                )
        articles = [dataset.article(name) for name in options.article_names]
    if options.articles is not None:
        articles = articles[: options.articles]
    if options.shard is not None:
        articles = [a for a in articles if options.shard.holds(a.name)]
    return articles
